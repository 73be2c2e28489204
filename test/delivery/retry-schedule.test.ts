import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { defaultRetrySchedule, nextAttemptDelay, RetryOptionsSchema } from '../../src/delivery/retry-schedule.js'

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
    expect(nextAttemptDelay(options, 4)).toBe(200)
    expect(nextAttemptDelay(options, 5)).toBeNull()
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
  ]
  it.each(rejected)('rejects %s', (_name, input, message) => {
    const result = v.safeParse(RetryOptionsSchema, input)
    expect(result.success).toBe(false)
    expect(result.issues?.map((issue) => issue.message)).toContain(message)
  })
})
