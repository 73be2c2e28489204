import { useState } from 'preact/hooks'
import { api, ApiError, tenantPath } from '../api.js'
import { apiValue, fieldProblem, FieldInput, initialValue, type FieldValues } from '../components/fields.js'
import { Markdown } from '../components/markdown.js'
import { announce, ErrorBox } from '../components/notice.js'
import { TypeIcon } from '../components/type-icon.js'
import { destinationTypes, typeOf } from '../data.js'
import { href, navigate } from '../router.js'
import type { Destination, DestinationType, FieldSpec, Json, JsonObject } from '../types.js'
import { useLoad } from '../use-load.js'
import { PageTitle } from './page-title.js'

// Create and edit forms, generated from the type's field specs. Rotation has its own button on the
// destination page, so the `rotate_secret` flag is not a form field.

const hiddenFields = new Set(['rotate_secret'])
const visible = (fields: FieldSpec[]) => fields.filter((f) => !hiddenFields.has(f.key))

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

function topicsOf(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((t) => t.trim())
    .filter(Boolean)
}

/** JSON merge patch (RFC 7396) turning `before` into `after` for the keys of `fields`; undefined when nothing changed. */
function patchOf(fields: FieldSpec[], before: JsonObject, after: JsonObject): JsonObject | undefined {
  const patch: JsonObject = {}
  for (const field of fields) {
    const old = before[field.key]
    const value = after[field.key]
    if (field.type === 'key_value_map') {
      const oldMap = old && typeof old === 'object' && !Array.isArray(old) ? old : {}
      const newMap = (value ?? {}) as JsonObject
      const inner: JsonObject = {}
      for (const k of Object.keys(oldMap)) if (!(k in newMap)) inner[k] = null
      for (const [k, v] of Object.entries(newMap)) if (oldMap[k] !== v) inner[k] = v
      if (Object.keys(inner).length) patch[field.key] = old === undefined || old === null ? newMap : inner
    } else if (value === undefined) {
      if (old !== undefined && old !== null && !(field.type === 'checkbox' && old === false)) patch[field.key] = null
    } else if (value !== old) {
      patch[field.key] = value
    }
  }
  return Object.keys(patch).length ? patch : undefined
}

interface FormProps {
  type: DestinationType
  /** Editing this destination; creating when absent. */
  existing?: Destination
}

