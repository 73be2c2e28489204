import { describe, expect, it } from 'vitest'
import type { Mount } from './mounts.js'
import type { SuiteContext } from './support.js'

const mib = 1024 * 1024

/** Error bodies and the generic statuses: malformed JSON, content type, body limit, unknown routes, methods. */
export function describeErrors(ctx: SuiteContext, mount: Mount): void {
  describe('errors and request handling', () => {
    it('GET /healthz answers 200 without credentials', async () => {
      const res = await ctx.api('GET', '/healthz', { as: null })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ status: 'ok' })
    })

    it('malformed JSON is 400 with a JSON body', async () => {
      const res = await ctx.api('POST', '/tenants/acme/destinations', { raw: '{"type": "webhook",', headers: { 'content-type': 'application/json' } })
      expect(res.status).toBe(400)
      expect(res.body).toMatchObject({ status: 400, message: 'malformed JSON' })
      const put = await ctx.api('PUT', '/tenants/acme', { raw: 'nope', headers: { 'content-type': 'application/json' } })
      expect(put.status).toBe(400)
    })

    it('a body that is not JSON is 415', async () => {
      const res = await ctx.api('POST', '/publish', { raw: 'tenant_id=acme', headers: { 'content-type': 'text/plain' } })
      expect(res.status).toBe(415)
      expect(res.body.status).toBe(415)
      const form = await ctx.api('PATCH', `/tenants/acme/destinations/${ctx.destinations.acmeOk}`, { raw: 'topics=*', headers: { 'content-type': 'application/x-www-form-urlencoded' } })
      expect(form.status).toBe(415)
    })

    it('accepts a JSON content type with a charset', async () => {
      const res = await ctx.api('PUT', '/tenants/acme', { raw: JSON.stringify({ metadata: { name: 'acme' } }), headers: { 'content-type': 'application/json; charset=utf-8' } })
      expect(res.status).toBe(200)
    })

    it('a body over 1 MiB is 413 and stores nothing', async () => {
      const data = { blob: 'x'.repeat(mib) }
      const res = await ctx.api('POST', '/publish', { json: { id: 'too-big', tenant_id: 'acme', topic: 'order.created', data } })
      expect(res.status).toBe(413)
      expect(res.body.status).toBe(413)
      expect((await ctx.api('GET', '/tenants/acme/events/too-big')).status).toBe(404)
    })

    it('a body under the limit is accepted', async () => {
      const res = await ctx.api('POST', '/publish', { json: { tenant_id: 'acme', topic: 'no.match', data: { blob: 'x'.repeat(64 * 1024) } } })
      expect(res.status).toBe(202)
    })

    it.each(['/nope', '/tenants/acme/nope', '/tenants/acme/destinations/a/b/c/d/e', '/'])('unknown route %s is 404 with a JSON body', async (path) => {
      const res = await ctx.api('GET', path)
      expect(res.status).toBe(404)
      expect(res.body).toMatchObject({ status: 404, message: expect.stringContaining('route not found') })
    })

    it.each([
      ['DELETE', '/tenants', 'GET'],
      ['POST', '/tenants/acme', 'GET, PUT, DELETE'],
      ['GET', '/publish', 'POST'],
      ['PATCH', '/events', 'GET'],
      ['GET', `/tenants/acme/destinations/x/enable`, 'PUT'],
      ['PUT', '/tenants/acme/destinations', 'GET, POST'],
    ])('%s %s is 405 with Allow: %s', async (method, path, allow) => {
      const res = await ctx.api(method, path)
      expect(res.status).toBe(405)
      expect(res.body.status).toBe(405)
      expect(res.headers.get('allow')).toBe(allow)
    })

    it('OPTIONS lists the methods of a path', async () => {
      const res = await fetch(`${ctx.baseUrl}/tenants/acme`, { method: 'OPTIONS' })
      expect(res.status).toBe(204)
      expect(res.headers.get('allow')).toBe('GET, PUT, DELETE, OPTIONS')
    })

    it('answers JSON with Cache-Control: no-store', async () => {
      const res = await ctx.api('GET', '/tenants/acme')
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(res.headers.get('cache-control')).toBe('no-store')
    })

    it('a malformed percent-encoding in the path is 400', async () => {
      const res = await ctx.api('GET', '/tenants/%E0%A4%A')
      expect(res.status).toBe(400)
    })

    if (mount.servesUnprefixed)
      it('serves paths without the /api/v1 prefix too', async () => {
        const origin = ctx.baseUrl.replace(/\/api\/v1$/, '')
        const res = await fetch(`${origin}/tenants/acme`, { headers: { authorization: `Bearer ${ctx.tokens.acme}` } })
        expect(res.status).toBe(200)
      })
  })
}
