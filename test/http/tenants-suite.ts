import { describe, expect, it } from 'vitest'
import { type SuiteContext, portalUrl } from './support.js'

/** Tenants, their listing query, portal and token routes. */
export function describeTenants(ctx: SuiteContext): void {
  describe('tenants', () => {
    it('PUT /tenants/{id} answers 201 when it creates and 200 when it updates', async () => {
      const created = await ctx.api('PUT', '/tenants/t-upsert', { json: { metadata: { plan: 'free' } } })
      expect(created.status).toBe(201)
      expect(created.body).toMatchObject({ id: 't-upsert', destinations_count: 0, topics: [], metadata: { plan: 'free' } })
      expect(Date.parse(created.body.created_at)).not.toBeNaN()
      const updated = await ctx.api('PUT', '/tenants/t-upsert', { json: { metadata: { plan: 'pro' } } })
      expect(updated.status).toBe(200)
      expect(updated.body.metadata).toEqual({ plan: 'pro' })
    })

    it('PUT /tenants/{id} accepts no body at all', async () => {
      expect((await ctx.api('PUT', '/tenants/t-nobody')).status).toBe(201)
      const again = await ctx.api('PUT', '/tenants/t-nobody')
      expect(again.status).toBe(200)
      expect(again.body.id).toBe('t-nobody')
    })

    it('PUT /tenants/{id} with invalid metadata is 422 naming the field', async () => {
      const res = await ctx.api('PUT', '/tenants/t-bad', { json: { metadata: 'nope' } })
      expect(res.status).toBe(422)
      expect(res.body).toMatchObject({ status: 422, data: { metadata: expect.any(String) } })
    })

    it('a tenant id outside the id rules is 400 naming tenant_id', async () => {
      const res = await ctx.api('PUT', '/tenants/bad%20id', { json: {} })
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty('tenant_id')
    })

    it('GET /tenants/{id} returns the tenant with its destinations and topics', async () => {
      const res = await ctx.api('GET', '/tenants/acme')
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ id: 'acme', destinations_count: 2, topics: ['order.created', 'order.failed'], metadata: { name: 'acme' } })
    })

    it('GET /tenants/{id} of an unknown tenant is 404 with a JSON body', async () => {
      const res = await ctx.api('GET', '/tenants/nobody')
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ status: 404, message: expect.any(String) })
    })

    it('DELETE /tenants/{id} answers { success: true }, then the tenant is gone', async () => {
      await ctx.api('PUT', '/tenants/t-delete')
      const res = await ctx.api('DELETE', '/tenants/t-delete')
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ success: true })
      expect((await ctx.api('GET', '/tenants/t-delete')).status).toBe(404)
      expect((await ctx.api('DELETE', '/tenants/t-delete')).status).toBe(404)
    })

    describe('GET /tenants query', () => {
      it('defaults to limit 20, order_by created_at, dir desc, and counts all tenants', async () => {
        const res = await ctx.api('GET', '/tenants')
        expect(res.status).toBe(200)
        expect(res.body.pagination).toMatchObject({ order_by: 'created_at', dir: 'desc', limit: 20 })
        expect(res.body.count).toBeGreaterThanOrEqual(2)
        const times = res.body.models.map((t: { created_at: string }) => t.created_at)
        expect(times).toEqual([...times].sort().reverse())
      })

      it.each(['1', '100'])('accepts limit=%s', async (limit) => {
        const res = await ctx.api('GET', `/tenants?limit=${limit}`)
        expect(res.status).toBe(200)
        expect(res.body.pagination.limit).toBe(Number(limit))
      })

      it.each(['0', '101', 'abc', '1.5', ''])('rejects limit=%s with 400 naming limit', async (limit) => {
        const res = await ctx.api('GET', `/tenants?limit=${limit}`)
        expect(res.status).toBe(400)
        expect(res.body.data).toHaveProperty('limit')
      })

      it('rejects a repeated limit', async () => {
        const res = await ctx.api('GET', '/tenants?limit=1&limit=2')
        expect(res.status).toBe(400)
        expect(res.body.data).toHaveProperty('limit')
      })

      it('sorts ascending with dir=asc and rejects other dir values', async () => {
        const asc = await ctx.api('GET', '/tenants?dir=asc&limit=100')
        expect(asc.status).toBe(200)
        const times = asc.body.models.map((t: { created_at: string }) => t.created_at)
        expect(times).toEqual([...times].sort())
        const bad = await ctx.api('GET', '/tenants?dir=up')
        expect(bad.status).toBe(400)
        expect(bad.body.data).toHaveProperty('dir')
      })

      it('accepts order_by=created_at only', async () => {
        expect((await ctx.api('GET', '/tenants?order_by=created_at')).status).toBe(200)
        const bad = await ctx.api('GET', '/tenants?order_by=id')
        expect(bad.status).toBe(400)
        expect(bad.body.data).toHaveProperty('order_by')
      })

      it('filters with created_at[gte] and created_at[lte]', async () => {
        const acme = (await ctx.api('GET', '/tenants/acme')).body
        const globex = (await ctx.api('GET', '/tenants/globex')).body
        const gte = await ctx.api('GET', `/tenants?limit=100&created_at[gte]=${encodeURIComponent(globex.created_at)}`)
        expect(gte.status).toBe(200)
        expect(gte.body.models.map((t: { id: string }) => t.id)).toContain('globex')
        for (const t of gte.body.models) expect(t.created_at >= globex.created_at).toBe(true)
        const lte = await ctx.api('GET', `/tenants?limit=100&created_at%5Blte%5D=${encodeURIComponent(acme.created_at)}`)
        expect(lte.status).toBe(200)
        expect(lte.body.models.map((t: { id: string }) => t.id)).toContain('acme')
        for (const t of lte.body.models) expect(t.created_at <= acme.created_at).toBe(true)
      })

      it.each(['created_at[gte]', 'created_at[lte]'])('rejects a malformed %s with 400 naming it', async (name) => {
        const res = await ctx.api('GET', `/tenants?${name}=yesterday`)
        expect(res.status).toBe(400)
        expect(res.body.data).toHaveProperty([name])
      })

      it('pages with next and prev cursors, without gaps or duplicates', async () => {
        const all = (await ctx.api('GET', '/tenants?limit=100')).body.models.map((t: { id: string }) => t.id)
        const seen: string[] = []
        let page = await ctx.api('GET', '/tenants?limit=1')
        seen.push(...page.body.models.map((t: { id: string }) => t.id))
        expect(page.body.pagination.prev).toBeNull()
        const second = await ctx.api('GET', `/tenants?limit=1&next=${page.body.pagination.next}`)
        expect(second.status).toBe(200)
        page = second
        while (page.body.pagination.next) {
          seen.push(...page.body.models.map((t: { id: string }) => t.id))
          page = await ctx.api('GET', `/tenants?limit=1&next=${page.body.pagination.next}`)
        }
        seen.push(...page.body.models.map((t: { id: string }) => t.id))
        expect(seen).toEqual(all)
        const back = await ctx.api('GET', `/tenants?limit=1&prev=${second.body.pagination.prev}`)
        expect(back.status).toBe(200)
        expect(back.body.models[0].id).toBe(all[0])
      })

      it.each(['next', 'prev'])('rejects a malformed %s cursor with 400 naming it', async (name) => {
        const res = await ctx.api('GET', `/tenants?${name}=not-a-cursor`)
        expect(res.status).toBe(400)
        expect(res.body.data).toHaveProperty(name)
      })

      it('rejects next and prev together', async () => {
        const first = await ctx.api('GET', '/tenants?limit=1')
        const cursor = first.body.pagination.next
        const res = await ctx.api('GET', `/tenants?limit=1&next=${cursor}&prev=${cursor}`)
        expect(res.status).toBe(400)
      })

      it('rejects an unknown query parameter with 400 naming it', async () => {
        const res = await ctx.api('GET', '/tenants?colour=blue')
        expect(res.status).toBe(400)
        expect(res.body.data).toHaveProperty('colour')
      })
    })

    const codeOf = async (tenant = 'acme', theme?: string) => {
      const res = await ctx.api('GET', `/tenants/${tenant}/portal${theme ? `?theme=${theme}` : ''}`)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      return new URL(res.body.redirect_url).searchParams.get('code')!
    }
    const exchange = (code: unknown) => ctx.api('POST', '/portal/sessions', { as: null, json: { code } })

    it('GET /tenants/{id}/portal returns portal.url with a single-use sign-in code and the theme, never a token', async () => {
      const res = await ctx.api('GET', '/tenants/acme/portal?theme=dark')
      expect(res.status).toBe(200)
      expect(res.body.tenant_id).toBe('acme')
      const url = new URL(res.body.redirect_url)
      expect(`${url.origin}${url.pathname}`).toBe(portalUrl)
      expect(url.searchParams.get('theme')).toBe('dark')
      expect([...url.searchParams.keys()].sort()).toEqual(['code', 'theme'])
      expect(url.searchParams.get('code')).toMatch(/^[\w-]{43}$/)
      expect(new URL((await ctx.api('GET', '/tenants/acme/portal?theme=light')).body.redirect_url).searchParams.get('theme')).toBe('light')
      expect(new URL((await ctx.api('GET', '/tenants/acme/portal')).body.redirect_url).searchParams.has('theme')).toBe(false)
    })

    it('POST /portal/sessions exchanges a code once, without credentials, for a token of that tenant', async () => {
      const code = await codeOf('globex')
      const res = await exchange(code)
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body).toEqual({ token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/), tenant_id: 'globex' })
      expect((await ctx.api('GET', '/tenants/globex/destinations', { as: res.body.token })).status).toBe(200)
      expect((await ctx.api('GET', '/tenants/acme/destinations', { as: res.body.token })).status).toBe(403)
      const again = await exchange(code)
      expect(again.status).toBe(401)
      expect(again.body.message).toMatch(/invalid, expired or already used/)
      expect(again.headers.get('www-authenticate')).toMatch(/^Bearer/)
    })

    it('POST /portal/sessions gives a code to one of several requests using it at once', async () => {
      const code = await codeOf()
      const statuses = (await Promise.all(Array.from({ length: 6 }, () => exchange(code)))).map((r) => r.status).sort()
      expect(statuses).toEqual([200, 401, 401, 401, 401, 401])
    })

    it('POST /portal/sessions refuses an unknown code (401), a code of a deleted or re-created tenant (401) and bad bodies (422, 400)', async () => {
      expect((await exchange('not-a-code-0123456789012345678901234567890')).status).toBe(401)
      await ctx.api('PUT', '/tenants/t-portal-gone')
      const orphan = await codeOf('t-portal-gone')
      const recreated = await codeOf('t-portal-gone')
      expect((await ctx.api('DELETE', '/tenants/t-portal-gone')).status).toBe(200)
      expect((await exchange(orphan)).status).toBe(401)
      await ctx.api('PUT', '/tenants/t-portal-gone')
      expect((await exchange(recreated)).status).toBe(401)
      for (const body of [{}, { code: 5 }, { code: '' }, { code: 'x'.repeat(257) }, { code: 'abc', tenant_id: 'acme' }]) {
        const res = await ctx.api('POST', '/portal/sessions', { as: null, json: body })
        expect(res.status, JSON.stringify(body)).toBe(422)
        expect(Object.keys(res.body.data).length).toBeGreaterThan(0)
      }
      expect((await ctx.api('POST', '/portal/sessions', { as: null, raw: '{"code":', headers: { 'content-type': 'application/json' } })).status).toBe(400)
    })

    it('GET /tenants/{id}/portal rejects an unknown theme with 400 naming theme', async () => {
      const res = await ctx.api('GET', '/tenants/acme/portal?theme=blue')
      expect(res.status).toBe(400)
      expect(res.body.data).toHaveProperty('theme')
      expect((await ctx.api('GET', '/tenants/nobody/portal')).status).toBe(404)
    })

    it('GET /tenants/{id}/token returns a tenant JWT that authenticates as that tenant', async () => {
      const res = await ctx.api('GET', '/tenants/globex/token')
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/), tenant_id: 'globex' })
      expect((await ctx.api('GET', '/tenants/globex', { as: res.body.token })).status).toBe(200)
      expect((await ctx.api('GET', '/tenants/nobody/token')).status).toBe(404)
    })
  })
}
