import http from 'node:http'
import { gunzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { createHttpHandler } from '../../src/http/handler.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { hostPagePath, portalMounts, type PortalHost } from '../support/portal-mounts.js'

const apiKey = 'portal-admin-key-0123456789'
const jwtSecret = 'portal-jwt-secret-0123456789'
const admin = { authorization: `Bearer ${apiKey}` }

interface RawResponse {
  status: number
  headers: http.IncomingHttpHeaders
  body: Buffer
}

/** One request with the path sent exactly as given (fetch would normalise `..`) and the body as transferred. */
function raw(origin: string, path: string, options: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const headers = { ...options.headers, ...(options.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(options.body)) }) }
    const request = http.request(`${origin}${path}`, { method: options.method ?? 'GET', headers }, (response) => {
      const chunks: Buffer[] = []
      response.on('data', (c: Buffer) => chunks.push(c))
      response.on('end', () => resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks) }))
    })
    request.on('error', reject)
    request.end(options.body)
  })
}

const json = (r: RawResponse) => JSON.parse(r.body.toString('utf8'))

function engine(portal: Parameters<typeof createOutflow>[0]['portal'] = {}): Promise<Outflow> {
  return createOutflow({ storage: sqlite({ path: ':memory:' }), apiKey, jwtSecret, portal })
}

async function signInLink(host: PortalHost, query = '', headers: Record<string, string> = {}): Promise<string> {
  const res = await raw(host.origin, `/api/v1/tenants/acme/portal${query}`, { headers: { ...admin, ...headers } })
  expect(res.status, res.body.toString()).toBe(200)
  return json(res).redirect_url as string
}

/** The files index.html loads: its script and stylesheet. */
function assetsOf(html: string): string[] {
  return [...html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => m[1]!)
}

