import type { BatchPolicy, Destination, JsonObject, PayloadPolicy } from './types.js'

// A destination's `payload` and `batch` as the form holds them, and what the form sends for them (create body
// or merge patch). The engine checks the values (ranges, publicUrl): its 422 is shown at the field.

/** The payload choice: the type's default (no `payload`), full, thin, or thin above `bytes`. */
export interface PayloadState {
  choice: 'default' | 'full' | 'thin' | 'above'
  bytes: string
}

/** The batch settings: off (no `batch`), or on with its inputs as typed. */
export interface BatchState {
  on: boolean
  max_events: string
  max_bytes: string
  max_wait_ms: string
  /** '' leaves `format` to the engine (a CloudEvents batch). */
  format: '' | 'cloudevents' | 'json'
}

/** Types whose broker refuses large messages, with that limit (docs/delivery.md › Thin payloads). */
export const brokerLimits: Record<string, number> = { cloudx_sqs: 256 * 1024, cloudy_servicebus: 256 * 1024, cloudx_kinesis: 1024 * 1024, aws_eventbridge: 256 * 1024 }

export function initialPayload(payload: Destination['payload']): PayloadState {
  if (payload === 'full' || payload === 'thin') return { choice: payload, bytes: '' }
  if (payload) return { choice: 'above', bytes: String(payload.thin_above_bytes) }
  return { choice: 'default', bytes: '' }
}

export function initialBatch(batch: Destination['batch']): BatchState {
  const text = (n: number | undefined) => (n === undefined ? '' : String(n))
  if (!batch) return { on: false, max_events: '', max_bytes: '', max_wait_ms: '', format: '' }
  return { on: true, max_events: text(batch.max_events), max_bytes: text(batch.max_bytes), max_wait_ms: text(batch.max_wait_ms), format: batch.format ?? '' }
}

/** A typed number as sent: the engine says what is wrong with a fraction or a value out of range. */
const numberOf = (text: string) => Number(text.trim())

/** The `payload` the state stands for; null for the type's default. */
export function payloadOf(state: PayloadState): PayloadPolicy | null {
  if (state.choice === 'default') return null
  if (state.choice === 'above') return { thin_above_bytes: numberOf(state.bytes) }
  return state.choice
}

/** The `batch` the state stands for; null when off. `format` only for webhooks (queue types use their batch APIs). */
export function batchOf(state: BatchState, type: string): BatchPolicy | null {
  if (!state.on) return null
  const batch: BatchPolicy = { max_events: numberOf(state.max_events) }
  if (state.max_bytes.trim()) batch.max_bytes = numberOf(state.max_bytes)
  if (state.max_wait_ms.trim()) batch.max_wait_ms = numberOf(state.max_wait_ms)
  if (type === 'webhook' && state.format) batch.format = state.format
  return batch
}

const notNumber = (text: string) => text.trim() !== '' && !Number.isFinite(numberOf(text))

/** Problems found before sending, by field path as the engine names them (`payload.thin_above_bytes`, `batch.max_events`). */
export function optionProblems(payload: PayloadState, batch: BatchState): Record<string, string> {
  const found: Record<string, string> = {}
  if (payload.choice === 'above' && payload.bytes.trim() === '') found['payload.thin_above_bytes'] = 'Give the size in bytes above which the data goes by link'
  else if (payload.choice === 'above' && notNumber(payload.bytes)) found['payload.thin_above_bytes'] = 'Give a number of bytes'
  if (batch.on) {
    if (batch.max_events.trim() === '') found['batch.max_events'] = 'Max events is required for batched deliveries'
    for (const key of ['max_events', 'max_bytes', 'max_wait_ms'] as const) if (notNumber(batch[key])) found[`batch.${key}`] = 'Give a number'
  }
  return found
}

/** `payload` and `batch` of a create body: left out when at the type's default or off. */
export function createOptions(type: string, payload: PayloadState, batch: BatchState): JsonObject {
  const body: JsonObject = {}
  const policy = payloadOf(payload)
  if (policy !== null) body.payload = policy
  const batching = batchOf(batch, type)
  if (batching !== null) body.batch = { ...batching }
  return body
}

/**
 * `payload` and `batch` of a PATCH when they changed; null clears either. A PATCH is a merge patch, so `batch` names
 * null for each optional field the stored policy has and the form left empty (the engine's default again).
 */
export function updateOptions(existing: Destination, payload: PayloadState, batch: BatchState): JsonObject {
  const body: JsonObject = {}
  const policy = payloadOf(payload)
  if (JSON.stringify(policy) !== JSON.stringify(payloadOf(initialPayload(existing.payload)))) body.payload = policy
  const batching = batchOf(batch, existing.type)
  if (JSON.stringify(batching) !== JSON.stringify(batchOf(initialBatch(existing.batch), existing.type))) body.batch = batching && batchPatch(existing.batch, batching)
  return body
}

/** The merge patch turning the stored batch policy into `next`: its fields, and null for those it drops. */
function batchPatch(stored: Destination['batch'], next: BatchPolicy): JsonObject {
  const patch: JsonObject = { ...next }
  for (const key of ['max_bytes', 'max_wait_ms', 'format'] as const) if (stored?.[key] !== undefined && next[key] === undefined) patch[key] = null
  return patch
}
