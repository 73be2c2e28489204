import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bucketStart } from '../../src/engine/metric-buckets.js'
import { GranularitySchema } from '../../src/model/metrics.js'
import type { AttemptWrite, Storage } from '../../src/storage/storage.js'
import { seedOwners } from '../support/records.js'
import { pgbouncerKind, storageKinds } from '../support/storages.js'
import * as v from 'valibot'

const granularity = (text: string) => v.parse(GranularitySchema, text)
const iso = (d: Date | null) => d?.toISOString() ?? null

/** Times that sit on the edges of buckets: day, Sunday week, month, leap day and year boundaries. */
const edgeTimes = [
  '2024-02-28T23:59:59.999Z',
  '2024-02-29T00:00:00.000Z',
  '2024-03-02T23:59:59.999Z', // a Saturday
  '2024-03-03T00:00:00.000Z', // a Sunday
  '2024-03-31T23:59:59.999Z',
  '2024-04-01T00:00:00.000Z',
  '2024-12-31T23:30:00.000Z',
  '2025-01-01T00:00:00.001Z',
  '2025-06-15T12:34:56.789Z',
]

function attempt(tenant: string, destination: string, n: number, opts: { at: string; status: 'success' | 'failed'; code: number | null; attempt: number; manual?: boolean; topic?: string }): AttemptWrite {
  return {
    attempt: {
      id: `att-m-${tenant}-${n}`,
      tenant_id: tenant,
      event_id: `m-${tenant}-${n}`,
      destination_id: destination,
      delivery_id: `dlv-m-${tenant}-${n}`,
      attempt_number: opts.attempt,
      manual: opts.manual ?? false,
      status: opts.status,
      response_status_code: opts.code,
      response_body: null,
      response_headers: null,
      error: null,
      error_kind: null,
      duration_ms: 1,
      delivered_at: new Date(opts.at),
      topic: opts.topic ?? 'order.created',
      destination_type: destination === 'q1' ? 'cloudx_sqs' : 'webhook',
    },
    delivery: { id: `dlv-m-${tenant}-${n}`, status: opts.status === 'success' ? 'success' : 'failed', next_attempt_at: null, successful_at: null },
  }
}

