import type { Logger } from '../logger.js'
import type { AttemptWrite, DestinationRecord } from '../storage/storage.js'

/**
 * One log line per attempt, its level by outcome: a success at debug, a failure that will be retried
 * at info, a delivery that failed for good at warn. Ids, status code and error kind only: never the
 * payload, the response body, the error text (a peer's message may quote its address) or credentials.
 */
export function logAttempt(logger: Logger, destination: DestinationRecord, { attempt, delivery }: AttemptWrite): void {
  const fields: Record<string, unknown> = {
    tenant_id: attempt.tenant_id,
    destination_id: attempt.destination_id,
    destination_type: destination.type,
    event_id: attempt.event_id,
    attempt_number: attempt.attempt_number,
    status: attempt.status,
    duration_ms: attempt.duration_ms,
  }
  if (attempt.manual) fields.manual = true
  if (attempt.response_status_code !== null) fields.status_code = attempt.response_status_code
  if (attempt.status === 'success') return logger.debug(fields, 'delivery attempt succeeded')
  fields.error_kind = attempt.error_kind
  if (delivery.next_attempt_at) return logger.info({ ...fields, next_attempt_at: delivery.next_attempt_at.toISOString() }, 'delivery attempt failed; retry scheduled')
  logger.warn(fields, 'delivery failed; no attempts left')
}
