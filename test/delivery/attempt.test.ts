import { describe, expect, it } from 'vitest'
import { attemptWrite } from '../../src/delivery/attempt.js'
import { defaultRetrySchedule } from '../../src/delivery/retry-schedule.js'
import type { AttemptResult } from '../../src/model/attempt-result.js'
import type { ClaimedDelivery } from '../../src/storage/storage.js'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const at = new Date('2026-03-01T12:00:00.000Z')
/** The default schedule without jitter, so every delay is exact. */
const exact = { jitter: 0 }

function claimed(attemptCount: number, eligibleForRetry = true): ClaimedDelivery {
  const event = { tenant_id: 't', id: 'e', topic: 'order.created', time: at, data: {}, metadata: {}, eligible_for_retry: eligibleForRetry, created_at: at }
  return { id: 'dlv', tenant_id: 't', event_id: 'e', destination_id: 'd', attempt_count: attemptCount, manual: false, event }
}

const failed: AttemptResult = { ok: false, response_status_code: 500, error_kind: 'unknown', error: 'HTTP 500' }
const throttled = (retryAfterMs: number, status = 429): AttemptResult => ({ ok: false, response_status_code: status, error_kind: 'throttled', retry_after_ms: retryAfterMs })
/** How long after the attempt the next one is scheduled, or null when none is. */
const delayAfter = (attemptCount: number, result: AttemptResult, retry = exact) => {
  const next = attemptWrite(claimed(attemptCount), 'webhook', result, at, 5, retry).delivery.next_attempt_at
  return next === null ? null : next.getTime() - at.getTime()
}

describe('attemptWrite: when the next attempt is scheduled', () => {
  it('schedules attempt n + 1 exactly the n-th delay of the schedule after attempt n, then gives up after the 8th', () => {
    const delays = Array.from({ length: 8 }, (_, n) => delayAfter(n, failed))
    expect(delays).toEqual([...defaultRetrySchedule, null])
    const last = attemptWrite(claimed(7), 'webhook', failed, at, 5, exact)
    expect(last.delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
    expect(last.attempt.attempt_number).toBe(8)
  })

  it('follows a configured schedule exactly, from the first retry on', () => {
    const retry = { schedule: [60, 120, 180], jitter: 0 }
    expect([0, 1, 2, 3].map((n) => delayAfter(n, failed, retry))).toEqual([60, 120, 180, null])
  })

  it('keeps the pending delivery pending and records the attempt number it made', () => {
    const write = attemptWrite(claimed(2), 'webhook', failed, at, 5, exact)
    expect(write.delivery).toEqual({ id: 'dlv', status: 'pending', next_attempt_at: new Date(at.getTime() + defaultRetrySchedule[2]!), successful_at: null })
    expect(write.attempt).toMatchObject({ attempt_number: 3, status: 'failed', delivered_at: at })
  })

  it('waits for a Retry-After longer than the scheduled delay, and no longer', () => {
    expect(delayAfter(0, throttled(90_000))).toBe(90_000)
    expect(delayAfter(0, throttled(90_000, 503))).toBe(90_000)
  })

  // Fault scenario 6 (retry storm): a burst told one Retry-After came back at exactly that delay, together.
  it('spreads a Retry-After upward by the jitter: never sooner, and not all at the same moment', () => {
    const delays = Array.from({ length: 200 }, () => delayAfter(0, throttled(90_000, 503), { jitter: 0.2 })!)
    for (const d of delays) {
      expect(d).toBeGreaterThanOrEqual(90_000)
      expect(d).toBeLessThanOrEqual(108_000)
    }
    expect(new Set(delays).size).toBeGreaterThan(150)
  })

  it('keeps the scheduled delay when Retry-After asks for less', () => {
    expect(delayAfter(1, throttled(1_000))).toBe(defaultRetrySchedule[1])
  })

  it('caps Retry-After at 24 hours, however far the receiver asks (a hostile one cannot park a delivery for a year)', () => {
    expect(delayAfter(0, throttled(365 * DAY))).toBe(DAY)
    expect(delayAfter(0, throttled(Number.MAX_SAFE_INTEGER, 503))).toBe(DAY)
    expect(delayAfter(0, throttled(DAY + 1))).toBe(DAY)
    expect(delayAfter(0, throttled(DAY - 1))).toBe(DAY - 1)
  })

  it('never schedules past the last attempt, whatever Retry-After says', () => {
    expect(delayAfter(7, throttled(HOUR))).toBeNull()
  })

  it('schedules nothing after a success, a 410 Gone, or an event not eligible for retry', () => {
    expect(attemptWrite(claimed(0), 'webhook', { ok: true, response_status_code: 200 }, at, 5, exact).delivery).toEqual({ id: 'dlv', status: 'success', next_attempt_at: null, successful_at: at })
    expect(attemptWrite(claimed(0), 'webhook', { ...failed, response_status_code: 410, disable: true }, at, 5, exact).delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
    expect(attemptWrite(claimed(0, false), 'webhook', throttled(1_000), at, 5, exact).delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
  })
})
