import { beforeAll, describe, expect, it, vi } from 'vitest'
import type { SuiteContext } from './support.js'

const tenant = 'metrics-co'
const day = 'time[start]=2025-05-05T00:00:00Z&time[end]=2025-05-06T00:00:00Z'

/**
 * `GET /metrics/events` and `GET /metrics/attempts`, Outpost's metrics API: parameters, measures,
 * dimensions, filters, the response shape, validation and the tenant rule. Works on a tenant of its own:
 * events at fixed times on 2025-05-05, delivered now to one answering and one failing destination.
 */
export function describeMetrics(ctx: SuiteContext): void {
  describe('metrics API', () => {
    let token: string
    let attempts: string
    let ok: string
    let failing: string

    beforeAll(async () => {
      const started = new Date(Date.now() - 60_000).toISOString()
      await ctx.api('PUT', `/tenants/${tenant}`)
      const destination = async (topic: string, path: string) =>
        (await ctx.api('POST', `/tenants/${tenant}/destinations`, { json: { type: 'webhook', topics: [topic], config: { url: `${ctx.receiverUrl}${path}` } } })).body.id as string
      ok = await destination('m.ok', '/ok')
      failing = await destination('m.fail', '/fail')
      const publish = (id: string, topic: string, time: string) =>
        ctx.api('POST', '/publish', { json: { id, tenant_id: tenant, topic, time, data: {}, eligible_for_retry: false } })
      await publish('m1', 'm.ok', '2025-05-05T10:05:00Z')
      await publish('m2', 'm.ok', '2025-05-05T10:50:00Z')
      await publish('m3', 'm.fail', '2025-05-05T12:00:00Z')
      await publish('m4', 'm.none', '2025-05-05T23:59:59.999Z')
      await vi.waitFor(async () => expect((await ctx.api('GET', `/tenants/${tenant}/events`)).body.models).toHaveLength(3), { timeout: 15_000, interval: 25 })
      // A manual retry of the failed one: attempt #2, manual.
      expect((await ctx.api('POST', `/tenants/${tenant}/destinations/${failing}/events/m3/retry`)).status).toBe(202)
      await vi.waitFor(async () => expect((await ctx.api('GET', `/tenants/${tenant}/events/m3/deliveries`)).body).toHaveLength(2), { timeout: 10_000, interval: 25 })
      attempts = `time[start]=${started}&time[end]=${new Date(Date.now() + 60_000).toISOString()}&filters[tenant_id]=${tenant}`
      token = (await ctx.api('GET', `/tenants/${tenant}/token`)).body.token
    })

    it('GET /metrics/events answers hourly counts in Outpost’s shape, every bucket of the range filled', async () => {
      const res = await ctx.api('GET', `/metrics/events?${day}&granularity=1h&measures[0]=count&filters[tenant_id]=${tenant}`)
      expect(res.status).toBe(200)
      expect(res.body.data).toHaveLength(24)
      expect(res.body.data[0]).toEqual({ time_bucket: '2025-05-05T00:00:00Z', dimensions: {}, metrics: { count: 0 } })
      expect(res.body.data[10]).toEqual({ time_bucket: '2025-05-05T10:00:00Z', dimensions: {}, metrics: { count: 2 } })
      expect(res.body.data[12].metrics).toEqual({ count: 1 })
      expect(res.body.data[23].metrics).toEqual({ count: 1 })
      expect(res.body.metadata).toEqual({ granularity: '1h', query_time_ms: expect.any(Number), row_count: 24, row_limit: 100000, truncated: false })
    })

    it('reads measures and dimensions given once, repeated, as name[] or as name[0], name[1]', async () => {
      const base = `/metrics/events?${day}&filters[tenant_id]=${tenant}`
      const expected = [
        { dimensions: { topic: 'm.fail' }, metrics: { count: 1, rate: 1 / 86_400 } },
        { dimensions: { topic: 'm.none' }, metrics: { count: 1, rate: 1 / 86_400 } },
        { dimensions: { topic: 'm.ok' }, metrics: { count: 2, rate: 2 / 86_400 } },
      ]
      for (const query of ['measures=count&measures=rate&dimensions=topic', 'measures[]=count&measures[]=rate&dimensions[]=topic', 'measures[1]=rate&measures[0]=count&dimensions[0]=topic']) {
        const res = await ctx.api('GET', `${base}&${query}`)
        expect(res.status, JSON.stringify(res.body)).toBe(200)
        expect(res.body.data).toEqual(expected)
        expect(res.body.metadata).not.toHaveProperty('granularity')
      }
    })

    it('groups by destination_id and filters by topic and destination_id', async () => {
      const byDestination = await ctx.api('GET', `/metrics/events?${day}&measures=count&dimensions=destination_id&filters[tenant_id]=${tenant}`)
      expect(byDestination.body.data).toHaveLength(2)
      expect(byDestination.body.data).toEqual(
        expect.arrayContaining([
          { dimensions: { destination_id: ok }, metrics: { count: 2 } },
          { dimensions: { destination_id: failing }, metrics: { count: 1 } },
        ]),
      )
      const topics = await ctx.api('GET', `/metrics/events?${day}&measures=count&filters[topic][0]=m.ok&filters[topic][1]=m.fail&filters[tenant_id]=${tenant}`)
      expect(topics.body.data).toEqual([{ dimensions: {}, metrics: { count: 3 } }])
      const destination = await ctx.api('GET', `/metrics/events?${day}&measures=count&filters[destination_id]=${failing}`)
      expect(destination.body.data).toEqual([{ dimensions: {}, metrics: { count: 1 } }])
    })

    it('GET /metrics/attempts computes every measure', async () => {
      const measures = ['count', 'successful_count', 'failed_count', 'error_rate', 'first_attempt_count', 'retry_count', 'manual_retry_count', 'avg_attempt_number']
      const res = await ctx.api('GET', `/metrics/attempts?${attempts}&${measures.map((m, i) => `measures[${i}]=${m}`).join('&')}`)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.data).toEqual([
        {
          dimensions: {},
          metrics: { count: 4, successful_count: 2, failed_count: 2, error_rate: 0.5, first_attempt_count: 3, retry_count: 1, manual_retry_count: 1, avg_attempt_number: 1.25 },
        },
      ])
      const rates = await ctx.api('GET', `/metrics/attempts?${attempts}&measures=rate&measures=successful_rate&measures=failed_rate`)
      const { rate, successful_rate, failed_rate } = rates.body.data[0].metrics
      expect(rate).toBeCloseTo(2 * successful_rate)
      expect(successful_rate).toBeCloseTo(failed_rate)
    })

    it('groups attempts by status, code, manual, attempt_number and destination_type, values as strings', async () => {
      const res = await ctx.api('GET', `/metrics/attempts?${attempts}&measures=count&dimensions=destination_type&dimensions=status&dimensions=code&dimensions=manual&dimensions=attempt_number`)
      expect(res.body.data).toEqual([
        { dimensions: { destination_type: 'webhook', status: 'failed', code: '500', manual: 'false', attempt_number: '1' }, metrics: { count: 1 } },
        { dimensions: { destination_type: 'webhook', status: 'failed', code: '500', manual: 'true', attempt_number: '2' }, metrics: { count: 1 } },
        { dimensions: { destination_type: 'webhook', status: 'success', code: '200', manual: 'false', attempt_number: '1' }, metrics: { count: 2 } },
      ])
      const filtered = await ctx.api('GET', `/metrics/attempts?${attempts}&measures=count&filters[status]=failed&filters[manual]=true&filters[code]=500&filters[attempt_number]=2&filters[destination_type]=webhook&filters[destination_id]=${failing}&filters[topic]=m.fail`)
      expect(filtered.body.data).toEqual([{ dimensions: {}, metrics: { count: 1 } }])
    })

    it.each([
      ['time', 'measures=count'],
      ['time[start]', 'time[start]=soon&time[end]=2025-05-06T00:00:00Z&measures=count'],
      ['time[end]', 'time[start]=2025-05-06T00:00:00Z&time[end]=2025-05-05T00:00:00Z&measures=count'],
      ['measures', day],
      ['measures', `${day}&measures[0]=count&measures[1]=bogus`],
      ['dimensions', `${day}&measures=count&dimensions=status`],
      ['granularity', `${day}&measures=count&granularity=25h`],
      ['granularity', `${day}&measures=count&granularity=1y`],
      ['granularity', 'time[start]=2025-05-05T00:00:00Z&time[end]=2025-05-07T00:00:00Z&measures=count&granularity=1s'],
      ['filters[status]', `${day}&measures=count&filters[status]=failed`],
      ['limit', `${day}&measures=count&limit=5`],
    ])('GET /metrics/events answers 400 naming %s', async (name, query) => {
      const res = await ctx.api('GET', `/metrics/events?${query}`)
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty([name])
    })

    it.each([
      ['filters[manual]', 'filters[manual]=maybe'],
      ['filters[code]', 'filters[code]=ok'],
      ['filters[destination_type]', 'filters[destination_type]=carrier_pigeon'],
    ])('GET /metrics/attempts answers 400 naming %s', async (name, query) => {
      const res = await ctx.api('GET', `/metrics/attempts?${day}&measures=count&${query}`)
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty([name])
    })

    it('limits a tenant token to its own tenant: tenant_id is admin-only', async () => {
      const all = await ctx.api('GET', `/metrics/events?${day}&measures=count`, { as: token })
      expect(all.status).toBe(200)
      expect(all.body.data).toEqual([{ dimensions: {}, metrics: { count: 4 } }])
      const other = await ctx.api('GET', `/metrics/events?${day}&measures=count`, { as: ctx.tokens.acme })
      expect(other.body.data).toEqual([])
      const own = await ctx.api('GET', `/metrics/attempts?${attempts}&measures=count`, { as: token })
      expect(own.body.data).toEqual([{ dimensions: {}, metrics: { count: 4 } }])
      for (const path of [
        `/metrics/events?${day}&measures=count&dimensions=tenant_id`,
        `/metrics/events?${day}&measures=count&filters[tenant_id]=acme`,
        `/metrics/attempts?${day}&measures=count&filters[tenant_id][0]=${tenant}&filters[tenant_id][1]=acme`,
        `/metrics/attempts?${day}&measures=count&dimensions[]=tenant_id`,
      ]) {
        const res = await ctx.api('GET', path, { as: token })
        expect(res.status, path).toBe(403)
      }
      const admin = await ctx.api('GET', `/metrics/events?${day}&measures=count&dimensions=tenant_id&filters[tenant_id]=${tenant}&filters[tenant_id]=acme`)
      expect(admin.body.data).toEqual([{ dimensions: { tenant_id: tenant }, metrics: { count: 4 } }])
    })
  })
}