for (const mount of portalMounts) {
  describe(`built-in portal via ${mount.name}`, () => {
    let outflow: Outflow
    let host: PortalHost
    beforeAll(async () => {
      outflow = await engine()
      await outflow.upsertTenant('acme')
      host = await mount.start(outflow)
    })
    afterAll(async () => {
      await host?.close()
      await outflow?.close()
    })

    it('GET /tenants/{id}/portal links to the portal on the host the request came to, with a code and the theme', async () => {
      const link = new URL(await signInLink(host, '?theme=dark'))
      expect(`${link.origin}${link.pathname}`).toBe(`${host.origin}/portal/`)
      expect(link.searchParams.get('theme')).toBe('dark')
      expect(link.searchParams.get('code')).toMatch(/^[\w-]{43}$/)
      const forwarded = new URL(await signInLink(host, '', { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'hooks.example.com' }))
      expect(`${forwarded.origin}${forwarded.pathname}`).toBe('https://hooks.example.com/portal/')
    })

    it('serves the page with a strict CSP, no caching, its theme and the API prefix it calls', async () => {
      const link = new URL(await signInLink(host, '?theme=dark'))
      const page = await raw(host.origin, `${link.pathname}${link.search}`)
      expect(page.status).toBe(200)
      expect(page.headers['content-type']).toBe('text/html; charset=utf-8')
      expect(page.headers['cache-control']).toBe('no-store')
      const csp = page.headers['content-security-policy']!
      for (const directive of ["default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'self'", "base-uri 'none'", "require-trusted-types-for 'script'"])
        expect(csp).toContain(directive)
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|\*/)
      expect(page.headers).toMatchObject({ 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'SAMEORIGIN' })
      const html = page.body.toString('utf8')
      expect(html).toContain('<html lang="en" data-theme="dark">')
      expect(html).toContain('<meta name="outflow-api" content="/api/v1">')
      expect(html).not.toMatch(/<script(?![^>]*\bsrc=)/)
      expect((await raw(host.origin, '/portal/index.html')).body.toString()).toContain('<html lang="en">')
    })

    it('serves hashed assets with their content types, cached for a year, gzipped when asked, HEAD without a body', async () => {
      const html = (await raw(host.origin, '/portal/')).body.toString()
      const assets = assetsOf(html)
      expect(assets.map((a) => a.replace(/-[A-Z0-9]{8}\./, '-HASH.')).sort()).toEqual(['assets/main-HASH.css', 'assets/main-HASH.js'])
      for (const asset of assets) {
        const plain = await raw(host.origin, `/portal/${asset}`)
        expect(plain.status).toBe(200)
        expect(plain.headers['content-type']).toBe(asset.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8')
        expect(plain.headers['cache-control']).toBe('public, max-age=31536000, immutable')
        expect(plain.headers['content-security-policy']).toContain("default-src 'none'")
        expect(plain.headers['content-encoding']).toBeUndefined()
        const gzipped = await raw(host.origin, `/portal/${asset}`, { headers: { 'accept-encoding': 'br, gzip;q=0.8' } })
        expect(gzipped.headers['content-encoding']).toBe('gzip')
        expect(gzipped.headers.vary).toBe('Accept-Encoding')
        expect(gunzipSync(gzipped.body).equals(plain.body)).toBe(true)
        expect(gzipped.body.length).toBeLessThan(plain.body.length)
        expect((await raw(host.origin, `/portal/${asset}`, { headers: { 'accept-encoding': 'gzip;q=0' } })).headers['content-encoding']).toBeUndefined()
        const head = await raw(host.origin, `/portal/${asset}`, { method: 'HEAD' })
        expect(head.status).toBe(200)
        expect(head.body.length).toBe(0)
        expect(head.headers['content-length']).toBe(String(plain.body.length))
      }
    })

    it('redirects /portal to /portal/ keeping the query (the page loads its assets relatively)', async () => {
      const res = await raw(host.origin, '/portal?code=abc&theme=light')
      expect(res.status).toBe(308)
      expect(new URL(res.headers.location!, `${host.origin}/portal`).toString()).toBe(`${host.origin}/portal/?code=abc&theme=light`)
    })

    it('answers 404 in JSON for files it does not have', async () => {
      for (const path of ['/portal/assets/nope.js', '/portal/assets/', '/portal/assets/..%2f..%2fpackage.json', '/portal/assets/%2E%2E%5C%2E%2E%5Cindex.html']) {
        const res = await raw(host.origin, path)
        expect(res.status, path).toBe(404)
        expect(res.headers['content-type'], path).toMatch(/^application\/json/)
      }
    })

    it('serves nothing outside its files for paths that climb out of assets/ (404, from the portal or the host)', async () => {
      // URL parsing resolves `..` and `%2e%2e` first: such paths leave /portal, where the host framework answers.
      for (const path of ['/portal/assets/%2e%2e/%2e%2e/package.json', '/portal/assets/../../package.json', '/portal/../package.json', '/portal/assets/%2e%2e/%2e%2e/src/index.ts', '/portal/assets/.']) {
        const res = await raw(host.origin, path)
        expect(res.status, path).toBe(404)
        expect(res.body.toString(), path).not.toMatch(/devDependencies|createOutflow/)
      }
    })

    it('answers other methods on the portal with 405 and Allow: GET, HEAD', async () => {
      for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await raw(host.origin, '/portal/', { method, headers: { 'content-type': 'application/json' }, body: '{}' })
        expect(res.status, method).toBe(405)
        expect(res.headers.allow).toBe('GET, HEAD')
      }
    })

    it('leaves the API and the host’s own routes alone', async () => {
      const code = new URL(await signInLink(host)).searchParams.get('code')
      const session = await raw(host.origin, '/api/v1/portal/sessions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ code }) })
      expect(session.status).toBe(200)
      expect(json(session).tenant_id).toBe('acme')
      expect((await raw(host.origin, '/api/v1/healthz')).status).toBe(200)
      if (!mount.name.startsWith('bare')) expect((await raw(host.origin, hostPagePath)).body.toString()).toBe('the host')
    })
  })
}

