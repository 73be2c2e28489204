import { describe, expect, it } from 'vitest'
import { attemptWrite, deliveryMessage, deliveryMetadata } from '../../src/delivery/attempt.js'
import { defaultRetrySchedule } from '../../src/delivery/retry-schedule.js'
import type { AttemptResult } from '../../src/model/attempt-result.js'
import type { ClaimedDelivery, DestinationRecord } from '../../src/storage/storage.js'

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

describe('attemptWrite: the attempt row', () => {
  it('records a success with its response, no error, the duration rounded, the topic and the destination type', () => {
    const ok: AttemptResult = { ok: true, response_status_code: 204, response_body: 'fine', response_headers: { 'x-id': '1' }, error: 'ignored', error_kind: 'unknown' }
    const write = attemptWrite(claimed(2), 'kafka', ok, at, 12.6, exact)
    expect(write.attempt).toEqual({
      id: expect.stringMatching(/^att_/),
      tenant_id: 't',
      event_id: 'e',
      destination_id: 'd',
      delivery_id: 'dlv',
      attempt_number: 3,
      manual: false,
      status: 'success',
      response_status_code: 204,
      response_body: 'fine',
      response_headers: { 'x-id': '1' },
      error: null,
      error_kind: null,
      duration_ms: 13,
      delivered_at: at,
      topic: 'order.created',
      destination_type: 'kafka',
    })
    expect(write.delivery).toEqual({ id: 'dlv', status: 'success', next_attempt_at: null, successful_at: at })
  })

  it('records a failure without response or kind as unknown, with nulls, and a manual attempt as manual', () => {
    const write = attemptWrite({ ...claimed(0), manual: true }, 'webhook', { ok: false }, at, 0.4, exact)
    expect(write.attempt).toMatchObject({
      manual: true,
      status: 'failed',
      response_status_code: null,
      response_body: null,
      response_headers: null,
      error: null,
      error_kind: 'unknown',
      duration_ms: 0,
    })
    expect(write.attempt.id).not.toBe(attemptWrite(claimed(0), 'webhook', { ok: false }, at, 0, exact).attempt.id)
  })

  it("records a failure's own kind and text", () => {
    expect(attemptWrite(claimed(0), 'webhook', { ok: false, error_kind: 'tls', error: 'certificate has expired' }, at, 1, exact).attempt).toMatchObject({ error_kind: 'tls', error: 'certificate has expired' })
  })
})

