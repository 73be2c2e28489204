import type { AttemptResult } from '../model/attempt-result.js'
import type { DeliveryMessage } from '../destinations/types.js'
import { newId } from '../ids.js'
import type { AttemptWrite, ClaimedDelivery, DestinationRecord } from '../storage/storage.js'
import { destinationType } from '../destinations/registry.js'
import { sendsThin, thinMessage, type PayloadLinks } from './thin-payload.js'
import { nextAttemptDelay, retryAfterDelay, type RetryOptions } from './retry-schedule.js'

/** A receiver's Retry-After is honoured up to a day; a hostile one cannot park a delivery for years. */
const maxRetryAfterMs = 24 * 60 * 60 * 1000

/** Metadata of every delivery: event-id, topic, timestamp, then the destination's, then the event's (later wins). */
export function deliveryMetadata(d: ClaimedDelivery, destination: DestinationRecord): Record<string, string> {
  return {
    'event-id': d.event_id,
    topic: d.event.topic,
    timestamp: String(Math.floor(d.event.time.getTime() / 1000)),
    ...destination.delivery_metadata,
    ...d.event.metadata,
  }
}

/**
 * A delivery message whose `data` is read from the event when a publisher asks for it: a claimed SQLite row's
 * data is then parsed only by publishers that need it as a value (see stored-json.ts).
 */
class AttemptMessage implements DeliveryMessage {
  readonly id: string
  readonly tenant_id: string
  readonly destination_id: string
  readonly topic: string
  readonly time: Date
  readonly data_json: string | undefined
  readonly metadata: Record<string, string>
  readonly attempt: number
  trace_headers?: Record<string, string>
  readonly ordering_key?: string
  readonly #event: ClaimedDelivery['event']

  constructor(d: ClaimedDelivery, destination: DestinationRecord) {
    this.#event = d.event
    this.id = d.event_id
    this.tenant_id = d.tenant_id
    this.destination_id = d.destination_id
    this.topic = d.event.topic
    this.time = d.event.time
    this.data_json = d.event.data_json
    this.metadata = deliveryMetadata(d, destination)
    this.attempt = d.attempt_count + 1
    if (d.order_key != null) this.ordering_key = d.order_key
  }

  get data(): unknown {
    return this.#event.data
  }
}

/**
 * What a publisher is asked to send for a claimed delivery; `traceHeaders` when the host propagates trace context.
 * With payload links (the engine has a `publicUrl`), the destination's payload policy may make it thin: the data
 * becomes an envelope with a link to it, minted at `now`.
 */
export function deliveryMessage(d: ClaimedDelivery, destination: DestinationRecord, traceHeaders?: Record<string, string>, links?: PayloadLinks, now = new Date()): DeliveryMessage {
  const message = new AttemptMessage(d, destination)
  if (traceHeaders) message.trace_headers = traceHeaders
  if (links && sendsThin(destination.payload, destinationType(destination.type).maxMessageBytes, message)) return thinMessage(message, links, now)
  return message
}

/**
 * The attempt row and the delivery's next state. A failure is retried per the schedule (never sooner
 * than a Retry-After, which is spread by the jitter too and capped at a day), unless the event is not
 * eligible for retry or the receiver is gone (410); `blockWhenExhausted` (FIFO destinations with
 * `on_exhausted: "block"`) keeps an exhausted one pending.
 */
export function attemptWrite(
  d: ClaimedDelivery,
  destinationType: string,
  result: AttemptResult,
  at: Date,
  durationMs: number,
  retry: RetryOptions,
  blockWhenExhausted = false,
): AttemptWrite {
  const attemptNumber = d.attempt_count + 1
  let nextAttemptAt: Date | null = null
  if (!result.ok && d.event.eligible_for_retry && !result.disable) {
    const delay = nextAttemptDelay(retry, attemptNumber)
    if (delay !== null) nextAttemptAt = new Date(at.getTime() + Math.min(retryAfterDelay(retry, delay, result.retry_after_ms ?? 0), Math.max(delay, maxRetryAfterMs)))
  }
  return {
    attempt: {
      id: newId('att'),
      tenant_id: d.tenant_id,
      event_id: d.event_id,
      destination_id: d.destination_id,
      delivery_id: d.id,
      attempt_number: attemptNumber,
      manual: d.manual,
      status: result.ok ? 'success' : 'failed',
      response_status_code: result.response_status_code ?? null,
      response_body: result.response_body ?? null,
      response_headers: result.response_headers ?? null,
      error: result.ok ? null : (result.error ?? null),
      error_kind: result.ok ? null : (result.error_kind ?? 'unknown'),
      duration_ms: Math.round(durationMs),
      delivered_at: at,
      topic: d.event.topic,
      destination_type: destinationType,
    },
    delivery: {
      id: d.id,
      // A FIFO destination that blocks on exhaustion keeps the delivery unfinished (pending, not due) so the
      // ones after it wait until it is retried by hand and succeeds.
      status: result.ok ? 'success' : nextAttemptAt || (blockWhenExhausted && d.order_key != null) ? 'pending' : 'failed',
      next_attempt_at: nextAttemptAt,
      successful_at: result.ok ? at : null,
      ...(d.order_key != null ? { order_key: d.order_key } : {}),
    },
  }
}
