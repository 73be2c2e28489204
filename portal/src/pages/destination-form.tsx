import { useState } from 'preact/hooks'
import { api, ApiError, tenantPath } from '../api.js'
import { FieldInput, type FieldValues } from '../components/fields.js'
import { Markdown } from '../components/markdown.js'
import { announce, ErrorBox } from '../components/notice.js'
import { TypeIcon } from '../components/type-icon.js'
import { destinationTypes, typeOf } from '../data.js'
import { href, navigate } from '../router.js'
import { createBody, formFields, formProblems, initialState, keepsSecret, updateBody, type FormState } from '../destination-body.js'
import type { Destination, DestinationType, FieldSpec } from '../types.js'
import { useLoad } from '../use-load.js'
import { PageTitle } from './page-title.js'
import { TopicPicker } from '../components/topic-picker.js'
import { BatchSection, PayloadSection } from '../components/delivery-options.js'

// Create and edit forms, generated from the type's field specs (what they send: destination-body.ts).

export function TypePicker() {
  const types = useLoad(destinationTypes, [])
  return (
    <section aria-labelledby="page-title">
      <PageTitle>New destination</PageTitle>
      <p class="lead">Choose where events should go.</p>
      {types.error && <ErrorBox error={types.error} retry={types.reload} />}
      <ul class="type-grid">
        {types.data?.map((t) => (
          <li key={t.type}>
            <a class="type-card" href={href(['destinations', 'new', t.type])}>
              <TypeIcon type={t} size={32} />
              <span class="strong">{t.label}</span>
              <span class="muted small">{t.description}</span>
            </a>
          </li>
        ))}
      </ul>
    </section>
  )
}

interface FormProps {
  type: DestinationType
  /** Editing this destination; creating when absent. */
  existing?: Destination
}

interface SectionProps {
  title: string
  prefix: 'config' | 'credentials'
  fields: FieldSpec[]
  values: FieldValues
  onChange: (values: FieldValues) => void
  errors: Record<string, string>
  existing?: Destination
}

/** One fieldset: required fields first, the optional ones folded (open when editing or when one has an error). */
function FormSection({ title, prefix, fields, values, onChange, errors, existing }: SectionProps) {
  if (fields.length === 0) return null
  const input = (f: FieldSpec) => (
    <FieldInput
      key={f.key}
      id={`f-${prefix}-${f.key}`}
      field={f}
      value={values[f.key]}
      onChange={(value) => onChange({ ...values, [f.key]: value })}
      error={errors[`${prefix}.${f.key}`]}
      storedHint={prefix === 'credentials' && keepsSecret(f, existing) ? String(existing!.credentials[f.key]) : undefined}
    />
  )
  const optional = fields.filter((f) => !f.required)
  return (
    <fieldset class="form-section">
      <legend>{title}</legend>
      {fields.filter((f) => f.required).map(input)}
      {optional.length > 0 && (
        <details class="optional-fields" open={Boolean(existing) || optional.some((f) => errors[`${prefix}.${f.key}`])}>
          <summary>Optional {title.toLowerCase()}</summary>
          {optional.map(input)}
        </details>
      )}
    </fieldset>
  )
}

function TopicsField({ value, onChange, error }: { value: string; onChange: (value: string) => void; error?: string }) {
  return (
    <fieldset class="form-section">
      <legend>Events</legend>
      <div class="field">
        <label for="f-topics">
          Topics <span class="required">(required)</span>
        </label>
        <input
          id="f-topics"
          type="text"
          value={value}
          onInput={(e) => onChange(e.currentTarget.value)}
          aria-describedby={`f-topics-desc${error ? ' f-topics-error' : ''}`}
          aria-invalid={error ? 'true' : undefined}
          autocomplete="off"
          spellcheck={false}
        />
        <p class="field-desc" id="f-topics-desc">
          Comma-separated topics or patterns such as <code>order.*</code>; <code>*</code> receives every topic.
        </p>
        {error && (
          <p class="field-error" id="f-topics-error">
            {error}
          </p>
        )}
      </div>
      <TopicPicker value={value} onChange={onChange} />
    </fieldset>
  )
}

const inputId = (path: string) => `f-${path.replace('.', '-')}`

function Instructions({ type }: { type: DestinationType }) {
  return (
    <aside class="instructions" aria-labelledby="instructions-title">
      <h2 id="instructions-title">Setting up {type.label}</h2>
      {type.remote_setup_url && (
        <p>
          <a href={type.remote_setup_url} target="_blank" rel="noopener noreferrer">
            Open the setup page
          </a>
        </p>
      )}
      <Markdown text={type.instructions} headingLevel={2} />
    </aside>
  )
}

