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

    describe('JSON nested too deep', () => {
      /** Raw JSON text: `levels` arrays nested in one another (JSON.stringify itself overflows on such values). */
      const arrays = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`
      const json = { 'content-type': 'application/json' }
      const cases: [method: string, path: () => string, body: (v: string) => string, field: string][] = [
        ['PUT', () => '/tenants/acme', (v) => `{"metadata":{"v":${v}}}`, 'metadata'],
        ['POST', () => '/tenants/acme/destinations', (v) => `{"type":"relay","topics":"*","config":{"v":${v}},"credentials":{"token":"relay-token"}}`, 'config'],
        ['POST', () => '/tenants/acme/destinations', (v) => `{"type":"webhook","topics":"*","config":{"url":"https://e.com"},"filter":{"data":${v}}}`, 'filter'],
        ['PATCH', () => `/tenants/acme/destinations/${ctx.destinations.acmeOk}`, (v) => `{"metadata":{"v":${v}}}`, 'metadata'],
        ['POST', () => '/publish', (v) => `{"tenant_id":"acme","topic":"no.match","data":{"v":${v}}}`, 'data'],
      ]

      it.each(cases)('%s %s nested 5,000 levels deep is 422 naming the field, never a 500', async (method, path, body, field) => {
        const res = await ctx.api(method, path(), { raw: body(arrays(5000)), headers: json })
        expect(res.status).toBe(422)
        expect(res.body).toEqual({ status: 422, message: 'validation error', data: { [field]: 'nested deeper than 32 levels' } })
      })

      it.each(cases)('%s %s: 32 levels in the field are accepted, 33 refused', async (method, path, body, field) => {
        // The arrays sit one level inside the field.
        expect((await ctx.api(method, path(), { raw: body(arrays(31)), headers: json })).status).toBeLessThan(300)
        const res = await ctx.api(method, path(), { raw: body(arrays(32)), headers: json })
        expect(res.status).toBe(422)
        expect(res.body.data).toEqual({ [field]: 'nested deeper than 32 levels' })
      })

      it('answers 401, not 422, to a deep body without credentials', async () => {
        const res = await ctx.api('POST', '/publish', { as: null, raw: `{"tenant_id":"acme","topic":"x","data":{"v":${arrays(5000)}}}`, headers: json })
        expect(res.status).toBe(401)
      })
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
