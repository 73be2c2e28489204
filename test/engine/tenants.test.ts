import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { verifyTenantToken } from '../../src/tokens.js'
import { engineKinds, jwtSecret, rejection, snapshot } from '../support/engines.js'

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`engine tenants: ${kind.name}`, () => {
    let outflow: Outflow
    beforeAll(async () => {
      outflow = await kind.create({ portal: { url: 'https://app.example.com/webhooks' } })
    })
    afterAll(() => kind.cleanup())

    it('creates a tenant (created: true) and updates it (created: false), keeping metadata when the body has none', async () => {
      const a = await outflow.upsertTenant('acme', { metadata: { plan: 'pro' } })
      expect(a.created).toBe(true)
      expect(a.tenant).toMatchObject({ id: 'acme', destinations_count: 0, topics: [], metadata: { plan: 'pro' } })
      expect(Date.parse(a.tenant.created_at)).not.toBeNaN()
      const b = await outflow.upsertTenant('acme')
      expect(b.created).toBe(false)
      expect(b.tenant.metadata).toEqual({ plan: 'pro' })
      expect((await outflow.getTenant('acme')).metadata).toEqual({ plan: 'pro' })
    })

    it.each([
      ['too long', 'x'.repeat(129)],
      ['bad characters', 'a b/c'],
      ['empty', ''],
    ])('rejects a tenant id that is %s with 422 naming tenant_id, writing nothing', async (_, id) => {
      const before = await snapshot(outflow)
      const err = await rejection(outflow.upsertTenant(id, {}))
      expect(err.status).toBe(422)
      expect(Object.keys(err.data!)).toEqual(['tenant_id'])
      expect(await snapshot(outflow)).toBe(before)
    })

    it.each([
      ['an unexpected field', { metadata: {}, plan: 'x' }, 'plan'],
      ['metadata that is not an object', { metadata: 'pro' }, 'metadata'],
      ['a body that is not an object', [1, 2], '(body)'],
    ])('rejects %s with 422, writing nothing', async (_, body, field) => {
      const before = await snapshot(outflow)
      const err = await rejection(outflow.upsertTenant('new-tenant', body))
      expect(err.status).toBe(422)
      expect(err.data).toHaveProperty([field])
      expect(await snapshot(outflow)).toBe(before)
      expect(await rejection(outflow.getTenant('new-tenant'))).toMatchObject({ status: 404 })
    })

    it('returns 404 for an unknown tenant on get, delete, token and portal', async () => {
      for (const call of [() => outflow.getTenant('ghost'), () => outflow.deleteTenant('ghost'), () => outflow.getTenantToken('ghost'), () => outflow.getPortalRedirect('ghost')])
        expect((await rejection(call())).status).toBe(404)
    })

    describe('listing', () => {
      beforeAll(async () => {
        for (let i = 0; i < 25; i++) await outflow.upsertTenant(`list-${String(i).padStart(2, '0')}`, {})
      })

      it('defaults to 20 per page, newest first, with the total count', async () => {
        const page = await outflow.listTenants()
        expect(page.models).toHaveLength(20)
        expect(page.pagination).toMatchObject({ order_by: 'created_at', dir: 'desc', limit: 20, prev: null })
        expect(page.pagination.next).toEqual(expect.any(String))
        expect(page.count).toBe(26)
        const times = page.models.map((t) => Date.parse(t.created_at))
        expect([...times].sort((a, b) => b - a)).toEqual(times)
      })

      it('walks every tenant exactly once with next, and back with prev', async () => {
        const seen: string[] = []
        let next: string | null = null
        const pages = []
        do {
          const page: Awaited<ReturnType<Outflow['listTenants']>> = await outflow.listTenants({ limit: 7, dir: 'asc', ...(next ? { next } : {}) })
          pages.push(page)
          seen.push(...page.models.map((t) => t.id))
          next = page.pagination.next
        } while (next)
        expect(seen).toHaveLength(26)
        expect(new Set(seen).size).toBe(26)
        const back = await outflow.listTenants({ limit: 7, dir: 'asc', prev: pages[2]!.pagination.prev! })
        expect(back.models.map((t) => t.id)).toEqual(pages[1]!.models.map((t) => t.id))
      })

      it('pages exactly while tenants are inserted between requests', async () => {
        const first = await outflow.listTenants({ limit: 5, dir: 'asc' })
        await outflow.upsertTenant('zz-late-arrival', {})
        const second = await outflow.listTenants({ limit: 5, dir: 'asc', next: first.pagination.next! })
        const all = await outflow.listTenants({ limit: 100, dir: 'asc' })
        expect(second.models.map((t) => t.id)).toEqual(all.models.slice(5, 10).map((t) => t.id))
      })

      it('filters by created_at[gte] and created_at[lte]', async () => {
        const all = await outflow.listTenants({ limit: 100, dir: 'asc' })
        const mid = all.models[10]!.created_at
        const gte = await outflow.listTenants({ limit: 100, dir: 'asc', 'created_at[gte]': mid })
        expect(gte.models.every((t) => t.created_at >= mid)).toBe(true)
        expect(gte.count).toBe(gte.models.length)
        const lte = await outflow.listTenants({ limit: 100, 'created_at[lte]': mid })
        expect(lte.models.every((t) => t.created_at <= mid)).toBe(true)
        expect(gte.count + lte.count).toBeGreaterThanOrEqual(all.count)
      })

      it.each([
        ['limit 0', { limit: 0 }, 'limit'],
        ['limit 101', { limit: 101 }, 'limit'],
        ['limit "abc"', { limit: 'abc' }, 'limit'],
        ['dir sideways', { dir: 'sideways' }, 'dir'],
        ['order_by id', { order_by: 'id' }, 'order_by'],
        ['a created_at[gte] that is not a date-time', { 'created_at[gte]': 'yesterday' }, 'created_at[gte]'],
        ['a malformed cursor', { next: 'not-a-cursor' }, 'next'],
        ['both next and prev', { next: 'a', prev: 'b' }, 'next'],
        ['an unknown parameter', { color: 'red' }, 'color'],
      ])('rejects %s with 400 naming the parameter', async (_, query, param) => {
        const err = await rejection(outflow.listTenants(query as never))
        expect(err.status).toBe(400)
        expect(err.data).toHaveProperty([param])
      })

      it('rejects a cursor from another listing or direction with 400', async () => {
        const events = await outflow.listEvents('acme', { limit: 1 })
        expect(events.pagination.next).toBeNull()
        const { encodeCursor } = await import('../../src/model/pagination.js')
        const eventsCursor = encodeCursor('events', 'desc', [Date.now(), 'e', 'd'])
        expect((await rejection(outflow.listTenants({ next: eventsCursor }))).data).toEqual({ next: 'cursor belongs to another listing' })
        const page = await outflow.listTenants({ limit: 2 })
        expect((await rejection(outflow.listTenants({ dir: 'asc', next: page.pagination.next! }))).status).toBe(400)
      })
    })

    it('counts destinations (disabled too) and unions their topics, sorted', async () => {
      await outflow.upsertTenant('topical', {})
      await outflow.createDestination('topical', { type: 'webhook', topics: ['order.paid', 'order.created'], config: { url: 'https://example.com/a' } })
      const d = await outflow.createDestination('topical', { type: 'webhook', topics: ['user.created', 'order.paid'], config: { url: 'https://example.com/b' } })
      await outflow.disableDestination('topical', d.id)
      expect(await outflow.getTenant('topical')).toMatchObject({ destinations_count: 2, topics: ['order.created', 'order.paid', 'user.created'] })
    })

    it('deletes a tenant with its destinations; the id re-created starts empty', async () => {
      await outflow.upsertTenant('doomed', { metadata: { a: 1 } })
      await outflow.createDestination('doomed', { id: 'd1', type: 'webhook', topics: '*', config: { url: 'https://example.com/x' } })
      expect(await outflow.deleteTenant('doomed')).toEqual({ success: true })
      expect((await rejection(outflow.getTenant('doomed'))).status).toBe(404)
      const again = await outflow.upsertTenant('doomed')
      expect(again).toMatchObject({ created: true, tenant: { destinations_count: 0, metadata: {} } })
      expect(await outflow.listDestinations('doomed')).toEqual([])
    })

    it('issues a tenant token (HS256 JWT, sub = tenant)', async () => {
      const { token, tenant_id } = await outflow.getTenantToken('acme')
      expect(tenant_id).toBe('acme')
      expect(await outflow.verifyTenantToken(token)).toBe('acme')
      expect(await verifyTenantToken(jwtSecret, token)).toMatchObject({ tenantId: 'acme' })
      expect(await verifyTenantToken('another-secret-0123456789', token)).toBeNull()
    })

    it('redirects to portal.url with a code and the theme; the code gives a tenant token once', async () => {
      const portal = await outflow.getPortalRedirect('acme', { theme: 'dark' }, { portalUrl: 'https://ignored.example.com/portal/' })
      const url = new URL(portal.redirect_url)
      expect(url.origin + url.pathname).toBe('https://app.example.com/webhooks')
      expect(url.searchParams.get('theme')).toBe('dark')
      expect(url.searchParams.has('token')).toBe(false)
      const code = url.searchParams.get('code')!
      const session = await outflow.exchangePortalCode({ code })
      expect(session.tenant_id).toBe('acme')
      expect(await outflow.verifyTenantToken(session.token)).toBe('acme')
      expect((await rejection(outflow.exchangePortalCode({ code }))).status).toBe(401)
      expect((await rejection(outflow.getPortalRedirect('acme', { theme: 'blue' }))).data).toHaveProperty(['theme'])
      expect((await rejection(outflow.exchangePortalCode({ code: 7 }))).status).toBe(422)
    })

    it('refuses a portal code after its 5 minutes', async () => {
      const code = new URL((await outflow.getPortalRedirect('acme')).redirect_url).searchParams.get('code')!
      const live = new URL((await outflow.getPortalRedirect('acme')).redirect_url).searchParams.get('code')!
      // Only Date is faked: storage and its timers run as usual.
      vi.useFakeTimers({ toFake: ['Date'] })
      try {
        vi.setSystemTime(Date.now() + 4 * 60_000)
        expect((await outflow.exchangePortalCode({ code: live })).tenant_id).toBe('acme')
        vi.setSystemTime(Date.now() + 60_000 + 1)
        expect((await rejection(outflow.exchangePortalCode({ code }))).status).toBe(401)
      } finally {
        vi.useRealTimers()
      }
    })
  })
}
