import { useState } from 'preact/hooks'
import type { FieldSpec, Json, JsonObject } from '../types.js'

// Inputs generated from a destination type's field specs (GET /destination-types): text, number,
// checkbox and key/value maps; sensitive values are masked, with a button to show them.

export type FieldValue = string | boolean | [string, string][]
export type FieldValues = Record<string, FieldValue>

/** A field's form value from a stored value (or its default). */
export function initialValue(field: FieldSpec, stored: Json | undefined): FieldValue {
  if (field.type === 'checkbox') return typeof stored === 'boolean' ? stored : field.default === true
  if (field.type === 'key_value_map')
    return stored && typeof stored === 'object' && !Array.isArray(stored) ? Object.entries(stored).map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]) : []
  if (stored === undefined || stored === null) return field.default === undefined || typeof field.default === 'boolean' ? '' : String(field.default)
  return typeof stored === 'string' ? stored : String(stored)
}

/** The API value of a form value; undefined when empty (left out). */
export function apiValue(field: FieldSpec, value: FieldValue | undefined): Json | undefined {
  if (field.type === 'checkbox') return value === true
  if (field.type === 'key_value_map') {
    const rows = (value as [string, string][] | undefined) ?? []
    const map: JsonObject = {}
    for (const [k, v] of rows) if (k.trim()) map[k.trim()] = v
    return Object.keys(map).length ? map : undefined
  }
  const text = typeof value === 'string' ? value.trim() : ''
  if (text === '') return undefined
  return field.type === 'number' ? Number(text) : text
}

/** What is wrong with a value, checked as the engine will (required, length, pattern, number). */
export function fieldProblem(field: FieldSpec, value: FieldValue | undefined, keepsStored: boolean): string | undefined {
  if (field.type === 'checkbox' || field.type === 'key_value_map') return undefined
  const text = typeof value === 'string' ? value.trim() : ''
  if (text === '') return field.required && !keepsStored ? `${field.label} is required` : undefined
  if (field.type === 'number' && !Number.isFinite(Number(text))) return `${field.label} must be a number`
  if (field.minlength !== undefined && text.length < field.minlength) return `${field.label} must be at least ${field.minlength} characters`
  if (field.maxlength !== undefined && text.length > field.maxlength) return `${field.label} must be at most ${field.maxlength} characters`
  if (field.pattern) {
    try {
      if (!new RegExp(field.pattern, 'u').test(text)) return `${field.label} has the wrong format`
    } catch {
      // A pattern this browser cannot compile: the engine still checks it.
    }
  }
  return undefined
}

/** The values a pattern such as `^(hmac|ed25519|both)$` allows, offered as suggestions; undefined for other patterns. */
export function patternChoices(field: FieldSpec): string[] | undefined {
  return field.pattern && /^\^\([\w-]+(\|[\w-]+)+\)\$$/.test(field.pattern) ? field.pattern.slice(2, -2).split('|') : undefined
}

interface InputProps {
  id: string
  field: FieldSpec
  value: FieldValue | undefined
  onChange: (value: FieldValue) => void
  error?: string
  /** For sensitive fields of an existing destination: what the stored value looks like (masked). */
  storedHint?: string
}

function Description({ id, field, storedHint }: { id: string; field: FieldSpec; storedHint?: string }) {
  return (
    <p id={`${id}-desc`} class="field-desc">
      {field.description}
      {storedHint && <> Stored: <code>{storedHint}</code>; leave empty to keep it.</>}
    </p>
  )
}

function KeyValueInput({ id, field, value, onChange, error }: InputProps) {
  const rows = (value as [string, string][] | undefined) ?? []
  const set = (i: number, part: 0 | 1, text: string) => onChange(rows.map((row, j) => (j === i ? (part === 0 ? [text, row[1]] : [row[0], text]) : row)))
  return (
    <fieldset class="field" aria-describedby={`${id}-desc`}>
      <legend>
        {field.label}
        {field.required && <span class="required"> (required)</span>}
      </legend>
      <Description id={id} field={field} />
      {rows.map(([k, v], i) => (
        <div class="kv-row" key={i}>
          <input type="text" aria-label={`${field.label}: name ${i + 1}`} value={k} onInput={(e) => set(i, 0, e.currentTarget.value)} autocomplete="off" />
          <input type="text" aria-label={`${field.label}: value ${i + 1}`} value={v} onInput={(e) => set(i, 1, e.currentTarget.value)} autocomplete="off" />
          <button type="button" class="button small" onClick={() => onChange(rows.filter((_, j) => j !== i))} aria-label={`Remove ${field.label} entry ${i + 1}`}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="button small" onClick={() => onChange([...rows, ['', '']])}>
        Add {field.label.toLowerCase()} entry
      </button>
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </fieldset>
  )
}

export function FieldInput(props: InputProps) {
  const { id, field, value, onChange, error, storedHint } = props
  const [shown, setShown] = useState(false)
  if (field.type === 'key_value_map') return <KeyValueInput {...props} />
  const describedBy = `${id}-desc${error ? ` ${id}-error` : ''}`
  const choices = patternChoices(field)
  if (field.type === 'checkbox')
    return (
      <div class="field field-checkbox">
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => onChange(e.currentTarget.checked)} aria-describedby={describedBy} />
        <label for={id}>{field.label}</label>
        <Description id={id} field={field} />
      </div>
    )
  return (
    <div class="field">
      <label for={id}>
        {field.label}
        {field.required && !storedHint && <span class="required"> (required)</span>}
      </label>
      <div class={field.sensitive ? 'input-with-button' : undefined}>
        <input
          id={id}
          // Preact's input types tie `type` to the props each type allows; these three share them all.
          type={(field.sensitive && !shown ? 'password' : field.type === 'number' ? 'number' : 'text') as 'text'}
          inputMode={field.type === 'number' ? 'numeric' : undefined}
          value={typeof value === 'string' ? value : ''}
          onInput={(e) => onChange(e.currentTarget.value)}
          aria-invalid={error ? 'true' : undefined}
          aria-required={field.required && !storedHint ? 'true' : undefined}
          aria-describedby={describedBy}
          autocomplete={field.sensitive ? 'new-password' : 'off'}
          spellcheck={false}
          list={choices ? `${id}-choices` : undefined}
        />
        {choices && (
          <datalist id={`${id}-choices`}>
            {choices.map((choice) => (
              <option key={choice} value={choice} />
            ))}
          </datalist>
        )}
        {field.sensitive && (
          <button type="button" class="button small" aria-pressed={shown} aria-controls={id} onClick={() => setShown(!shown)}>
            {shown ? 'Hide' : 'Show'}
          </button>
        )}
      </div>
      <Description id={id} field={field} storedHint={storedHint} />
      {error && (
        <p class="field-error" id={`${id}-error`}>
          {error}
        </p>
      )}
    </div>
  )
}