describe('attemptWrite: ordered (FIFO) deliveries', () => {
  const ordered = (attemptCount: number, orderKey: string | null) => ({ ...claimed(attemptCount), order_key: orderKey })

  it('carries the ordering key on the delivery update, the empty key included', () => {
    expect(attemptWrite(ordered(0, 'cus_1'), 'webhook', { ok: true }, at, 1, exact).delivery).toEqual({ id: 'dlv', status: 'success', next_attempt_at: null, successful_at: at, order_key: 'cus_1' })
    expect(attemptWrite(ordered(0, ''), 'webhook', failed, at, 1, exact).delivery).toMatchObject({ status: 'pending', order_key: '' })
    expect(attemptWrite(ordered(0, null), 'webhook', failed, at, 1, exact).delivery).not.toHaveProperty('order_key')
  })

  it('keeps an exhausted ordered delivery pending, not due, when the destination blocks on exhaustion', () => {
    expect(attemptWrite(ordered(7, 'cus_1'), 'webhook', failed, at, 1, exact, true).delivery).toEqual({ id: 'dlv', status: 'pending', next_attempt_at: null, successful_at: null, order_key: 'cus_1' })
    expect(attemptWrite(ordered(7, ''), 'webhook', failed, at, 1, exact, true).delivery).toMatchObject({ status: 'pending', next_attempt_at: null })
  })

  it('skips an exhausted ordered delivery unless told to block', () => {
    expect(attemptWrite(ordered(7, 'cus_1'), 'webhook', failed, at, 1, exact).delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
  })

  it('fails an exhausted delivery that is not ordered, or whose destination skips on exhaustion', () => {
    expect(attemptWrite(ordered(7, null), 'webhook', failed, at, 1, exact, true).delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
    expect(attemptWrite(ordered(7, 'cus_1'), 'webhook', failed, at, 1, exact, false).delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
  })
})

describe('attemptWrite: a schedule longer than the Retry-After cap', () => {
  it('keeps a scheduled delay of more than a day, however long the Retry-After', () => {
    const retry = { schedule: [2 * DAY], jitter: 0 }
    expect(delayAfter(0, throttled(30 * DAY), retry)).toBe(2 * DAY)
    expect(delayAfter(0, throttled(HOUR), retry)).toBe(2 * DAY)
  })
})

describe('deliveryMetadata', () => {
  const destination = (deliveryMetadata: Record<string, string> | null) => ({ delivery_metadata: deliveryMetadata }) as DestinationRecord

  it('gives event-id, topic and the event time in whole seconds', () => {
    const d = { ...claimed(0), event: { ...claimed(0).event, time: new Date('2026-03-01T12:00:00.999Z') } }
    expect(deliveryMetadata(d, destination(null))).toEqual({ 'event-id': 'e', topic: 'order.created', timestamp: String(Date.parse('2026-03-01T12:00:00Z') / 1000) })
  })

  it("lets the destination's metadata override those, and the event's override both", () => {
    const d = { ...claimed(0), event: { ...claimed(0).event, metadata: { region: 'eu', source: 'event' } } }
    expect(deliveryMetadata(d, destination({ topic: 'custom', source: 'destination', team: 'billing' }))).toEqual({
      'event-id': 'e',
      topic: 'custom',
      timestamp: String(at.getTime() / 1000),
      source: 'event',
      team: 'billing',
      region: 'eu',
    })
  })
})

describe('deliveryMessage', () => {
  const destination = { delivery_metadata: { team: 'billing' } } as unknown as DestinationRecord

  it('carries the event, the attempt number and the metadata a publisher sends', () => {
    const event = { ...claimed(0).event, data: { amount: 250 }, data_json: '{"amount":250}', metadata: { region: 'eu' } }
    const message = deliveryMessage({ ...claimed(4), event }, destination)
    expect({ ...message, data: message.data }).toEqual({
      id: 'e',
      tenant_id: 't',
      destination_id: 'd',
      topic: 'order.created',
      time: at,
      data: { amount: 250 },
      data_json: '{"amount":250}',
      metadata: { 'event-id': 'e', topic: 'order.created', timestamp: String(at.getTime() / 1000), team: 'billing', region: 'eu' },
      attempt: 5,
    })
    expect(message.ordering_key).toBeUndefined()
    expect(message.trace_headers).toBeUndefined()
  })

  it('reads data from the event when asked, not before', () => {
    let reads = 0
    const event = { ...claimed(0).event }
    Object.defineProperty(event, 'data', { get: () => (reads++, { lazy: true }) })
    const message = deliveryMessage({ ...claimed(0), event }, destination)
    expect(reads).toBe(0)
    expect(message.data).toEqual({ lazy: true })
    expect(reads).toBe(1)
  })

  it('carries the ordering key of an ordered delivery, the empty one included, and the trace headers when given', () => {
    expect(deliveryMessage({ ...claimed(0), order_key: 'cus_1' }, destination).ordering_key).toBe('cus_1')
    expect(deliveryMessage({ ...claimed(0), order_key: '' }, destination).ordering_key).toBe('')
    expect(deliveryMessage({ ...claimed(0), order_key: null }, destination).ordering_key).toBeUndefined()
    expect(deliveryMessage(claimed(0), destination, { traceparent: '00-abc-def-01' }).trace_headers).toEqual({ traceparent: '00-abc-def-01' })
  })
})
