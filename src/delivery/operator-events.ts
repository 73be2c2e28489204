import { destinationType } from '../destinations/registry.js'
import type { AttemptEventData } from '../model/operator-event.js'
import type { AttemptWrite, ClaimedDelivery, DestinationRecord } from '../storage/storage.js'

/** The id of the operator sink destination, under the operator tenant. */
export const operatorSinkId = 'sink'

/** An attempt with what it was about, kept until its result is written (operator events need all three). */
export interface RecordedAttempt {
  write: AttemptWrite
  delivery: ClaimedDelivery
  destination: DestinationRecord
  /** The receiver answered 410 Gone: the destination is disabled rather than retried. */
  gone: boolean
}

/** The destination as operator events show it: where it sends, never its credentials or headers. */
export function operatorDestination(record: DestinationRecord): AttemptEventData['destination'] {
  const def = destinationType(record.type)
  return {
    id: record.id,
    tenant_id: record.tenant_id,
    type: record.type,
    topics: record.topics,
    target: def.target(record.config) ?? null,
    target_url: def.targetUrl?.(record.config) ?? null,
    created_at: record.created_at.toISOString(),
    disabled_at: record.disabled_at?.toISOString() ?? null,
  }
}

/** The data of attempt events and of the alerts an attempt raised: ids, status and error kind, no payload or response. */
export function attemptEventData({ write: { attempt }, delivery: { event } }: RecordedAttempt, destination: DestinationRecord): AttemptEventData {
  return {
    tenant_id: attempt.tenant_id,
    event: { id: event.id, topic: event.topic, time: event.time.toISOString(), metadata: event.metadata },
    attempt: {
      id: attempt.id,
      attempt_number: attempt.attempt_number,
      manual: attempt.manual,
      status: attempt.status,
      response_status_code: attempt.response_status_code,
      error_kind: attempt.error_kind,
      error: attempt.error,
      duration_ms: attempt.duration_ms,
      delivered_at: attempt.delivered_at.toISOString(),
    },
    destination: operatorDestination(destination),
  }
}

/**
 * Whether an automatic attempt ended its delivery after every scheduled retry. Not for events
 * published without retries, manual attempts, or a receiver that answered 410 Gone (that disables).
 */
export function exhaustedRetries({ write, delivery, gone }: RecordedAttempt): boolean {
  return write.attempt.status === 'failed' && write.delivery.status === 'failed' && delivery.event.eligible_for_retry && !delivery.manual && !gone
}
