import type { OutflowError } from '../errors.js'
import { parseRetryAfter } from '../retry-after.js'

/** How `outflow/client` retries an idempotent call that met a network failure, a timeout, 429, 502, 503 or 504. */
export interface RetryOptions {
  /** Retries after the first try (default 3); 0 turns them off. */
  retries?: number
  /** The first backoff in ms (default 250), doubled per retry and spread by jitter. */
  baseDelayMs?: number
  /** The longest backoff in ms (default 10 000). */
  maxDelayMs?: number
  /** The longest `Retry-After` honoured, in ms (default 60 000): an answer asking for longer is thrown at once. */
  maxRetryAfterMs?: number
}

export type RetryPolicy = Required<RetryOptions>

/**
 * The policy with defaults filled in; `false` is no retries.
 *
 * @example
 * retryPolicy({ retries: 5 }) // { retries: 5, baseDelayMs: 250, maxDelayMs: 10000, maxRetryAfterMs: 60000 }
 */
export function retryPolicy(options: RetryOptions | false | undefined): RetryPolicy {
  const defaults: RetryPolicy = { retries: 3, baseDelayMs: 250, maxDelayMs: 10_000, maxRetryAfterMs: 60_000 }
  return options === false ? { ...defaults, retries: 0 } : { ...defaults, ...options }
}

/** No answer (0), or the answers that mean "try again later": too many requests, a gateway's, unavailable. */
const retryableStatuses = new Set([0, 429, 502, 503, 504])

/**
 * How long to wait before retry number `retry + 1` of an idempotent call that failed with `error`, or
 * undefined to give up: the error is not a transient one, the retries are spent, or `Retry-After`
 * (honoured on 429 and 503) asks for longer than `maxRetryAfterMs`. Otherwise an exponential backoff
 * with jitter (half fixed, half random), so clients that failed together do not come back together.
 *
 * @example
 * retryDelay(new OutflowError('unavailable', 'service unavailable', { headers: { 'retry-after': '2' } }), 0, retryPolicy(undefined)) // 2000
 */
export function retryDelay(error: OutflowError, retry: number, policy: RetryPolicy): number | undefined {
  if (retry >= policy.retries || !retryableStatuses.has(error.status)) return undefined
  const asked = error.status === 429 || error.status === 503 ? parseRetryAfter(error.headers?.['retry-after']) : undefined
  if (asked !== undefined) return asked <= policy.maxRetryAfterMs ? asked : undefined
  const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** retry)
  return backoff / 2 + (Math.random() * backoff) / 2
}
