import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds, rejection } from '../support/engines.js'

/** Events published at fixed times (no destinations), so only event metrics see them. */
const times = ['2024-02-10T08:00:00Z', '2024-02-29T23:00:00Z', '2024-03-03T00:00:00Z', '2024-03-20T12:00:00Z']

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`engine metrics: ${kind.name}`, () => {
    let outflow: Outflow
    beforeAll(async () => {
      outflow = await kind.create()
      for (const tenant of ['alpha', 'beta']) await outflow.upsertTenant(tenant)
      await outflow.publishMany(times.map((time, i) => ({ id: `a${i}`, tenant_id: 'alpha', topic: i % 2 ? 'odd' : 'even', time, data: {} })))
      await outflow.publish({ id: 'b0', tenant_id: 'beta', topic: 'even', time: times[0], data: {} })
    })
    afterAll(() => kind.cleanup())

    it('takes typed queries: Dates, single values or lists', async () => {
      const res = await outflow.eventMetrics({ time: { start: new Date('2024-02-01T00:00:00Z'), end: new Date('2024-04-01T00:00:00Z') }, measures: 'count', dimensions: ['tenant_id'] })
      expect(res.data).toEqual([
        { dimensions: { tenant_id: 'alpha' }, metrics: { count: 4 } },
        { dimensions: { tenant_id: 'beta' }, metrics: { count: 1 } },
      ])
    })

    it('fills calendar months and divides rates by each month’s own length', async () => {
      const res = await outflow.eventMetrics(
        { time: { start: '2024-02-15T00:00:00Z', end: '2024-04-01T00:00:00Z' }, granularity: '1M', measures: ['count', 'rate'], filters: { tenant_id: 'alpha' } },
      )
      expect(res.data).toEqual([
        { time_bucket: '2024-02-01T00:00:00Z', dimensions: {}, metrics: { count: 1, rate: 1 / (29 * 86_400) } }, // the 10th is before the range
        { time_bucket: '2024-03-01T00:00:00Z', dimensions: {}, metrics: { count: 2, rate: 2 / (31 * 86_400) } },
      ])
      expect(res.metadata.granularity).toBe('1M')
    })

    it('starts weeks on Sunday and fills every week of every group', async () => {
      const res = await outflow.eventMetrics({ time: { start: '2024-02-25T00:00:00Z', end: '2024-03-10T00:00:00Z' }, granularity: '1w', measures: 'count', dimensions: 'topic', filters: { tenant_id: ['alpha'] } })
      expect(res.data.map((p) => [p.dimensions.topic, p.time_bucket, p.metrics.count])).toEqual([
        ['even', '2024-02-25T00:00:00Z', 0],
        ['even', '2024-03-03T00:00:00Z', 1],
        ['odd', '2024-02-25T00:00:00Z', 1],
        ['odd', '2024-03-03T00:00:00Z', 0],
      ])
    })

    it('stops at the row limit, says the answer is truncated, and refuses more than 100,000 buckets', async () => {
      // 1s buckets over a day: 86,400 slots per group; one group fits the 100,000-row limit, two do not.
      const day = (date: string) => ({ start: `${date}T00:00:00Z`, end: new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000) })
      const one = await outflow.eventMetrics({ time: day('2024-02-29'), granularity: '1s', measures: 'count', dimensions: 'tenant_id' })
      expect(one.metadata).toMatchObject({ row_count: 86_400, row_limit: 100_000, truncated: false })
      const two = await outflow.eventMetrics({ time: day('2024-02-10'), granularity: '1s', measures: 'count', dimensions: 'tenant_id' })
      expect(two.metadata).toMatchObject({ row_count: 100_000, truncated: true })
      expect(two.data).toHaveLength(100_000)
      // Over 100,000 slots is refused outright.
      const err = await rejection(outflow.eventMetrics({ time: { start: '2024-02-10T00:00:00Z', end: '2024-02-12T00:00:00Z' }, granularity: '1s', measures: 'count' }))
      expect(err.data).toHaveProperty(['granularity'])
    })

    it('scopes a tenant: sees only its own events, may not group or filter by other tenants', async () => {
      const time = { start: '2024-01-01T00:00:00Z', end: '2025-01-01T00:00:00Z' }
      expect((await outflow.eventMetrics({ time, measures: 'count' }, { tenantId: 'beta' })).data).toEqual([{ dimensions: {}, metrics: { count: 1 } }])
      expect((await outflow.eventMetrics({ time, measures: 'count', filters: { tenant_id: 'beta' } }, { tenantId: 'beta' })).data).toHaveLength(1)
      for (const query of [{ dimensions: ['tenant_id' as const] }, { filters: { tenant_id: ['alpha'] } }]) {
        const err = await rejection(outflow.attemptMetrics({ time, measures: 'count', ...query }, { tenantId: 'beta' }))
        expect(err.status).toBe(403)
      }
    })

    it('answers 400 naming the parameter in bracket notation', async () => {
      const err = await rejection(outflow.attemptMetrics({ time: { start: '2024-01-02T00:00:00Z', end: '2024-01-01T00:00:00Z' }, measures: ['count'], filters: { code: ['2xx'] } }))
      expect(err.status).toBe(400)
      expect(err.data).toEqual({ 'time[end]': 'must be after time[start]', 'filters[code][0]': 'must be an HTTP status code' })
    })
  })
}
