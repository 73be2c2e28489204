import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { defaultRetrySchedule, nextAttemptDelay, retryAfterDelay, RetryOptionsSchema, retryPolicy } from '../../src/delivery/retry-schedule.js'

const SECOND = 1000
const MINUTE = 60 * SECOND
const HOUR = 60 * MINUTE
const middle = (): number => 0.5 // no jitter offset
const lowest = (): number => 0 // −jitter
const highest = (): number => 1 - Number.EPSILON // just under +jitter

describe('defaultRetrySchedule', () => {
  it('is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h', () => {
    expect(defaultRetrySchedule).toEqual([5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR])
  })
})

describe('nextAttemptDelay with the default schedule', () => {
  it.each(defaultRetrySchedule.map((delay, i) => [i + 1, delay] as const))('after attempt %i waits %i ms (no jitter offset)', (attempts, delay) => {
    expect(nextAttemptDelay({}, attempts, middle)).toBe(delay)
  })

  it('spreads each delay by ±20 % by default', () => {
    expect(nextAttemptDelay({}, 1, lowest)).toBe(4 * SECOND)
    expect(nextAttemptDelay({}, 1, highest)).toBe(6 * SECOND)
    expect(nextAttemptDelay({}, 4, lowest)).toBe(0.8 * 2 * HOUR)
    expect(nextAttemptDelay({}, 4, highest)).toBe(1.2 * 2 * HOUR)
  })

  it('stays within the jitter bounds for any random value', () => {
    for (let i = 0; i <= 100; i++) {
      const r = Math.min(i / 100, 1 - Number.EPSILON)
      const delay = nextAttemptDelay({}, 2, () => r)
      expect(delay).toBeGreaterThanOrEqual(0.8 * 5 * MINUTE)
      expect(delay).toBeLessThanOrEqual(1.2 * 5 * MINUTE)
    }
  })

  it('returns null once the schedule is exhausted (8 attempts in all)', () => {
    expect(nextAttemptDelay({}, 7, middle)).toBe(10 * HOUR)
    expect(nextAttemptDelay({}, 8, middle)).toBeNull()
    expect(nextAttemptDelay({}, 50, middle)).toBeNull()
  })

  it('honours a custom jitter, including none', () => {
    expect(nextAttemptDelay({ jitter: 0 }, 1, lowest)).toBe(5 * SECOND)
    expect(nextAttemptDelay({ jitter: 0.5 }, 1, lowest)).toBe(2.5 * SECOND)
  })

  it('spreads by the whole delay with a jitter of 1, down to no wait at all', () => {
    expect(nextAttemptDelay({ jitter: 1 }, 1, lowest)).toBe(0)
    expect(nextAttemptDelay({ jitter: 1 }, 1, highest)).toBe(10 * SECOND)
  })

  it('rounds to whole milliseconds', () => {
    expect(nextAttemptDelay({ schedule: [1001], jitter: 0.5 }, 1, () => 0.25)).toBe(751)
  })

  it('reads fewer than one attempt as one, and a fractional count down to the attempts made', () => {
    expect(nextAttemptDelay({}, 0, middle)).toBe(5 * SECOND)
    expect(nextAttemptDelay({}, -3, middle)).toBe(5 * SECOND)
    expect(nextAttemptDelay({}, 1.9, middle)).toBe(5 * SECOND)
    expect(nextAttemptDelay({}, 7.5, middle)).toBe(10 * HOUR)
  })
})

describe('nextAttemptDelay with a custom schedule', () => {
  it('uses the given delays and stops after them', () => {
    const options = { schedule: [100, 200], jitter: 0 }
    expect(nextAttemptDelay(options, 1)).toBe(100)
    expect(nextAttemptDelay(options, 2)).toBe(200)
    expect(nextAttemptDelay(options, 3)).toBeNull()
  })

  it('makes a single attempt with an empty schedule', () => {
    expect(nextAttemptDelay({ schedule: [] }, 1)).toBeNull()
  })

  it('is capped by a smaller maxAttempts', () => {
    expect(nextAttemptDelay({ maxAttempts: 3, jitter: 0 }, 2)).toBe(5 * MINUTE)
    expect(nextAttemptDelay({ maxAttempts: 3, jitter: 0 }, 3)).toBeNull()
  })

  it('repeats its last delay up to a larger maxAttempts', () => {
    const options = { schedule: [100, 200], maxAttempts: 5, jitter: 0 }
    expect(nextAttemptDelay(options, 3)).toBe(200)
    expect(nextAttemptDelay(options, 4)).toBe(200)
    expect(nextAttemptDelay(options, 5)).toBeNull()
  })

  it('repeats the last delay of the default schedule up to a larger maxAttempts', () => {
    expect(nextAttemptDelay({ maxAttempts: 10, jitter: 0 }, 9)).toBe(10 * HOUR)
    expect(nextAttemptDelay({ maxAttempts: 10, jitter: 0 }, 10)).toBeNull()
  })

  it('makes a single attempt with an empty schedule, whatever maxAttempts says', () => {
    expect(nextAttemptDelay({ schedule: [], maxAttempts: 3 }, 1)).toBeNull()
  })
})

