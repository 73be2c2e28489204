// The body and headers of a webhook batch: one POST for a destination's `batch` of events (docs/delivery.md,
// "Batched delivery").
import { createHash } from 'node:crypto'
import { jsonBody, type DeliveryMessage } from './types.js'

/** One signed POST: its body, the webhook-id it is signed under, and what else goes in its headers. */
export interface SignedPost {
  body: string
  id: string
  topic: string
  contentType: string
  /** Sent as `x-outflow-<key>` headers. */
  metadata: Record<string, string>
  traceHeaders: Record<string, string> | undefined
}

/** How a batch's events are written: a CloudEvents batch, or a plain JSON array. */
export type BatchFormat = 'cloudevents' | 'json'

/** The CloudEvents batch media type (CloudEvents JSON format, §4). */
export const cloudEventsBatchType = 'application/cloudevents-batch+json'

/**
 * The `webhook-id` of a batch: `batch_` and 32 hex digits of the SHA-256 of its event ids, in order. The same
 * events retried together keep the same id (a receiver can drop a repeated batch whole); each event's own id is
 * in the body.
 */
export function batchId(messages: readonly DeliveryMessage[]): string {
  const hash = createHash('sha256')
  for (const m of messages) hash.update(m.id).update('\n')
  return `batch_${hash.digest('hex').slice(0, 32)}`
}

/** One event of a `cloudevents` batch: its data (a thin delivery's envelope) as JSON, spliced in without a reparse. */
function cloudEvent(m: DeliveryMessage, source: string): string {
  const head = { specversion: '1.0', id: m.id, source, type: m.topic, time: m.time.toISOString(), datacontenttype: 'application/json' }
  return `${JSON.stringify(head).slice(0, -1)},"data":${jsonBody(m)}}`
}

/** One event of a `json` batch: `{ id, topic, time, metadata, data }`. */
function jsonEvent(m: DeliveryMessage): string {
  const head = { id: m.id, topic: m.topic, time: m.time.toISOString(), metadata: m.metadata }
  return `${JSON.stringify(head).slice(0, -1)},"data":${jsonBody(m)}}`
}

/** The metadata every message of the batch has with the same value (the destination's, a shared topic): its headers. */
function sharedMetadata(messages: readonly DeliveryMessage[]): Record<string, string> {
  const [first, ...rest] = messages
  const shared: Record<string, string> = {}
  for (const key in first?.metadata) {
    const value = first.metadata[key]!
    if (rest.every((m) => m.metadata[key] === value)) shared[key] = value
  }
  return shared
}

/**
 * The POST of a batch: a JSON array in the messages' order, of CloudEvents (`cloudevents`: specversion 1.0, id the
 * event id, source `/tenants/<tenant id>`, type the topic, time, datacontenttype application/json, data the event's
 * data) or of `{ id, topic, time, metadata, data }` (`json`); signed under `batchId`. Headers carry the metadata
 * the messages share; trace headers are not sent (each event's attempt has its own span).
 */
export function batchRequest(messages: readonly DeliveryMessage[], format: BatchFormat, tenantId: string): SignedPost {
  const source = `/tenants/${encodeURIComponent(tenantId)}`
  const events = format === 'json' ? messages.map(jsonEvent) : messages.map((m) => cloudEvent(m, source))
  const topics = new Set(messages.map((m) => m.topic))
  return {
    body: `[${events.join(',')}]`,
    id: batchId(messages),
    topic: topics.size === 1 ? messages[0]!.topic : '',
    contentType: format === 'json' ? 'application/json' : cloudEventsBatchType,
    metadata: sharedMetadata(messages),
    traceHeaders: undefined,
  }
}