for (const kind of [...storageKinds(), pgbouncerKind()]) {
  describe.runIf(kind.available)(`storage metrics: ${kind.name}`, () => {
    let s: Storage
    const range = { start: new Date('2026-03-02T00:00:00Z'), end: new Date('2026-03-03T00:00:00Z'), limit: 1000 }

    beforeAll(async () => {
      s = await kind.open()
      await seedOwners(s, { m1: ['d1', 'd2', ['q1', 'cloudx_sqs']], m2: ['d9'], edges: [] })
      // m1: three events at 10:05, 10:40 and 12:00 on 2026-03-02, one of them matched to two destinations;
      // m2: one event at 10:10; plus one event the day before, outside every range below.
      const ev = (tenant: string, id: string, time: string, topic: string, destinations: string[]) => ({
        event: { tenant_id: tenant, id, topic, time: new Date(time), data: {}, metadata: {}, eligible_for_retry: true, created_at: new Date(time) },
        deliveries: destinations.map((d) => ({ id: `dlv-${tenant}-${id}-${d}`, destination_id: d, next_attempt_at: new Date(time) })),
      })
      await s.insertEvents([
        ev('m1', 'a', '2026-03-02T10:05:00Z', 'order.created', ['d1', 'd2']),
        ev('m1', 'b', '2026-03-02T10:40:00Z', 'order.paid', ['d1']),
        ev('m1', 'c', '2026-03-02T12:00:00Z', 'order.created', []),
        ev('m2', 'x', '2026-03-02T10:10:00Z', 'order.created', ['d9']),
        ev('m1', 'old', '2026-03-01T23:59:59.999Z', 'order.created', ['d1']),
      ])
      // Attempts of m1 on 2026-03-02: 10:01 success 200 #1, 10:02 failed 500 #1, 10:30 failed (no response) #2,
      // 11:15 success 200 #3 manual on q1; m2: 10:20 success 204 #1.
      const writes = [
        attempt('m1', 'd1', 1, { at: '2026-03-02T10:01:00Z', status: 'success', code: 200, attempt: 1 }),
        attempt('m1', 'd1', 2, { at: '2026-03-02T10:02:00Z', status: 'failed', code: 500, attempt: 1, topic: 'order.paid' }),
        attempt('m1', 'd2', 3, { at: '2026-03-02T10:30:00Z', status: 'failed', code: null, attempt: 2 }),
        attempt('m1', 'q1', 4, { at: '2026-03-02T11:15:00Z', status: 'success', code: 200, attempt: 3, manual: true }),
        attempt('m2', 'd9', 5, { at: '2026-03-02T10:20:00Z', status: 'success', code: 204, attempt: 1 }),
      ]
      // Each attempt belongs to a delivery of an event a month earlier (outside every range counted below).
      await s.insertEvents(
        writes.map(({ attempt: a }) => ({
          event: { tenant_id: a.tenant_id, id: a.event_id, topic: a.topic ?? 'order.created', time: new Date('2026-02-01T00:00:00Z'), data: {}, metadata: {}, eligible_for_retry: true, created_at: new Date('2026-02-01T00:00:00Z') },
          deliveries: [{ id: a.delivery_id, destination_id: a.destination_id, next_attempt_at: new Date('2026-02-01T00:00:00Z') }],
        })),
      )
      await s.recordAttempts(writes)
    })
    afterAll(() => kind.cleanup())

    it('counts events per hour bucket, computed in SQL', async () => {
      const rows = await s.eventMetrics({ ...range, granularity: granularity('1h'), dimensions: [], filters: {} })
      expect(rows.map((r) => [iso(r.bucket), r.count])).toEqual([
        ['2026-03-02T10:00:00.000Z', 3],
        ['2026-03-02T12:00:00.000Z', 1],
      ])
    })

    it('counts per tenant and topic, and without granularity one row per group', async () => {
      const rows = await s.eventMetrics({ ...range, dimensions: ['tenant_id', 'topic'], filters: {} })
      expect(rows).toEqual([
        { bucket: null, dimensions: { tenant_id: 'm1', topic: 'order.created' }, count: 2 },
        { bucket: null, dimensions: { tenant_id: 'm1', topic: 'order.paid' }, count: 1 },
        { bucket: null, dimensions: { tenant_id: 'm2', topic: 'order.created' }, count: 1 },
      ])
    })

    it('counts an event once per matched destination by destination_id, and filters by destination', async () => {
      const byDestination = await s.eventMetrics({ ...range, dimensions: ['destination_id'], filters: { tenant_id: ['m1'] } })
      expect(byDestination.map((r) => [r.dimensions.destination_id, r.count])).toEqual([
        ['d1', 2],
        ['d2', 1],
      ])
      const filtered = await s.eventMetrics({ ...range, dimensions: [], filters: { destination_id: ['d1', 'd2'] } })
      expect(filtered.map((r) => r.count)).toEqual([2]) // events a and b, a once although it matched both
      const topic = await s.eventMetrics({ ...range, dimensions: [], filters: { topic: ['order.paid'], tenant_id: ['m1', 'm2'] } })
      expect(topic.map((r) => r.count)).toEqual([1])
    })

    it('treats time[start] as inclusive and time[end] as exclusive', async () => {
      const at = (start: string, end: string) => s.eventMetrics({ start: new Date(start), end: new Date(end), limit: 10, dimensions: [], filters: { tenant_id: ['m1'] } })
      expect((await at('2026-03-02T10:05:00Z', '2026-03-02T10:40:00Z')).map((r) => r.count)).toEqual([1])
      expect(await at('2026-03-02T10:06:00Z', '2026-03-02T10:40:00Z')).toEqual([])
    })

    it('returns at most limit + 1 rows', async () => {
      const rows = await s.eventMetrics({ ...range, limit: 1, granularity: granularity('1m'), dimensions: [], filters: {} })
      expect(rows).toHaveLength(2)
    })

    it('aggregates attempts: outcomes, first attempts, retries, manual retries and attempt numbers', async () => {
      const [all] = await s.attemptMetrics({ ...range, dimensions: [], filters: { tenant_id: ['m1'] } })
      expect(all).toEqual({ bucket: null, dimensions: {}, count: 4, successful: 2, failed: 2, first_attempts: 2, retries: 2, manual_retries: 1, attempt_number_sum: 7 })
      const hourly = await s.attemptMetrics({ ...range, granularity: granularity('1h'), dimensions: ['status'], filters: {} })
      expect(hourly.map((r) => [r.dimensions.status, iso(r.bucket), r.count])).toEqual([
        ['failed', '2026-03-02T10:00:00.000Z', 2],
        ['success', '2026-03-02T10:00:00.000Z', 2],
        ['success', '2026-03-02T11:00:00.000Z', 1],
      ])
    })

    it('groups attempts by every dimension, as strings ("" for no response code)', async () => {
      const rows = await s.attemptMetrics({
        ...range,
        dimensions: ['tenant_id', 'destination_id', 'destination_type', 'topic', 'status', 'code', 'manual', 'attempt_number'],
        filters: { tenant_id: ['m1'] },
      })
      expect(rows.map((r) => r.dimensions)).toEqual([
        { tenant_id: 'm1', destination_id: 'd1', destination_type: 'webhook', topic: 'order.created', status: 'success', code: '200', manual: 'false', attempt_number: '1' },
        { tenant_id: 'm1', destination_id: 'd1', destination_type: 'webhook', topic: 'order.paid', status: 'failed', code: '500', manual: 'false', attempt_number: '1' },
        { tenant_id: 'm1', destination_id: 'd2', destination_type: 'webhook', topic: 'order.created', status: 'failed', code: '', manual: 'false', attempt_number: '2' },
        { tenant_id: 'm1', destination_id: 'q1', destination_type: 'cloudx_sqs', topic: 'order.created', status: 'success', code: '200', manual: 'true', attempt_number: '3' },
      ])
    })

    it('filters attempts by each filter', async () => {
      const count = async (filters: Parameters<Storage['attemptMetrics']>[0]['filters']) =>
        (await s.attemptMetrics({ ...range, dimensions: [], filters }))[0]?.count ?? 0
      expect(await count({ destination_id: ['d1'] })).toBe(2)
      expect(await count({ destination_type: ['cloudx_sqs'] })).toBe(1)
      expect(await count({ topic: ['order.paid'] })).toBe(1)
      expect(await count({ status: ['failed'] })).toBe(2)
      expect(await count({ code: [200, 204] })).toBe(3)
      expect(await count({ manual: true })).toBe(1)
      expect(await count({ manual: false })).toBe(4)
      expect(await count({ attempt_number: [2, 3] })).toBe(2)
      expect(await count({ tenant_id: ['m2'], status: ['success'] })).toBe(1)
    })

    describe('buckets in SQL agree with the boundaries the engine fills', () => {
      beforeAll(async () => {
        await s.insertEvents(
          edgeTimes.map((t, i) => ({
            event: { tenant_id: 'edges', id: `e${i}`, topic: 'edge', time: new Date(t), data: {}, metadata: {}, eligible_for_retry: true, created_at: new Date(t) },
            deliveries: [],
          })),
        )
      })

      for (const g of ['30s', '7m', '1h', '5h', '1d', '3d', '1w', '2w', '1M', '2M', '5M']) {
        it(`granularity ${g}`, async () => {
          const parsed = granularity(g)
          const rows = await s.eventMetrics({
            start: new Date('2023-01-01T00:00:00Z'),
            end: new Date('2026-01-01T00:00:00Z'),
            limit: 1000,
            granularity: parsed,
            dimensions: [],
            filters: { tenant_id: ['edges'] },
          })
          const expected = new Map<number, number>()
          for (const t of edgeTimes) {
            const b = bucketStart(Date.parse(t), parsed)
            expected.set(b, (expected.get(b) ?? 0) + 1)
          }
          expect(rows.map((r) => [iso(r.bucket), r.count])).toEqual([...expected].sort(([a], [b]) => a - b).map(([b, n]) => [new Date(b).toISOString(), n]))
        })
      }
    })
  })
}
