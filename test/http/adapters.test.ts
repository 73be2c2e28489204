import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import { request } from 'undici'
import { type MockInstance, afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { outflowRouter } from '../../adapters/express.js'
import { outflowFastify } from '../../adapters/fastify.js'
import { outflowApp, outflowFetch } from '../../adapters/hono.js'
import { createOutflow } from '../../src/create-outflow.js'
import type { Logger } from '../../src/logger.js'
import { type Outflow } from '../../src/engine.js'
import { OutflowError } from '../../src/errors.js'
import { createHttpHandler } from '../../src/http/handler.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { bareMount, honoPlainMount, mounts, type MountedApi } from './mounts.js'
import { adminKey, jwtSecret } from './support.js'

const admin = { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json' }

function listen(app: http.RequestListener): Promise<MountedApi & { origin: string }> {
  const server = http.createServer(app)
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
      resolve({ origin, baseUrl: origin, close: () => new Promise((done) => (server.closeAllConnections(), server.close(() => done()))) })
    }),
  )
}

describe('adapters', () => {
  let outflow: Outflow
  let keyless: Outflow
  const closers: (() => Promise<void>)[] = []
  beforeAll(async () => {
    outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret, maxBodyBytes: 4096 })
    keyless = await createOutflow({ storage: sqlite({ path: ':memory:' }), jwtSecret })
  })
  afterAll(async () => {
    for (const close of closers) await close()
    await outflow.close()
    await keyless.close()
  })

  describe('refuse to run open without an apiKey, at mount time', () => {
    it('createHttpHandler throws an OutflowError naming apiKey and auth: false', () => {
      expect(() => createHttpHandler(keyless)).toThrow(OutflowError)
      expect(() => createHttpHandler(keyless)).toThrow(/apiKey.*auth: false/)
    })
    it('express: outflowRouter throws', () => expect(() => outflowRouter(keyless)).toThrow(/apiKey/))
    it('hono: outflowApp and outflowFetch throw', () => {
      expect(() => outflowApp(keyless, new Hono())).toThrow(/apiKey/)
      expect(() => outflowFetch(keyless)).toThrow(/apiKey/)
    })
    it('fastify: app.ready() rejects', async () => {
      const app = Fastify()
      await app.register(outflowFastify, { outflow: keyless, prefix: '/api/v1' }).ready().then(
        () => expect.fail('ready() should reject'),
        (error: Error) => expect(error.message).toMatch(/apiKey/),
      )
      await app.close()
    })
    it('outflow.fetch throws instead of serving', () => {
      expect(() => keyless.fetch(new Request('http://x/api/v1/tenants'))).toThrow(/apiKey/)
    })
  })

  it('auth: false, given explicitly, serves every route without credentials', async () => {
    const open = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false })
    try {
      const handle = createHttpHandler(open)
      expect((await handle(new Request('http://x/api/v1/tenants/acme', { method: 'PUT' }))).status).toBe(201)
      expect((await handle(new Request('http://x/api/v1/tenants'))).status).toBe(200)
    } finally {
      await open.close()
    }
  })

  it('honours the engine’s maxBodyBytes, also for a chunked body without Content-Length', async () => {
    const api = await bareMount.start(outflow)
    closers.push(api.close)
    const big = JSON.stringify({ metadata: { blob: 'x'.repeat(5000) } })
    expect((await fetch(`${api.baseUrl}/tenants/big`, { method: 'PUT', headers: admin, body: big })).status).toBe(413)
    const stream = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode(big))
        controller.close()
      },
    })
    const chunked = await fetch(`${api.baseUrl}/tenants/big`, { method: 'PUT', headers: admin, body: stream, duplex: 'half' } as RequestInit)
    expect(chunked.status).toBe(413)
    expect(await chunked.json()).toMatchObject({ status: 413 })
    expect((await fetch(`${api.baseUrl}/tenants/big`, { headers: admin })).status).toBe(404)
  })

  describe('express', () => {
    it('mounts under any path and leaves other routes to the host', async () => {
      const app = express()
      app.use('/outflow', outflowRouter(outflow))
      app.get('/hello', (_req, res) => void res.send('host'))
      const host = await listen(app)
      closers.push(host.close)
      expect((await fetch(`${host.origin}/outflow/healthz`)).status).toBe(200)
      expect(await (await fetch(`${host.origin}/hello`)).text()).toBe('host')
    })

    it('with a host express.json() of a larger limit, still applies the API’s limit (413)', async () => {
      const app = express()
      app.use(express.json({ limit: '5mb' }))
      app.use('/api/v1', outflowRouter(outflow))
      const host = await listen(app)
      closers.push(host.close)
      const res = await fetch(`${host.origin}/api/v1/tenants/big`, { method: 'PUT', headers: admin, body: JSON.stringify({ metadata: { blob: 'x'.repeat(10_000) } }) })
      expect(res.status).toBe(413)
      const ok = await fetch(`${host.origin}/api/v1/tenants/small`, { method: 'PUT', headers: admin, body: JSON.stringify({ metadata: { a: 1 } }) })
      expect(ok.status).toBe(201)
    })

    it('answers the host parser’s own failures on API paths in the API’s JSON format', async () => {
      const app = express()
      app.use(express.json({ limit: '100b' }))
      app.use('/api/v1', outflowRouter(outflow))
      const host = await listen(app)
      closers.push(host.close)
      const tooBig = await fetch(`${host.origin}/api/v1/tenants/x`, { method: 'PUT', headers: admin, body: JSON.stringify({ metadata: { blob: 'x'.repeat(200) } }) })
      expect(tooBig.status).toBe(413)
      expect(await tooBig.json()).toMatchObject({ status: 413 })
      const malformed = await fetch(`${host.origin}/api/v1/tenants/x`, { method: 'PUT', headers: admin, body: '{' })
      expect(malformed.status).toBe(400)
      expect(await malformed.json()).toMatchObject({ status: 400, message: 'malformed JSON' })
    })
  })

  describe('hono', () => {
    it('a plain mount serves the API', async () => {
      const api = await honoPlainMount.start(outflow)
      closers.push(api.close)
      expect((await fetch(`${api.baseUrl}/tenants/hono-plain`, { method: 'PUT', headers: admin })).status).toBe(201)
      expect((await fetch(`${api.baseUrl}/tenants/hono-plain`, { method: 'POST', headers: admin })).status).toBe(405)
      expect((await fetch(`${api.baseUrl}/nope`, { headers: admin })).status).toBe(404)
    })

    it('a sub-app routed under a nested path strips it', async () => {
      const app = new Hono()
      app.route('/v2/outflow', outflowApp(outflow, new Hono()))
      const res = await app.request('/v2/outflow/tenants/sub', { headers: admin })
      expect(res.status).toBe(404)
      expect(await res.json()).toMatchObject({ message: 'tenant not found: sub' })
    })
  })

  describe('fastify', () => {
    it('scopes body parsing to the plugin: host routes keep Fastify’s JSON parser', async () => {
      const app = Fastify()
      app.post('/host/echo', async (request) => ({ echoed: request.body }))
      await app.register(outflowFastify, { outflow, prefix: '/v1/outflow' })
      await app.listen({ port: 0, host: '127.0.0.1' })
      closers.push(() => app.close())
      const origin = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
      const echo = await fetch(`${origin}/host/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' })
      expect(await echo.json()).toEqual({ echoed: { a: 1 } })
      expect((await fetch(`${origin}/v1/outflow/tenants/fastify`, { method: 'PUT', headers: admin, body: '{}' })).status).toBe(201)
      const text = await fetch(`${origin}/v1/outflow/tenants/fastify`, { method: 'PUT', headers: { ...admin, 'content-type': 'text/plain' }, body: 'hi' })
      expect(text.status).toBe(415)
      expect((await fetch(`${origin}/v1/outflow`, { headers: admin })).status).toBe(404)
    })
  })
})

/** Send one raw request line and return what the server wrote before closing (Node closes CONNECT without an answer). */
function rawRequest(baseUrl: string, method: string, path: string): Promise<string> {
  const { port } = new URL(baseUrl)
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), '127.0.0.1', () => socket.write(`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`))
    let received = ''
    socket.on('data', (chunk) => (received += chunk))
    socket.on('close', () => resolve(received))
    socket.on('error', reject)
  })
}

describe.each([...mounts, honoPlainMount].map((m) => [m.name, m] as const))('methods the API does not serve, via %s', (_, mount) => {
  const errors: unknown[] = []
  const logger: Logger = { debug() {}, info() {}, warn() {}, error: (message, fields) => void errors.push({ message, fields }) }
  let outflow: Outflow
  let api: MountedApi
  let consoleError: MockInstance<typeof console.error>
  beforeAll(async () => {
    consoleError = vi.spyOn(console, 'error')
    outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret, logger })
    api = await mount.start(outflow)
  })
  afterAll(async () => {
    await api.close()
    await outflow.close()
    consoleError.mockRestore()
  })

  it.each([
    ['TRACE', '/tenants', 'GET'],
    ['TRACE', '/tenants/acme', 'GET, PUT, DELETE'],
    ['PROPFIND', '/tenants/acme/destinations', 'GET, POST'],
    ['M-SEARCH', '/publish', 'POST'],
    ['PURGE', '/healthz', 'GET'],
  ])('%s %s is a JSON 405 with Allow: %s', async (method, path, allow) => {
    const res = await request(`${api.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${adminKey}` } })
    expect(res.statusCode).toBe(405)
    expect(res.headers['allow']).toBe(allow)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(await res.body.json()).toEqual({ status: 405, message: `method ${method} not allowed on ${path}` })
  })

  it('TRACE with a body on a path the API does not know is a JSON 404', async () => {
    const res = await request(`${api.baseUrl}/nope`, { method: 'TRACE', body: '{"a":1}', headers: { 'content-type': 'application/json' } })
    expect(res.statusCode).toBe(404)
    expect(await res.body.json()).toMatchObject({ status: 404, message: 'route not found: TRACE /nope' })
  })

  it.each([
    ['QUERY', '/tenants/acme'],
    ['PROPFIND', '/tenants'],
    ['SEARCH', '/nope'],
  ])('%s %s with a body and no Content-Type is a JSON 405 or 404, not a host error', async (method, path) => {
    const res = await request(`${api.baseUrl}${path}`, { method, body: '{"a":1}', headers: { authorization: `Bearer ${adminKey}` } })
    expect(res.statusCode).toBe(path === '/nope' ? 404 : 405)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    expect(await res.body.json()).toMatchObject({ status: res.statusCode })
  })

  it.each(['gzip', 'deflate', 'br'])('a body whose Content-Encoding (%s) does not decode is a JSON 400 without a stack trace', async (encoding) => {
    const res = await request(`${api.baseUrl}/tenants/acme`, {
      method: 'PUT',
      body: Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x7b]),
      headers: { authorization: `Bearer ${adminKey}`, 'content-type': 'application/json', 'content-encoding': encoding },
    })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(/^application\/json/)
    const body = (await res.body.text())
    expect(JSON.parse(body)).toMatchObject({ status: 400 })
    expect(body).not.toMatch(/\n\s+at /)
  })

  it.each(['CONNECT', 'TRACK', 'FOO'])('%s never reaches the API and gets no 5xx (Node refuses it before any mount)', async (method) => {
    const answer = await rawRequest(api.baseUrl, method, '/api/v1/tenants')
    expect(answer).not.toMatch(/^HTTP\/1\.1 5/)
  })

  it('logs nothing: no engine error, no console error', () => {
    expect(errors).toEqual([])
    expect(consoleError).not.toHaveBeenCalled()
  })
})
