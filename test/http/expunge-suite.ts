import { describe, expect, it } from 'vitest'
import type { SuiteContext } from './support.js'

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

/** Erasure over HTTP: per-id answers, range jobs, tenant isolation and validation. Its events are its own (the seeded ones stay). */
export function describeExpunge(ctx: SuiteContext): void {
  describe('POST /tenants/{id}/events/expunge', () => {
    /** Publish to acme's `ok` destination and wait for its attempt, so the event is in the log. */
    const delivered = async (time?: string) => {
      const id = unique('erase')
      expect((await ctx.api('POST', '/publish', { json: { id, tenant_id: 'acme', topic: 'order.created', data: { email: `${id}@example.com` }, ...(time ? { time } : {}) } })).status).toBe(202)
      await expect.poll(async () => (await ctx.api('GET', `/tenants/acme/events/${id}/deliveries`)).status, { timeout: 10_000, interval: 25 }).toBe(200)
      return id
    }

    it('erases by ids (tenant token): 200 per id, expunged or not_found (another tenant\'s event is not_found); reads show data null and expunged_at', async () => {
      const id = await delivered()
      const res = await ctx.api('POST', '/tenants/acme/events/expunge', { as: ctx.tokens.acme, json: { ids: [id, 'g1', 'nope', id] } })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ results: [{ id, status: 'expunged' }, { id: 'g1', status: 'not_found' }, { id: 'nope', status: 'not_found' }] })
      const event = await ctx.api('GET', `/tenants/acme/events/${id}`)
      expect(event.body).toMatchObject({ id, data: null, topic: 'order.created', status: 'success', expunged_at: expect.any(String) })
      expect((await ctx.api('GET', `/tenants/acme/events/${id}/deliveries`)).body).toMatchObject([{ status: 'success', response_status_code: 200, response_body: null }])
      const listed = (await ctx.api('GET', '/tenants/acme/events?limit=1000')).body.models.find((e: { id: string }) => e.id === id)
      expect(listed).toMatchObject({ data: null, expunged_at: event.body.expunged_at })
      // Another tenant's event of that id is untouched; erasing again answers the same and changes nothing.
      expect((await ctx.api('GET', '/tenants/globex/events/g1')).body.data).toEqual({ id: 'g1' })
      const again = await ctx.api('POST', '/tenants/acme/events/expunge', { json: { ids: [id] } })
      expect(again.body).toEqual({ results: [{ id, status: 'expunged' }] })
      expect((await ctx.api('GET', `/tenants/acme/events/${id}`)).body.expunged_at).toBe(event.body.expunged_at)
      // Never sent again: a retry is a 409.
      expect((await ctx.api('POST', `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events/${id}/retry`)).status).toBe(409)
    })

    it('erases a time range of one topic as a job: 202, then GET /tenants/{id}/expunges/{job_id} until done', async () => {
      const [a, b] = [await delivered('2025-06-01T10:00:00Z'), await delivered('2025-06-01T11:00:00Z')]
      const outside = await delivered('2025-06-03T00:00:00Z')
      const res = await ctx.api('POST', '/tenants/acme/events/expunge', { as: ctx.tokens.acme, json: { from: '2025-06-01T00:00:00Z', to: '2025-06-02T00:00:00Z', topic: 'order.created' } })
      expect(res.status).toBe(202)
      expect(res.body).toMatchObject({ id: expect.any(String), status: 'created', expunged: 0, criteria: { from: '2025-06-01T00:00:00.000Z', to: '2025-06-02T00:00:00.000Z', topic: 'order.created' }, finished_at: null })
      const path = `/tenants/acme/expunges/${res.body.id}`
      await expect.poll(async () => (await ctx.api('GET', path, { as: ctx.tokens.acme })).body.status, { timeout: 10_000, interval: 25 }).toBe('done')
      expect((await ctx.api('GET', path)).body).toMatchObject({ status: 'done', expunged: 2, finished_at: expect.any(String) })
      for (const id of [a, b]) expect((await ctx.api('GET', `/tenants/acme/events/${id}`)).body.data).toBeNull()
      expect((await ctx.api('GET', `/tenants/acme/events/${outside}`)).body.data).toEqual({ email: `${outside}@example.com` })
      // Another tenant's path does not find the job; a tenant token cannot reach another tenant's.
      expect((await ctx.api('GET', `/tenants/globex/expunges/${res.body.id}`)).status).toBe(404)
      expect((await ctx.api('GET', path, { as: ctx.tokens.globex })).status).toBe(403)
      expect((await ctx.api('POST', '/tenants/acme/events/expunge', { as: ctx.tokens.globex, json: { ids: [a] } })).status).toBe(403)
    })

    it('takes up to 1,000 ids', async () => {
      const ids = Array.from({ length: 1000 }, (_, i) => `none-${i}`)
      const res = await ctx.api('POST', '/tenants/acme/events/expunge', { json: { ids } })
      expect(res.status).toBe(200)
      expect(res.body.results).toHaveLength(1000)
      expect(res.body.results.every((r: { status: string }) => r.status === 'not_found')).toBe(true)
    })

    it.each([
      ['no ids nor range', {}, 'ids'],
      ['empty ids', { ids: [] }, 'ids'],
      ['1,001 ids', { ids: Array.from({ length: 1001 }, (_, i) => `e${i}`) }, 'ids'],
      ['a malformed id', { ids: ['ok', 'not an id'] }, 'ids.1'],
      ['ids with a range', { ids: ['e1'], from: '2024-01-01T00:00:00Z' }, 'from'],
      ['ids with a topic', { ids: ['e1'], topic: 'order.created' }, 'topic'],
      ['to before from', { from: '2024-01-02T00:00:00Z', to: '2024-01-01T00:00:00Z' }, 'to'],
      ['a bad date', { from: 'yesterday' }, 'from'],
      ['an unknown field', { ids: ['e1'], all: true }, 'all'],
    ])('answers 422 for %s, naming the field, and erases nothing', async (_, json, field) => {
      const res = await ctx.api('POST', '/tenants/acme/events/expunge', { json })
      expect(res.status).toBe(422)
      expect(res.body.data).toHaveProperty([field])
      expect((await ctx.api('GET', '/tenants/acme/events/e1')).body.data).toEqual({ id: 'e1' })
    })

    it('answers 404 for an unknown tenant, 400 for a body that is not JSON, 415 for one that is not declared JSON', async () => {
      expect((await ctx.api('POST', '/tenants/nobody/events/expunge', { json: { ids: ['e1'] } })).status).toBe(404)
      expect((await ctx.api('GET', '/tenants/nobody/expunges/exp_1')).status).toBe(404)
      expect((await ctx.api('POST', '/tenants/acme/events/expunge', { raw: '{"ids":', headers: { 'content-type': 'application/json' } })).status).toBe(400)
      expect((await ctx.api('POST', '/tenants/acme/events/expunge', { raw: 'ids=e1', headers: { 'content-type': 'text/plain' } })).status).toBe(415)
      expect((await ctx.api('GET', '/tenants/acme/expunges/exp_nope')).status).toBe(404)
    })
  })
}