describe('nextAttemptDelay with base/factor/maxAttempts', () => {
  it('waits base * factor^(n-1) after attempt n', () => {
    const options = { base: 1000, factor: 3, maxAttempts: 5, jitter: 0 }
    expect([1, 2, 3, 4].map((n) => nextAttemptDelay(options, n))).toEqual([1000, 3000, 9000, 27000])
  })

  it('stops at maxAttempts', () => {
    expect(nextAttemptDelay({ base: 1000, factor: 3, maxAttempts: 5 }, 5)).toBeNull()
  })

  it('defaults factor to 2 and applies jitter', () => {
    expect(nextAttemptDelay({ base: 1000, maxAttempts: 4 }, 3, middle)).toBe(4000)
    expect(nextAttemptDelay({ base: 1000, maxAttempts: 4 }, 3, lowest)).toBe(3200)
  })

  it('makes as many attempts as the default schedule without maxAttempts', () => {
    expect(nextAttemptDelay({ base: 1000, jitter: 0 }, 7)).toBe(64000)
    expect(nextAttemptDelay({ base: 1000, jitter: 0 }, 8)).toBeNull()
  })

  it('keeps growing past the length of the default schedule up to a larger maxAttempts', () => {
    expect(nextAttemptDelay({ base: 1000, maxAttempts: 12, jitter: 0 }, 10)).toBe(512_000)
    expect(nextAttemptDelay({ base: 1000, maxAttempts: 12, jitter: 0 }, 11)).toBe(1_024_000)
    expect(nextAttemptDelay({ base: 1000, maxAttempts: 12, jitter: 0 }, 12)).toBeNull()
  })

  it('waits base * factor^(n-1) with a maxAttempts of its own, the default schedule ignored', () => {
    expect(nextAttemptDelay({ base: 10, factor: 10, maxAttempts: 3, jitter: 0 }, 1)).toBe(10)
    expect(nextAttemptDelay({ base: 10, factor: 10, maxAttempts: 3, jitter: 0 }, 2)).toBe(100)
  })
})

describe('retryAfterDelay', () => {
  it('keeps the scheduled delay without a Retry-After', () => {
    expect(retryAfterDelay({}, 5000, 0, highest)).toBe(5000)
    expect(retryAfterDelay({}, 5000, -1000, highest)).toBe(5000)
  })

  it('waits at least the Retry-After, spread upward by the jitter', () => {
    expect(retryAfterDelay({}, 5000, 30_000, lowest)).toBe(30_000)
    expect(retryAfterDelay({}, 5000, 30_000, middle)).toBe(33_000)
    expect(retryAfterDelay({ jitter: 0.5 }, 5000, 30_000, middle)).toBe(37_500)
    expect(retryAfterDelay({ jitter: 0 }, 5000, 30_000, highest)).toBe(30_000)
  })

  it('keeps the scheduled delay when it is longer than the spread Retry-After', () => {
    expect(retryAfterDelay({}, 60_000, 30_000, highest)).toBe(60_000)
  })

  it('rounds to whole milliseconds', () => {
    expect(retryAfterDelay({ jitter: 0.5 }, 0, 1001, () => 0.5)).toBe(1251)
  })
})

