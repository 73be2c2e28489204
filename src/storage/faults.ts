import { OutflowError } from '../errors.js'

/** Sent with every `unavailable` from storage: a client may try again this soon (seconds). */
const retryAfterSeconds = '1'

/**
 * The typed error for a storage call that failed because the database cannot serve it right now
 * (Postgres unreachable or not answering, a SQLite disk full or read-only): HTTP 503 with Retry-After.
 *
 * @example
 * throw unavailable('ECONNREFUSED', err) // OutflowError unavailable: "storage unavailable: ECONNREFUSED"
 */
export function unavailable(reason: string, cause?: unknown): OutflowError {
  return new OutflowError('unavailable', `storage unavailable: ${reason}`, { headers: { 'Retry-After': retryAfterSeconds }, cause })
}
