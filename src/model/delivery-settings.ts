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
  minPerSecond: 0.01,
  maxPerSecond: 10_000,
  maxBurst: 10_000,
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
    /** The delay after the first failed attempt, in ms. */
    base: int(1, deliveryLimits.maxBaseMs, 'a delay in ms'),
    /** How much each delay grows over the one before (default 2). */
    factor: v.optional(v.pipe(v.number('must be a number between 1 and 10'), v.minValue(1, 'must be a number between 1 and 10'), v.maxValue(deliveryLimits.maxFactor, 'must be a number between 1 and 10'))),
    /** How much each delay is spread, 0–1 (default: the engine's `delivery.retry.jitter`). */
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

/** Attempts per second to one destination, across every instance, with a burst of `burst` after a pause. */
const RateLimitSchema = v.pipe(
  v.strictObject(
    {
      /** Attempts per second, counted across every instance. */
      per_second: v.pipe(
        v.number(`must be a number between ${deliveryLimits.minPerSecond} and ${deliveryLimits.maxPerSecond}`),
        v.minValue(deliveryLimits.minPerSecond, `must be a number between ${deliveryLimits.minPerSecond} and ${deliveryLimits.maxPerSecond}`),
        v.maxValue(deliveryLimits.maxPerSecond, `must be a number between ${deliveryLimits.minPerSecond} and ${deliveryLimits.maxPerSecond}`),
      ),
      /** Attempts that may start at once after a quiet spell (default: half a second's worth). */
      burst: v.optional(v.pipe(int(1, deliveryLimits.maxBurst), v.description('Attempts that may start at once after a quiet spell (default: half a second\'s worth, at least 1).'))),
    },
    'unexpected field',
  ),
  v.description('At most `per_second` attempts per second to this destination, counted across every instance sharing the database (a token bucket in it).'),
)
export type RateLimit = v.InferOutput<typeof RateLimitSchema>

/**
 * The bucket size of a rate limit: its `burst`, or half a second's worth (at least 1). The bucket only keeps
 * what it can hold, so the default bounds the tokens lost while every instance is slow to come back (a busy
 * event loop, a loaded database): a tenth of a second lost a third of a 50/s limit on a loaded machine.
 */
export function rateLimitBurst(limit: RateLimit): number {
  return limit.burst ?? Math.max(1, Math.ceil(limit.per_second / 2))
}

/** Where a FIFO destination finds an event's ordering key: a dotted path into `{ id, topic, time, metadata, data }`. */
const OrderingKeySchema = v.pipe(
  v.string('must be a path such as "data.customer_id"'),
  v.maxLength(255, 'must be at most 255 characters'),
  v.regex(/^(id|topic|time|metadata|data)(\.[^.\s]+){0,15}$/, 'must be a path into the event such as "data.customer_id" or "metadata.key" (at most 16 segments)'),
  v.description('Events with the same value here are delivered in publish order; absent: the whole destination is one sequence.'),
)

/**
 * A destination's own delivery policy (an addition to the spec's fields). Every setting is optional;
 * what is absent follows the engine's `delivery` options. (valibot's object schemas take arrays: the engine
 * refuses an array `delivery` before parsing, see engine/destinations.ts.)
 */
export const DeliverySettingsSchema = v.strictObject(
  {
    /** Attempts in all, the first included (1: no retries). */
    max_attempts: v.optional(MaxAttemptsSchema),
    /** The delays after the 1st, 2nd, … failed attempt. */
    schedule: v.optional(ScheduleSchema),
    /** The attempt deadline instead of the engine's `delivery.timeoutMs`. */
    timeout_ms: v.optional(TimeoutSchema),
    /** At most this many attempts per second to the destination, across every instance. */
    rate_limit: v.optional(RateLimitSchema),
    /** Ordered delivery per ordering key. */
    ordering: v.optional(v.pipe(v.picklist(['fifo'], 'must be "fifo"'), v.description('`fifo`: an event is not attempted before the events published before it with the same ordering key succeeded or were given up on.'))),
    /** The path of the event's ordering key; absent: the whole destination is one sequence. */
    ordering_key: v.optional(OrderingKeySchema),
    /** With ordering: whether the events after an exhausted one go on (`skip`) or wait (`block`). */
    on_exhausted: v.optional(
      v.pipe(
        v.picklist(['skip', 'block'], 'must be "skip" or "block"'),
        v.description('With ordering: what an exhausted delivery does to the ones after it. `skip` (default): they go on. `block`: they wait until it is retried by hand and succeeds.'),
      ),
    ),
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
    rate_limit: v.optional(v.nullable(v.record(v.string(), v.unknown(), 'must be an object'))),
    ordering: v.optional(v.nullable(v.picklist(['fifo'], 'must be "fifo"'))),
    ordering_key: v.optional(v.nullable(OrderingKeySchema)),
    on_exhausted: v.optional(v.nullable(v.picklist(['skip', 'block'], 'must be "skip" or "block"'))),
  },
  'unexpected field',
)

/**
 * The ordering key of an event for a FIFO destination (`''` when it has no `ordering_key`, or the path finds
 * nothing), or null when the destination is not ordered.
 *
 * @example
 * orderingKey({ ordering: 'fifo', ordering_key: 'data.customer' }, { data: { customer: 'c1' } }) // 'c1'
 */
export function orderingKey(settings: DeliverySettings | null | undefined, subject: Record<string, unknown>): string | null {
  if (settings?.ordering !== 'fifo') return null
  if (!settings.ordering_key) return ''
  let value: unknown = subject
  for (const segment of settings.ordering_key.split('.')) value = value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[segment] : undefined
  if (value === undefined || value === null) return ''
  return typeof value === 'string' ? value : JSON.stringify(value)
}