describe('retryPolicy', () => {
  const engine = { base: 2000, factor: 3, maxAttempts: 6, jitter: 0.1 }

  it("is the engine's policy without settings of the destination's own", () => {
    expect(retryPolicy(engine, null)).toBe(engine)
    expect(retryPolicy(engine, undefined)).toBe(engine)
    expect(retryPolicy(engine, {})).toEqual(engine)
    expect(retryPolicy(engine, { timeout_ms: 5000 })).toEqual(engine)
  })

  it("replaces the engine's schedule with the destination's list, keeping the engine's jitter but not its cap", () => {
    expect(retryPolicy(engine, { schedule: [1000, 2000] })).toEqual({ schedule: [1000, 2000], jitter: 0.1 })
  })

  it("replaces the engine's schedule with the destination's exponential one, its own jitter first", () => {
    expect(retryPolicy(engine, { schedule: { base: 500 } })).toEqual({ base: 500, factor: undefined, jitter: 0.1 })
    expect(retryPolicy(engine, { schedule: { base: 500, factor: 4, jitter: 0 } })).toEqual({ base: 500, factor: 4, jitter: 0 })
  })

  it('caps whichever schedule applies with max_attempts', () => {
    expect(retryPolicy(engine, { max_attempts: 2 })).toEqual({ ...engine, maxAttempts: 2 })
    expect(retryPolicy(engine, { schedule: [1000], max_attempts: 3 })).toEqual({ schedule: [1000], jitter: 0.1, maxAttempts: 3 })
    expect(retryPolicy({}, { schedule: { base: 500, factor: 2 }, max_attempts: 4 })).toEqual({ base: 500, factor: 2, jitter: undefined, maxAttempts: 4 })
  })

  it('leaves the engine options it was given unchanged', () => {
    const options = { schedule: [1, 2, 3], jitter: 0.2 }
    retryPolicy(options, { max_attempts: 2 })
    expect(options).toEqual({ schedule: [1, 2, 3], jitter: 0.2 })
  })
})

describe('RetryOptionsSchema', () => {
  it('accepts the documented shapes', () => {
    expect(v.safeParse(RetryOptionsSchema, {}).success).toBe(true)
    expect(v.safeParse(RetryOptionsSchema, { schedule: [1000, 60000], jitter: 0.1 }).success).toBe(true)
    expect(v.safeParse(RetryOptionsSchema, { base: 1000, factor: 2, maxAttempts: 10 }).success).toBe(true)
  })

  const rejected: [string, unknown, string][] = [
    ['a negative delay', { schedule: [1000, -1] }, 'must not be negative'],
    ['jitter above 1', { jitter: 1.5 }, 'must be between 0 and 1'],
    ['a fractional maxAttempts', { maxAttempts: 2.5 }, 'must be an integer'],
    ['maxAttempts of 0', { maxAttempts: 0 }, 'must be at least 1'],
    ['a factor below 1', { base: 1000, factor: 0.5 }, 'must be at least 1'],
    ['schedule mixed with base', { schedule: [1], base: 1000 }, 'use either schedule or base/factor, not both'],
    ['factor without base', { factor: 3 }, 'factor needs base'],
    ['an unknown field', { retries: 3 }, 'unexpected field'],
    ['a delay that is not a number', { schedule: ['5s'] }, 'must be a number'],
    ['an infinite delay', { schedule: [Number.POSITIVE_INFINITY] }, 'must be finite'],
    ['a schedule that is not a list', { schedule: 5000 }, 'must be an array of delays in ms'],
    ['a base that is not a number', { base: '1s' }, 'must be a number'],
    ['an infinite base', { base: Number.POSITIVE_INFINITY }, 'must be finite'],
    ['a base of 0', { base: 0 }, 'must be at least 1 ms'],
    ['a factor that is not a number', { base: 1000, factor: 'x' }, 'must be a number'],
    ['an infinite factor', { base: 1000, factor: Number.POSITIVE_INFINITY }, 'must be finite'],
    ['a maxAttempts that is not a number', { maxAttempts: '3' }, 'must be a number'],
    ['a jitter that is not a number', { jitter: 'some' }, 'must be a number'],
    ['a negative jitter', { jitter: -0.1 }, 'must be between 0 and 1'],
    ['schedule mixed with factor', { schedule: [1], factor: 2 }, 'use either schedule or base/factor, not both'],
  ]
  it.each(rejected)('rejects %s', (_name, input, message) => {
    const result = v.safeParse(RetryOptionsSchema, input)
    expect(result.success).toBe(false)
    expect(result.issues?.map((issue) => issue.message)).toContain(message)
  })
})