describe('built-in portal options', () => {
  const hosts: PortalHost[] = []
  const engines: Outflow[] = []
  const start = async (portal: Parameters<typeof engine>[0]) => {
    const outflow = await engine(portal)
    engines.push(outflow)
    await outflow.upsertTenant('acme')
    const host = await portalMounts[0]!.start(outflow)
    hosts.push(host)
    return { outflow, host }
  }
  afterAll(async () => {
    await Promise.all(hosts.map((h) => h.close()))
    await Promise.all(engines.map((e) => e.close()))
  })

  it('portal.serve: false serves no portal and has no link without portal.url', async () => {
    const { host } = await start({ serve: false })
    expect((await raw(host.origin, '/portal/')).status).toBe(404)
    const res = await raw(host.origin, '/api/v1/tenants/acme/portal', { headers: admin })
    expect(res.status).toBe(404)
    expect(json(res).message).toMatch(/no portal URL/)
  })

  it('portal.path moves the portal and its links', async () => {
    const { host } = await start({ path: '/hooks/portal' })
    expect(new URL(await signInLink(host)).pathname).toBe('/hooks/portal/')
    expect((await raw(host.origin, '/hooks/portal/')).status).toBe(200)
    expect((await raw(host.origin, '/portal/')).status).toBe(404)
  })

  it('portal.url sends links to the host’s page while the built-in portal stays served', async () => {
    const { host } = await start({ url: 'https://app.example.com/settings/webhooks' })
    const link = new URL(await signInLink(host, '?theme=light'))
    expect(`${link.origin}${link.pathname}`).toBe('https://app.example.com/settings/webhooks')
    expect([...link.searchParams.keys()].sort()).toEqual(['code', 'theme'])
  })

  it('portal.frameAncestors names who may frame the page', async () => {
    const { host } = await start({ frameAncestors: ["'self'", 'https://app.example.com'] })
    const page = await raw(host.origin, '/portal/')
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'self' https://app.example.com")
    expect(page.headers['x-frame-options']).toBeUndefined()
  })

  it('refuses a portal path that would shadow the API, and bad portal options', async () => {
    const outflow = await engine({ path: '/tenants' })
    engines.push(outflow)
    expect(() => createHttpHandler(outflow)).toThrow(/portal.path \/tenants overlaps the API/)
    expect(() => createHttpHandler(outflow, { basePath: '/api' })).toThrow(/overlaps the API/)
    await expect(engine({ path: 'portal' })).rejects.toThrow(/portal.path must be a path/)
    await expect(engine({ frameAncestors: ['*'] })).rejects.toThrow(/portal.frameAncestors/)
  })
})

describe('portal bundle', () => {
  let outflow: Outflow
  let host: PortalHost
  beforeAll(async () => {
    outflow = await engine()
    host = await portalMounts[0]!.start(outflow)
  })
  afterAll(async () => {
    await host?.close()
    await outflow?.close()
  })

  it('transfers at most 150 KB (gzip) on first load: index.html and every asset it loads', async () => {
    const gzip = { 'accept-encoding': 'gzip' }
    const index = await raw(host.origin, '/portal/', { headers: gzip })
    const sizes: Record<string, number> = { 'index.html': index.body.length }
    for (const asset of assetsOf(gunzipSync(index.body).toString())) sizes[asset] = (await raw(host.origin, `/portal/${asset}`, { headers: gzip })).body.length
    const total = Object.values(sizes).reduce((a, b) => a + b, 0)
    console.log(`[outflow portal] first load ${(total / 1024).toFixed(1)} KB gzipped: ${Object.entries(sizes).map(([f, n]) => `${f} ${(n / 1024).toFixed(1)} KB`).join(', ')}`)
    expect(total).toBeLessThanOrEqual(150 * 1024)
  })
})
