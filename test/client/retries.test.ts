import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { OutflowClient, type OutflowClientOptions } from '../../src/client/index.js'
import { apiKey, failure, serveOutflow, servedStorages, type Served } from './served.js'

// Retries through a real HTTP proxy in front of a real `outflow serve`: the proxy answers the next
// requests with the faults a test queues (an error status, a reset connection, no answer, or the
// server's answer lost after it was served), then forwards to the server.

/** What the proxy does with one request instead of forwarding it. */
type Fault = { status: number; headers?: Record<string, string> } | 'reset' | 'hang' | 'forward-then-reset'

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

async function startFlakyProxy(upstreamOrigin: string) {
  const seen: { method: string; path: string; at: number }[] = []
  const faults: Fault[] = []
  const hanging: ServerResponse[] = []
  const forward = async (req: IncomingMessage, body: Buffer) => {
    const headers: Record<string, string> = {}
    for (const name of ['authorization', 'content-type', 'accept']) if (req.headers[name]) headers[name] = String(req.headers[name])
    return fetch(`${upstreamOrigin}${req.url}`, { method: req.method, headers, body: body.length > 0 ? new Uint8Array(body) : undefined })
  }
  const server = createServer(async (req, res) => {
    const body = await readBody(req)
    seen.push({ method: req.method!, path: req.url!, at: Date.now() })
    const fault = faults.shift()
    if (fault === 'reset') return void req.socket.destroy()
    if (fault === 'hang') return void hanging.push(res)
    if (fault === 'forward-then-reset') return void (await forward(req, body).then((r) => r.arrayBuffer()), req.socket.destroy())
    if (fault) {
      res.writeHead(fault.status, { 'content-type': 'application/json', ...fault.headers })
      return void res.end(JSON.stringify({ status: fault.status, message: 'service unavailable' }))
    }
    const answer = await forward(req, body)
    res.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' })
    res.end(Buffer.from(await answer.arrayBuffer()))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    api: `http://127.0.0.1:${port}/api/v1`,
    seen,
    faults,
    reset() {
      seen.length = 0
      faults.length = 0
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

describe('outflow/client retries, through a flaky proxy to outflow serve', { timeout: 60_000 }, () => {
  let served: Served
  let proxy: Awaited<ReturnType<typeof startFlakyProxy>>
  /** A client through the proxy; backoffs short (Retry-After is honoured as asked). */
  const client = (options: Partial<OutflowClientOptions> = {}) => new OutflowClient({ baseUrl: proxy.api, apiKey, retry: { baseDelayMs: 5 }, ...options })
  const methods = () => proxy.seen.map((r) => `${r.method} ${r.path}`)

  beforeAll(async () => {
    served = await serveOutflow(servedStorages[0]!)
    proxy = await startFlakyProxy(new URL(served.api).origin)
    await served.admin.upsertTenant('acme')
  }, 90_000)
  afterAll(async () => {
    await proxy?.close()
    await served?.stop()
  })
  beforeEach(() => proxy.reset())

  it('retries a GET answered 503 with Retry-After once the asked time has passed, and returns the real answer', async () => {
    proxy.faults.push({ status: 503, headers: { 'retry-after': '1' } })
    expect((await client().getTenant('acme')).id).toBe('acme')
    expect(methods()).toEqual(['GET /api/v1/tenants/acme', 'GET /api/v1/tenants/acme'])
    expect(proxy.seen[1]!.at - proxy.seen[0]!.at).toBeGreaterThanOrEqual(1000)
  })

  it('retries a PUT answered 429 and 502, and a DELETE whose connection was reset', async () => {
    proxy.faults.push({ status: 429, headers: { 'retry-after': '0' } }, { status: 502 })
    expect(await client().upsertTenant('retried', { metadata: { n: 1 } })).toMatchObject({ created: true, tenant: { id: 'retried' } })
    expect(methods()).toEqual(Array(3).fill('PUT /api/v1/tenants/retried'))
    proxy.reset()
    proxy.faults.push('reset')
    expect(await client().deleteTenant('retried')).toEqual({ success: true })
    expect(methods()).toEqual(Array(2).fill('DELETE /api/v1/tenants/retried'))
  })

  it('never retries a POST: a publish without an id answered 503 is thrown after one request', async () => {
    proxy.faults.push({ status: 503, headers: { 'retry-after': '0' } })
    const error = await failure(client().publish({ tenant_id: 'acme', topic: 'user.signed_up', data: {} }))
    expect(error).toMatchObject({ status: 503, code: 'unavailable', message: 'service unavailable' })
    expect(error.headers?.['retry-after']).toBe('0')
    expect(methods()).toEqual(['POST /api/v1/publish'])
  })

  it('retries a publish with an id (idempotent on tenant and id): one event, not a duplicate', async () => {
    proxy.faults.push({ status: 503, headers: { 'retry-after': '0' } }, 'reset')
    expect(await client().publish({ id: 'evt-retried', tenant_id: 'acme', topic: 'user.signed_up', data: {} })).toEqual({ id: 'evt-retried', duplicate: false, destination_ids: [] })
    expect(methods()).toEqual(Array(3).fill('POST /api/v1/publish'))
  })

  it('does not retry a create whose answer was lost: the destination exists once, and the caller sees status 0', async () => {
    proxy.faults.push('forward-then-reset')
    const error = await failure(client().createDestination('acme', { id: 'lost', type: 'webhook', topics: '*', config: { url: 'https://example.com/hook' } }))
    expect(error).toMatchObject({ status: 0, code: 'unavailable' })
    expect(error.message).toMatch(/^POST http:\/\/127\.0\.0\.1:\d+\/api\/v1\/tenants\/acme\/destinations: no answer: /)
    expect(methods()).toEqual(['POST /api/v1/tenants/acme/destinations'])
    expect((await served.admin.listDestinations('acme')).map((d) => d.id)).toEqual(['lost'])
  })

  it('gives up a request without an answer after timeoutMs: a GET is retried, a POST thrown', async () => {
    proxy.faults.push('hang')
    expect((await client({ timeoutMs: 1000 }).getTenant('acme')).id).toBe('acme')
    expect(methods()).toEqual(Array(2).fill('GET /api/v1/tenants/acme'))
    proxy.reset()
    proxy.faults.push('hang')
    const error = await failure(client({ timeoutMs: 1000 }).retryDelivery('acme', 'lost', 'evt-retried'))
    expect(error.message).toMatch(/\/retry: no answer within 1000 ms$/)
    expect(error).toMatchObject({ status: 0, code: 'unavailable' })
    expect(methods()).toHaveLength(1)
  })

  it('stops after `retries`, at once for a Retry-After past maxRetryAfterMs, and not at all with retry: false or for a 4xx', async () => {
    proxy.faults.push({ status: 503 }, { status: 503 }, { status: 503 })
    expect(await failure(client({ retry: { retries: 2, baseDelayMs: 5 } }).listTenants())).toMatchObject({ status: 503 })
    expect(methods()).toHaveLength(3)
    proxy.reset()
    proxy.faults.push({ status: 503, headers: { 'retry-after': '120' } })
    expect(await failure(client().listTenants())).toMatchObject({ status: 503, headers: { 'retry-after': '120' } })
    expect(methods()).toHaveLength(1)
    proxy.reset()
    proxy.faults.push({ status: 503, headers: { 'retry-after': '0' } })
    expect(await failure(client({ retry: false }).listTenants())).toMatchObject({ status: 503 })
    expect(methods()).toHaveLength(1)
    proxy.reset()
    expect(await failure(client().getTenant('nobody'))).toMatchObject({ status: 404, code: 'not_found' })
    expect(methods()).toHaveLength(1)
  })
})
