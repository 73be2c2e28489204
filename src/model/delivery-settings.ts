import * as v from 'valibot'

const DAY_MS = 24 * 3_600_000

/** Bounds of a destination's `delivery` settings: a tenant cannot make the engine retry without end or hold a slot for long. */
export const deliveryLimits = {
  maxAttempts: 100,
  scheduleLength: 100,
  maxDelayMs: 7 * DAY_MS,
  maxBaseMs: DAY_MS,
  maxFactor: 10,
  minTimeoutMs: 100,
  maxTimeoutMs: 120_000,
} as const

const int = (min: number, max: number, what = 'an integer') =>
  v.pipe(v.number(`must be ${what} between ${min} and ${max}`), v.integer(`must be ${what} between ${min} and ${max}`), v.minValue(min, `must be ${what} between ${min} and ${max}`), v.maxValue(max, `must be ${what} between ${min} and ${max}`))

/** Delays (ms) after the 1st, 2nd, … failed attempt. */
const DelayListSchema = v.pipe(
  v.array(int(0, deliveryLimits.maxDelayMs, 'a delay in ms'), 'must be a list of delays in ms or { base, factor?, jitter? }'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(deliveryLimits.scheduleLength, `must have at most ${deliveryLimits.scheduleLength} delays`),
)

/** Exponential delays: `base * factor^(n-1)` ms after the n-th failed attempt, each spread by ±`jitter`. */
const ExponentialScheduleSchema = v.strictObject(
  {
    base: int(1, deliveryLimits.maxBaseMs, 'a delay in ms'),
    factor: v.optional(v.pipe(v.number('must be a number between 1 and 10'), v.minValue(1, 'must be a number between 1 and 10'), v.maxValue(deliveryLimits.maxFactor, 'must be a number between 1 and 10'))),
    jitter: v.optional(v.pipe(v.number('must be a number between 0 and 1'), v.minValue(0, 'must be a number between 0 and 1'), v.maxValue(1, 'must be a number between 0 and 1'))),
  },
  'unexpected field',
)

const ScheduleSchema = v.pipe(
  v.union([DelayListSchema, ExponentialScheduleSchema], 'must be a list of delays in ms or { base, factor?, jitter? }'),
  v.description('Delays after the 1st, 2nd, … failed attempt: a list in ms (with the engine\'s jitter), or `{ base, factor?, jitter? }` for base × factor^(n-1) ms. Replaces the engine\'s schedule.'),
)
const MaxAttemptsSchema = v.pipe(int(1, deliveryLimits.maxAttempts), v.description('Attempts in all, the first included (1: no retries).'))
const TimeoutSchema = v.pipe(
  int(deliveryLimits.minTimeoutMs, deliveryLimits.maxTimeoutMs),
  v.description('Deadline of one attempt in ms, instead of the engine\'s `delivery.timeoutMs`; below its `delivery.leaseMs`.'),
)

/**
 * A destination's own delivery policy (an addition to the spec's fields). Every setting is optional;
 * what is absent follows the engine's `delivery` options. (valibot's object schemas take arrays: the engine
 * refuses an array `delivery` before parsing, see engine/destinations.ts.)
 */
export const DeliverySettingsSchema = v.strictObject(
  {
    max_attempts: v.optional(MaxAttemptsSchema),
    schedule: v.optional(ScheduleSchema),
    timeout_ms: v.optional(TimeoutSchema),
  },
  'unexpected field',
)
export type DeliverySettings = v.InferOutput<typeof DeliverySettingsSchema>

/** `delivery` in a PATCH: a merge patch of the stored settings (`null` removes a setting; `delivery: null` all of them). */
export const DeliverySettingsPatchSchema = v.strictObject(
  {
    max_attempts: v.optional(v.nullable(MaxAttemptsSchema)),
    schedule: v.optional(v.nullable(ScheduleSchema)),
    timeout_ms: v.optional(v.nullable(TimeoutSchema)),
  },
  'unexpected field',
)
