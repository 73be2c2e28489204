import { describe, expect, it } from 'vitest'
import type { SuiteContext } from './support.js'

type EventModel = { id: string; destination_id: string; status: string; time: string; topic: string }
const ids = (body: { models: EventModel[] }) => body.models.map((e) => e.id)

/** Publish, the event listings with every query parameter, event reads, attempts and the deprecated routes. */
export function describeEvents(ctx: SuiteContext): void {
  describe('publish', () => {
    it('POST /publish answers 202 with the id and matched destinations, and is idempotent on id', async () => {
      const body = { id: 'pub-1', tenant_id: 'acme', topic: 'no.match', data: { n: 1 } }
      const first = await ctx.api('POST', '/publish', { json: body })
      expect(first.status).toBe(202)
      expect(first.body).toEqual({ id: 'pub-1', duplicate: false, destination_ids: [] })
      const again = await ctx.api('POST', '/publish', { json: body })
      expect(again.status).toBe(202)
      expect(again.body.duplicate).toBe(true)
      const generated = await ctx.api('POST', '/publish', { json: { tenant_id: 'acme', topic: 'no.match', data: {} } })
      expect(generated.body.id).toMatch(/^evt_/)
    })

    it('POST /publish for an unknown tenant is 404, an invalid event 422', async () => {
      expect((await ctx.api('POST', '/publish', { json: { tenant_id: 'nobody', topic: 'a', data: {} } })).status).toBe(404)
      const invalid = await ctx.api('POST', '/publish', { json: { tenant_id: 'acme', topic: 'a b', data: 'x' } })
      expect(invalid.status).toBe(422)
      expect(invalid.body.data).toHaveProperty('topic')
      expect(invalid.body.data).toHaveProperty('data')
    })
  })

  describe('GET /events (admin)', () => {
    it('lists every tenant’s events, newest first, with defaults limit 100, order_by time, dir desc', async () => {
      const res = await ctx.api('GET', '/events')
      expect(res.status).toBe(200)
      expect(res.body.pagination).toMatchObject({ order_by: 'time', dir: 'desc', limit: 100, next: null, prev: null })
      expect(ids(res.body)).toEqual(['g1', 'e4', 'e3', 'e2', 'e1'])
      expect(res.body.models[0]).toMatchObject({ id: 'g1', destination_id: ctx.destinations.globexOk, topic: 'order.created', time: ctx.times[4], status: 'success', data: { id: 'g1' } })
      expect(res.body.models[1]).toMatchObject({ id: 'e4', status: 'failed', successful_at: null })
    })

    it('filters by tenant_id, destination_id and topic, each repeatable', async () => {
      expect(ids((await ctx.api('GET', '/events?tenant_id=globex')).body)).toEqual(['g1'])
      expect(ids((await ctx.api('GET', '/events?tenant_id=globex&tenant_id=acme')).body)).toHaveLength(5)
      expect(ids((await ctx.api('GET', `/events?destination_id=${ctx.destinations.acmeFailing}`)).body)).toEqual(['e4'])
      expect(ids((await ctx.api('GET', `/events?destination_id=${ctx.destinations.acmeFailing}&destination_id=${ctx.destinations.globexOk}`)).body)).toEqual(['g1', 'e4'])
      expect(ids((await ctx.api('GET', '/events?topic=order.failed')).body)).toEqual(['e4'])
      expect(ids((await ctx.api('GET', '/events?topic=order.failed&topic=order.created')).body)).toHaveLength(5)
    })

    it('filters by time[gte] and time[lte], and sorts with dir=asc', async () => {
      const res = await ctx.api('GET', `/events?time[gte]=${ctx.times[1]}&time%5Blte%5D=${ctx.times[3]}&dir=asc`)
      expect(res.status).toBe(200)
      expect(ids(res.body)).toEqual(['e2', 'e3', 'e4'])
    })

    it('pages with limit, next and prev', async () => {
      const first = await ctx.api('GET', '/events?limit=2')
      expect(ids(first.body)).toEqual(['g1', 'e4'])
      const second = await ctx.api('GET', `/events?limit=2&next=${first.body.pagination.next}`)
      expect(ids(second.body)).toEqual(['e3', 'e2'])
      const back = await ctx.api('GET', `/events?limit=2&prev=${second.body.pagination.prev}`)
      expect(ids(back.body)).toEqual(['g1', 'e4'])
      expect((await ctx.api('GET', '/events?limit=2&next=garbage')).status).toBe(400)
    })

    it.each([
      ['limit', '0'],
      ['limit', '1001'],
      ['dir', 'sideways'],
      ['order_by', 'created_at'],
      ['time[gte]', 'soon'],
      ['time[lte]', '2024-13-45'],
      ['status', 'failed'],
      ['colour', 'blue'],
    ])('rejects %s=%s with 400 naming it', async (name, value) => {
      const res = await ctx.api('GET', `/events?${encodeURIComponent(name)}=${value}`)
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty([name])
    })

    it('accepts limit=1000', async () => {
      expect((await ctx.api('GET', '/events?limit=1000')).body.pagination.limit).toBe(1000)
    })
  })

  describe('GET /tenants/{id}/events', () => {
    it('lists only the tenant’s events', async () => {
      const res = await ctx.api('GET', '/tenants/acme/events', { as: ctx.tokens.acme })
      expect(res.status).toBe(200)
      expect(res.body.pagination).toMatchObject({ order_by: 'time', dir: 'desc', limit: 100 })
      expect(ids(res.body)).toEqual(['e4', 'e3', 'e2', 'e1'])
    })

    it('filters by status, destination_id (repeatable) and time, and pages', async () => {
      expect(ids((await ctx.api('GET', '/tenants/acme/events?status=failed')).body)).toEqual(['e4'])
      expect(ids((await ctx.api('GET', '/tenants/acme/events?status=success')).body)).toEqual(['e3', 'e2', 'e1'])
      expect(ids((await ctx.api('GET', `/tenants/acme/events?destination_id=${ctx.destinations.acmeFailing}`)).body)).toEqual(['e4'])
      expect(ids((await ctx.api('GET', `/tenants/acme/events?destination_id=${ctx.destinations.acmeFailing}&destination_id=${ctx.destinations.acmeOk}`)).body)).toHaveLength(4)
      expect(ids((await ctx.api('GET', `/tenants/acme/events?time[lte]=${ctx.times[1]}`)).body)).toEqual(['e2', 'e1'])
      expect(ids((await ctx.api('GET', `/tenants/acme/events?time[gte]=${ctx.times[2]}&dir=asc&order_by=time`)).body)).toEqual(['e3', 'e4'])
      const first = await ctx.api('GET', '/tenants/acme/events?limit=3')
      expect(ids(first.body)).toEqual(['e4', 'e3', 'e2'])
      const second = await ctx.api('GET', `/tenants/acme/events?limit=3&next=${first.body.pagination.next}`)
      expect(ids(second.body)).toEqual(['e1'])
      expect(ids((await ctx.api('GET', `/tenants/acme/events?limit=3&prev=${second.body.pagination.prev}`)).body)).toEqual(['e4', 'e3', 'e2'])
    })

    it.each([
      ['status', 'pending'],
      ['limit', '1001'],
      ['limit', 'ten'],
      ['dir', 'ASC'],
      ['order_by', 'topic'],
      ['time[gte]', 'x'],
      ['tenant_id', 'acme'],
      ['prev', '!!'],
    ])('rejects %s=%s with 400 naming it', async (name, value) => {
      const res = await ctx.api('GET', `/tenants/acme/events?${encodeURIComponent(name)}=${value}`)
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty([name])
    })

    it('filters by topic (repeatable; an addition to the spec, which has it on the admin list only)', async () => {
      expect(ids((await ctx.api('GET', '/tenants/acme/events?topic=order.failed', { as: ctx.tokens.acme })).body)).toEqual(['e4'])
      expect(ids((await ctx.api('GET', '/tenants/acme/events?topic=order.failed&topic=order.created')).body)).toEqual(['e4', 'e3', 'e2', 'e1'])
      expect(ids((await ctx.api('GET', '/tenants/acme/events?topic=order.created&status=success&limit=2')).body)).toEqual(['e3', 'e2'])
      expect(ids((await ctx.api('GET', '/tenants/acme/events?topic=no.such.topic')).body)).toEqual([])
    })

    it('never lists another tenant’s events, even naming its destination', async () => {
      const res = await ctx.api('GET', `/tenants/acme/events?destination_id=${ctx.destinations.globexOk}`)
      expect(res.status).toBe(200)
      expect(res.body.models).toEqual([])
    })
  })

  describe('GET /tenants/{id}/events/{event_id} and /deliveries', () => {
    it('returns the event, optionally for one destination', async () => {
      const res = await ctx.api('GET', '/tenants/acme/events/e1', { as: ctx.tokens.acme })
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ id: 'e1', destination_id: ctx.destinations.acmeOk, topic: 'order.created', status: 'success', metadata: { source: 'test' }, data: { id: 'e1' } })
      expect(Date.parse(res.body.successful_at)).not.toBeNaN()
      const forDestination = await ctx.api('GET', `/tenants/acme/events/e1?destination_id=${ctx.destinations.acmeOk}`)
      expect(forDestination.status).toBe(200)
      expect((await ctx.api('GET', `/tenants/acme/events/e1?destination_id=${ctx.destinations.acmeFailing}`)).status).toBe(404)
      const bad = await ctx.api('GET', '/tenants/acme/events/e1?destination_id=')
      expect(bad.status).toBe(400)
      expect(bad.body.data).toHaveProperty('destination_id')
    })

    it('lists the attempts of an event', async () => {
      const res = await ctx.api('GET', '/tenants/acme/events/e4/deliveries', { as: ctx.tokens.acme })
      expect(res.status).toBe(200)
      expect(res.body.length).toBeGreaterThanOrEqual(1)
      expect(res.body[0]).toMatchObject({ destination_id: ctx.destinations.acmeFailing, status: 'failed', response_status_code: 500, response_body: 'nope' })
      expect(Date.parse(res.body[0].delivered_at)).not.toBeNaN()
      const ok = await ctx.api('GET', '/tenants/acme/events/e1/deliveries')
      expect(ok.body[0]).toMatchObject({ status: 'success', response_status_code: 200, response_body: 'ok' })
    })

    it('unknown events are 404, and so are another tenant’s events under this tenant’s path', async () => {
      for (const as of ['admin', ctx.tokens.acme]) {
        expect((await ctx.api('GET', '/tenants/acme/events/nope', { as })).status).toBe(404)
        expect((await ctx.api('GET', '/tenants/acme/events/g1', { as })).status).toBe(404)
        expect((await ctx.api('GET', '/tenants/acme/events/g1/deliveries', { as })).status).toBe(404)
      }
      expect((await ctx.api('GET', '/tenants/globex/events/e1', { as: ctx.tokens.acme })).status).toBe(403)
    })
  })

  describe('deprecated by-destination routes', () => {
    const base = () => `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events`

    it('GET …/destinations/{d}/events lists that destination’s events with Deprecation: true', async () => {
      const res = await ctx.api('GET', base(), { as: ctx.tokens.acme })
      expect(res.status).toBe(200)
      expect(res.headers.get('deprecation')).toBe('true')
      expect(ids(res.body)).toEqual(['e3', 'e2', 'e1'])
      expect(ids((await ctx.api('GET', `${base()}?status=failed`)).body)).toEqual([])
      expect(ids((await ctx.api('GET', `${base()}?limit=1&dir=asc&time[gte]=${ctx.times[1]}&time[lte]=${ctx.times[2]}`)).body)).toEqual(['e2'])
    })

    it('…/events pages with limit, order_by, next and prev', async () => {
      const first = await ctx.api('GET', `${base()}?limit=2&order_by=time`)
      expect(ids(first.body)).toEqual(['e3', 'e2'])
      const second = await ctx.api('GET', `${base()}?limit=2&next=${first.body.pagination.next}`)
      expect(ids(second.body)).toEqual(['e1'])
      expect(second.body.pagination.next).toBeNull()
      expect(ids((await ctx.api('GET', `${base()}?limit=2&prev=${second.body.pagination.prev}`)).body)).toEqual(['e3', 'e2'])
    })

    it.each([
      ['destination_id', 'x'],
      ['status', 'done'],
      ['limit', '0'],
    ])('…/events rejects %s=%s with 400 naming it, still deprecated', async (name, value) => {
      const res = await ctx.api('GET', `${base()}?${name}=${value}`)
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty([name])
      expect(res.headers.get('deprecation')).toBe('true')
    })

    it('GET …/destinations/{d}/events/{e} returns the event with Deprecation: true', async () => {
      const res = await ctx.api('GET', `${base()}/e2`, { as: ctx.tokens.acme })
      expect(res.status).toBe(200)
      expect(res.headers.get('deprecation')).toBe('true')
      expect(res.body).toMatchObject({ id: 'e2', destination_id: ctx.destinations.acmeOk })
      const missing = await ctx.api('GET', `${base()}/e4`)
      expect(missing.status).toBe(404)
      expect(missing.headers.get('deprecation')).toBe('true')
    })

    it('POST …/retry answers 202 { success: true } and records a new attempt', async () => {
      const before = (await ctx.api('GET', '/tenants/acme/events/e4/deliveries')).body.length
      const res = await ctx.api('POST', `/tenants/acme/destinations/${ctx.destinations.acmeFailing}/events/e4/retry`, { as: ctx.tokens.acme })
      expect(res.status).toBe(202)
      expect(res.body).toEqual({ success: true })
      expect(res.headers.get('deprecation')).toBe('true')
      await expect.poll(async () => (await ctx.api('GET', '/tenants/acme/events/e4/deliveries')).body.length, { timeout: 10_000, interval: 25 }).toBe(before + 1)
    })

    it('POST …/retry on a disabled destination is 409, on an unknown event 404', async () => {
      const path = `/tenants/acme/destinations/${ctx.destinations.acmeOk}`
      await ctx.api('PUT', `${path}/disable`)
      try {
        const res = await ctx.api('POST', `${path}/events/e1/retry`)
        expect(res.status).toBe(409)
        expect(res.headers.get('deprecation')).toBe('true')
      } finally {
        await ctx.api('PUT', `${path}/enable`)
      }
      expect((await ctx.api('POST', `${path}/events/nope/retry`)).status).toBe(404)
      expect((await ctx.api('POST', `/tenants/acme/destinations/${ctx.destinations.globexOk}/events/g1/retry`)).status).toBe(404)
    })
  })
}
