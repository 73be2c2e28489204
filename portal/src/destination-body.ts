import { apiValue, fieldProblem, initialValue, type FieldValues } from './components/fields.js'
import { createOptions, initialBatch, initialPayload, optionProblems, updateOptions, type BatchState, type PayloadState } from './delivery-options.js'
import type { Destination, DestinationType, FieldSpec, Json, JsonObject } from './types.js'

// What the destination form sends: a create body, or a JSON merge patch of what changed. Kept apart
// from the form's markup so each reads on its own.

/** Rotation has its own button on the destination page, so the `rotate_secret` flag is not a form field. */
const hiddenFields = new Set(['rotate_secret'])

export interface FormFields {
  config: FieldSpec[]
  credentials: FieldSpec[]
}

export interface FormState {
  topics: string
  config: FieldValues
  credentials: FieldValues
  payload: PayloadState
  batch: BatchState
}

export function formFields(type: DestinationType): FormFields {
  return { config: type.config_fields.filter((f) => !hiddenFields.has(f.key)), credentials: type.credential_fields.filter((f) => !hiddenFields.has(f.key)) }
}

/** Stored secrets come back masked: their inputs start empty, and only a typed value replaces them. */
export function keepsSecret(field: FieldSpec, existing: Destination | undefined): boolean {
  return Boolean(existing && field.sensitive && existing.credentials[field.key] !== undefined)
}

export function initialState(fields: FormFields, existing: Destination | undefined): FormState {
  const config = existing?.config ?? {}
  return {
    topics: existing ? existing.topics.join(', ') : '*',
    config: Object.fromEntries(fields.config.map((f) => [f.key, initialValue(f, config[f.key])])),
    credentials: Object.fromEntries(fields.credentials.map((f) => [f.key, keepsSecret(f, existing) ? '' : initialValue(f, existing?.credentials[f.key])])),
    payload: initialPayload(existing?.payload),
    batch: initialBatch(existing?.batch),
  }
}

export function topicsOf(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((t) => t.trim())
    .filter(Boolean)
}

/** Problems found before sending, by field path (`config.url`), as the engine would name them. */
export function formProblems(fields: FormFields, state: FormState, existing: Destination | undefined): Record<string, string> {
  const found: Record<string, string> = {}
  if (topicsOf(state.topics).length === 0) found.topics = 'Give at least one topic, or * for every topic'
  for (const f of fields.config) {
    const problem = fieldProblem(f, state.config[f.key], false)
    if (problem) found[`config.${f.key}`] = problem
  }
  for (const f of fields.credentials) {
    const problem = fieldProblem(f, state.credentials[f.key], keepsSecret(f, existing))
    if (problem) found[`credentials.${f.key}`] = problem
  }
  return { ...found, ...optionProblems(state.payload, state.batch) }
}

/**
 * The API values of the filled fields: on create an unticked checkbox without a default is left out;
 * `kept` (stored secrets left empty) are left out.
 */
function collect(fields: FieldSpec[], values: FieldValues, creating: boolean, kept: (f: FieldSpec) => boolean = () => false): JsonObject {
  const out: JsonObject = {}
  for (const f of fields) {
    if (kept(f) && values[f.key] === '') continue
    const value = apiValue(f, values[f.key])
    if (value !== undefined && !(creating && f.type === 'checkbox' && value === false && f.default === undefined)) out[f.key] = value as Json
  }
  return out
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

/** The body of `POST /tenants/{t}/destinations` (a webhook without a secret gets one generated). */
export function createBody(type: DestinationType, fields: FormFields, state: FormState): JsonObject {
  const credentials = collect(fields.credentials, state.credentials, true)
  const body: JsonObject = { type: type.type, topics: topicsOf(state.topics), config: collect(fields.config, state.config, true) }
  if (Object.keys(credentials).length || type.type !== 'webhook') body.credentials = credentials
  return { ...body, ...createOptions(type.type, state.payload, state.batch) }
}

/** The PATCH body of what changed (empty when nothing did); secrets left empty are not sent. */
export function updateBody(fields: FormFields, state: FormState, existing: Destination): JsonObject {
  const body: JsonObject = {}
  const topics = topicsOf(state.topics)
  if (topics.join('\n') !== existing.topics.join('\n')) body.topics = topics
  const config = patchOf(fields.config, existing.config ?? {}, collect(fields.config, state.config, false))
  if (config) body.config = config
  const kept = (f: FieldSpec) => keepsSecret(f, existing) && state.credentials[f.key] === ''
  const credentials = patchOf(
    fields.credentials.filter((f) => !kept(f)),
    existing.credentials,
    collect(fields.credentials, state.credentials, false, kept),
  )
  if (credentials) body.credentials = credentials
  return { ...body, ...updateOptions(existing, state.payload, state.batch) }
}