function DestinationForm({ type, existing }: FormProps) {
  const configFields = visible(type.config_fields)
  const credentialFields = visible(type.credential_fields)
  const storedConfig = existing?.config ?? {}
  const storedCredentials = existing?.credentials ?? {}
  // Stored secrets come back masked: their inputs start empty and only a typed value replaces them.
  const keepsSecret = (f: FieldSpec) => Boolean(existing && f.sensitive && storedCredentials[f.key] !== undefined)
  const [topics, setTopics] = useState(existing ? existing.topics.join(', ') : '*')
  const [config, setConfig] = useState<FieldValues>(() => Object.fromEntries(configFields.map((f) => [f.key, initialValue(f, storedConfig[f.key])])))
  const [credentials, setCredentials] = useState<FieldValues>(() =>
    Object.fromEntries(credentialFields.map((f) => [f.key, keepsSecret(f) ? '' : initialValue(f, storedCredentials[f.key])])),
  )
  const [errors, setErrors] = useState<Record<string, string>>({})
  const [failure, setFailure] = useState<string>()
  const [saving, setSaving] = useState(false)

  const collect = (fields: FieldSpec[], values: FieldValues, secrets: boolean) => {
    const out: JsonObject = {}
    for (const f of fields) {
      if (secrets && keepsSecret(f) && values[f.key] === '') continue
      const value = apiValue(f, values[f.key])
      if (value !== undefined && !(f.type === 'checkbox' && value === false && f.default === undefined && !existing)) out[f.key] = value as Json
    }
    return out
  }

  const validate = () => {
    const found: Record<string, string> = {}
    if (topicsOf(topics).length === 0) found.topics = 'Give at least one topic, or * for every topic'
    for (const f of configFields) {
      const problem = fieldProblem(f, config[f.key], false)
      if (problem) found[`config.${f.key}`] = problem
    }
    for (const f of credentialFields) {
      const problem = fieldProblem(f, credentials[f.key], keepsSecret(f))
      if (problem) found[`credentials.${f.key}`] = problem
    }
    return found
  }

  const submit = async (event: Event) => {
    event.preventDefault()
    setFailure(undefined)
    const found = validate()
    setErrors(found)
    if (Object.keys(found).length) {
      const first = Object.keys(found)[0]!
      document.getElementById(`f-${first.replace('.', '-')}`)?.focus()
      return
    }
    setSaving(true)
    try {
      const newConfig = collect(configFields, config, false)
      const newCredentials = collect(credentialFields, credentials, true)
      let saved: Destination
      if (existing) {
        const body: JsonObject = {}
        const newTopics = topicsOf(topics)
        if (newTopics.join('\n') !== existing.topics.join('\n')) body.topics = newTopics
        const configPatch = patchOf(configFields, storedConfig, newConfig)
        if (configPatch) body.config = configPatch
        const credentialPatch = patchOf(
          credentialFields.filter((f) => !(keepsSecret(f) && credentials[f.key] === '')),
          storedCredentials,
          newCredentials,
        )
        if (credentialPatch) body.credentials = credentialPatch
        saved = Object.keys(body).length ? await api<Destination>('PATCH', tenantPath(`/destinations/${encodeURIComponent(existing.id)}`), body) : existing
      } else {
        const body: JsonObject = { type: type.type, topics: topicsOf(topics), config: newConfig }
        if (Object.keys(newCredentials).length || type.type !== 'webhook') body.credentials = newCredentials
        saved = await api<Destination>('POST', tenantPath('/destinations'), body)
      }
      announce(existing ? 'Destination saved' : 'Destination created')
      navigate(['destinations', saved.id])
    } catch (error) {
      const apiError = error instanceof ApiError ? error : undefined
      setFailure((error as Error).message)
      if (apiError && Object.keys(apiError.data).length) setErrors(apiError.data)
    } finally {
      setSaving(false)
    }
  }

  const fieldError = (path: string) => errors[path]
  const otherErrors = Object.entries(errors).filter(([path]) => !document.getElementById(`f-${path.replace('.', '-')}`) && path !== 'topics')
  const section = (title: string, fields: FieldSpec[], values: FieldValues, set: (v: FieldValues) => void, prefix: 'config' | 'credentials') => {
    if (fields.length === 0) return null
    const required = fields.filter((f) => f.required)
    const optional = fields.filter((f) => !f.required)
    const input = (f: FieldSpec) => (
      <FieldInput
        key={f.key}
        id={`f-${prefix}-${f.key}`}
        field={f}
        value={values[f.key]}
        onChange={(value) => set({ ...values, [f.key]: value })}
        error={fieldError(`${prefix}.${f.key}`)}
        storedHint={prefix === 'credentials' && keepsSecret(f) ? String(storedCredentials[f.key]) : undefined}
      />
    )
    return (
      <fieldset class="form-section">
        <legend>{title}</legend>
        {required.map(input)}
        {optional.length > 0 && (
          <details class="optional-fields" open={Boolean(existing) || optional.some((f) => fieldError(`${prefix}.${f.key}`))}>
            <summary>Optional {title.toLowerCase()}</summary>
            {optional.map(input)}
          </details>
        )}
      </fieldset>
    )
  }

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
              {otherErrors.length > 0 && (
                <ul>
                  {otherErrors.map(([path, problem]) => (
                    <li key={path}>
                      <code>{path}</code>: {problem}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
          <fieldset class="form-section">
            <legend>Events</legend>
            <div class="field">
              <label for="f-topics">
                Topics <span class="required">(required)</span>
              </label>
              <input
                id="f-topics"
                type="text"
                value={topics}
                onInput={(e) => setTopics(e.currentTarget.value)}
                aria-describedby={`f-topics-desc${errors.topics ? ' f-topics-error' : ''}`}
                aria-invalid={errors.topics ? 'true' : undefined}
                autocomplete="off"
                spellcheck={false}
              />
              <p class="field-desc" id="f-topics-desc">
                Comma-separated topics or patterns such as <code>order.*</code>; <code>*</code> receives every topic.
              </p>
              {errors.topics && (
                <p class="field-error" id="f-topics-error">
                  {errors.topics}
                </p>
              )}
            </div>
          </fieldset>
          {section('Configuration', configFields, config, setConfig, 'config')}
          {section('Credentials', credentialFields, credentials, setCredentials, 'credentials')}
          <div class="actions">
            <a class="button" href={existing ? href(['destinations', existing.id]) : href(['destinations', 'new'])}>
              Cancel
            </a>
            <button type="submit" class="button primary" disabled={saving}>
              {existing ? 'Save changes' : 'Create destination'}
            </button>
          </div>
        </form>
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
