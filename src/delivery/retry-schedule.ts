import * as v from 'valibot'
import type { DeliverySettings } from '../model/delivery-settings.js'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE

/** Delays (ms) after the 1st, 2nd, … failed attempt: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (8 attempts in all). */
export const defaultRetrySchedule: readonly number[] = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR]

/** Default jitter: each delay is spread by ±20 % so retries of a burst do not arrive together. */
export const DEFAULT_JITTER = 0.2

/** Default growth factor when only `base` is given. */
export const DEFAULT_FACTOR = 2

/**
 * Engine retry policy: either an explicit `schedule` of delays (ms), or exponential `base * factor^(n-1)`
 * with `maxAttempts` attempts in all. `maxAttempts` with a schedule caps it (or repeats its last delay).
 */
export const RetryOptionsSchema = v.pipe(
  v.strictObject(
    {
      schedule: v.optional(
        v.array(v.pipe(v.number('must be a number'), v.finite('must be finite'), v.minValue(0, 'must not be negative')), 'must be an array of delays in ms'),
      ),
      base: v.optional(v.pipe(v.number('must be a number'), v.finite('must be finite'), v.minValue(1, 'must be at least 1 ms'))),
      factor: v.optional(v.pipe(v.number('must be a number'), v.finite('must be finite'), v.minValue(1, 'must be at least 1'))),
      maxAttempts: v.optional(v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'))),
      jitter: v.optional(v.pipe(v.number('must be a number'), v.minValue(0, 'must be between 0 and 1'), v.maxValue(1, 'must be between 0 and 1'))),
    },
    'unexpected field',
  ),
  v.check((o) => !(o.schedule !== undefined && (o.base !== undefined || o.factor !== undefined)), 'use either schedule or base/factor, not both'),
  v.check((o) => !(o.factor !== undefined && o.base === undefined), 'factor needs base'),
)

/** Retry policy options; see `RetryOptionsSchema`. All optional: `{}` is the default schedule. */
export type RetryOptions = v.InferOutput<typeof RetryOptionsSchema>

/** The delay before jitter after `attemptsMade` attempts, or null when the policy allows no further attempt. */
function baseDelay(options: RetryOptions, attemptsMade: number): number | null {
  const n = Math.max(1, Math.floor(attemptsMade))
  if (options.maxAttempts !== undefined && n >= options.maxAttempts) return null
  if (options.base !== undefined && options.schedule === undefined) {
    // Without an explicit cap the exponential policy makes as many attempts as the default schedule.
    if (options.maxAttempts === undefined && n > defaultRetrySchedule.length) return null
    return options.base * (options.factor ?? DEFAULT_FACTOR) ** (n - 1)
  }
  const schedule = options.schedule ?? defaultRetrySchedule
  if (n <= schedule.length) return schedule[n - 1] ?? null
  // Past the schedule only an explicit, larger maxAttempts continues, repeating the last delay.
  return options.maxAttempts !== undefined ? (schedule.at(-1) ?? null) : null
}

/**
 * Delay in ms before the next automatic attempt after `attemptsMade` attempts, or null when retries are exhausted.
 *
 * @example
 * nextAttemptDelay({}, 1, () => 0.5) // 5000
 * nextAttemptDelay({}, 8) // null
 */
export function nextAttemptDelay(options: RetryOptions, attemptsMade: number, random: () => number = Math.random): number | null {
  const delay = baseDelay(options, attemptsMade)
  if (delay === null) return null
  const jitter = options.jitter ?? DEFAULT_JITTER
  // random() in [0, 1) maps to a factor in [1 - jitter, 1 + jitter).
  return Math.max(0, Math.round(delay * (1 + jitter * (2 * random() - 1))))
}

/**
 * The delay when the receiver asked for at least `retryAfterMs` (Retry-After): never sooner, spread
 * upward by the jitter like every scheduled delay. A burst that failed together and was told one
 * Retry-After would otherwise come back together, to the millisecond (fault scenario 6, the retry storm).
 *
 * @example
 * retryAfterDelay({}, 5000, 30000, () => 0.5) // 33000
 */
export function retryAfterDelay(options: RetryOptions, delay: number, retryAfterMs: number, random: () => number = Math.random): number {
  if (retryAfterMs <= 0) return delay
  const jitter = options.jitter ?? DEFAULT_JITTER
  return Math.max(delay, Math.round(retryAfterMs * (1 + jitter * random())))
}

/**
 * The retry policy of one destination: its own `delivery` settings over the engine's. A schedule of its own
 * replaces the engine's (list or exponential), `max_attempts` caps either one.
 *
 * @example
 * retryPolicy({ schedule: [1000] }, { max_attempts: 3 }) // { schedule: [1000], maxAttempts: 3 }
 */
export function retryPolicy(engine: RetryOptions, settings: DeliverySettings | null | undefined): RetryOptions {
  if (!settings) return engine
  const { schedule, max_attempts: maxAttempts } = settings
  let policy: RetryOptions = engine
  if (Array.isArray(schedule)) policy = { schedule, jitter: engine.jitter }
  else if (schedule) policy = { base: schedule.base, factor: schedule.factor, jitter: schedule.jitter ?? engine.jitter }
  return maxAttempts === undefined ? policy : { ...policy, maxAttempts }
}