function DestinationForm({ type, existing }: FormProps) {
  const fields = formFields(type)
  const [state, setState] = useState<FormState>(() => initialState(fields, existing))
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [failure, setFailure] = useState<string>()
  const [saving, setSaving] = useState(false)

  const submit = async (event: Event) => {
    event.preventDefault()
    setFailure(undefined)
    const found = formProblems(fields, state, existing)
    setErrors(found)
    const first = Object.keys(found)[0]
    if (first) return document.getElementById(inputId(first))?.focus()
    setSaving(true)
    try {
      let saved = existing
      if (existing) {
        const body = updateBody(fields, state, existing)
        if (Object.keys(body).length) saved = await api<Destination>('PATCH', tenantPath(`/destinations/${encodeURIComponent(existing.id)}`), body)
      } else {
        saved = await api<Destination>('POST', tenantPath('/destinations'), createBody(type, fields, state))
      }
      announce(existing ? 'Destination saved' : 'Destination created')
      navigate(['destinations', saved!.id])
    } catch (error) {
      setFailure((error as Error).message)
      if (error instanceof ApiError && Object.keys(error.data).length) setErrors(error.data)
    } finally {
      setSaving(false)
    }
  }

  // Problems the engine named for which the form has no input (e.g. `filter`): listed in the summary.
  const unplaced = Object.entries(errors).filter(([path]) => path !== 'topics' && !document.getElementById(inputId(path)))
  const section = (title: string, prefix: 'config' | 'credentials') => (
    <FormSection title={title} prefix={prefix} fields={fields[prefix]} values={state[prefix]} onChange={(values) => setState({ ...state, [prefix]: values })} errors={errors} existing={existing} />
  )
  return (
    <section aria-labelledby="page-title" class="form-page">
      <div class="page-head">
        <div class="with-icon">
          <TypeIcon type={type} size={32} />
          <PageTitle>{existing ? `Edit ${type.label} destination` : `New ${type.label} destination`}</PageTitle>
        </div>
      </div>
      <div class="form-layout">
        <form onSubmit={submit} noValidate aria-describedby={failure ? 'form-failure' : undefined}>
          {failure && (
            <div class="error-box" role="alert" id="form-failure">
              <p>{failure}</p>
              {unplaced.length > 0 && (
                <ul>
                  {unplaced.map(([path, problem]) => (
                    <li key={path}>
                      <code>{path}</code>: {problem}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
          <TopicsField value={state.topics} onChange={(topics) => setState({ ...state, topics })} error={errors.topics} />
          {section('Configuration', 'config')}
          {section('Credentials', 'credentials')}
          <PayloadSection type={type} value={state.payload} onChange={(payload) => setState({ ...state, payload })} errors={errors} />
          <BatchSection type={type} value={state.batch} onChange={(batch) => setState({ ...state, batch })} errors={errors} />
          <div class="actions">
            <a class="button" href={existing ? href(['destinations', existing.id]) : href(['destinations', 'new'])}>
              Cancel
            </a>
            <button type="submit" class="button primary" disabled={saving}>
              {existing ? 'Save changes' : 'Create destination'}
            </button>
          </div>
        </form>
        <Instructions type={type} />
      </div>
    </section>
  )
}

/** A form page that could not open: its title, what went wrong, a way back. */
function Unavailable({ title, error, retry }: { title: string; error: Error; retry?: () => void }) {
  return (
    <section aria-labelledby="page-title">
      <PageTitle>{title}</PageTitle>
      <ErrorBox error={error} retry={retry} />
      <p>
        <a href={href([])}>Back to destinations</a>
      </p>
    </section>
  )
}

export function NewDestinationPage({ typeName }: { typeName: string }) {
  const types = useLoad(destinationTypes, [])
  if (types.error) return <Unavailable title="New destination" error={types.error} retry={types.reload} />
  if (!types.data) return <p class="muted">Loading…</p>
  const type = typeOf(types.data, typeName)
  if (!type) return <Unavailable title="New destination" error={new Error(`Unknown destination type: ${typeName}`)} />
  return <DestinationForm type={type} />
}

export function EditDestinationPage({ id }: { id: string }) {
  const loaded = useLoad(async () => {
    const [destination, types] = await Promise.all([api<Destination>('GET', tenantPath(`/destinations/${encodeURIComponent(id)}`)), destinationTypes()])
    return { destination, type: typeOf(types, destination.type) }
  }, [id])
  if (loaded.error)
    return <Unavailable title="Edit destination" error={loaded.error instanceof ApiError && loaded.error.status === 404 ? new Error(`No destination ${id} here.`) : loaded.error} />
  if (!loaded.data) return <p class="muted">Loading…</p>
  if (!loaded.data.type) return <Unavailable title="Edit destination" error={new Error(`Unknown destination type: ${loaded.data.destination.type}`)} />
  return <DestinationForm type={loaded.data.type} existing={loaded.data.destination} />
}
