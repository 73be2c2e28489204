import { createHash } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { ThinEnvelope as Envelope } from '../../src/delivery/thin-payload.js'
import type { Outflow } from '../../src/engine.js'
import { createHttpHandler } from '../../src/http/handler.js'
import { sendWebResponse, toWebRequest } from '../../src/http/node.js'
import type { OutflowOptions } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { startFakeSqs, type FakeSqs } from '../fakes/sqs-server.js'
import { createTestDatabase } from '../support/services.js'
import { apiKey, engineKinds } from '../support/engines.js'
import { startReceiver, waitFor, type Received } from '../support/receiver.js'

// Thin deliveries: the destination receives an envelope signed like any body, and fetches the data from the
// engine's own HTTP API through a signed, expiring link whose bytes match the envelope's size and sha256.

/** The engine served on a real port, its `publicUrl` known before it is created (the server starts first). */
async function servedEngine(create: (options: Partial<OutflowOptions>) => Promise<Outflow>, options: Partial<OutflowOptions> = {}) {
  let handle: ((request: Request) => Promise<Response>) | undefined
  const server = http.createServer((req, res) => void handle!(toWebRequest(req, req.url ?? '/')).then((r) => sendWebResponse(res, r)))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1`
  const outflow = await create({ publicUrl: baseUrl, delivery: { pollIntervalMs: 50, retry: { schedule: [50], jitter: 0 } }, ...options })
  handle = createHttpHandler(outflow)
  const api = (path: string, init: RequestInit = {}) =>
    fetch(`${baseUrl}${path}`, { ...init, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...init.headers } })
  return { outflow, baseUrl, api, close: () => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))) }
}

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex')

/** What a receiver does with a thin delivery: verify the signature over the envelope, fetch the link, check the digest. */
async function fetchThin(received: Received, secret: string): Promise<{ envelope: Envelope; response: Response; bytes: Buffer }> {
  const envelope = new Webhook(secret).verify(received.body, received.headers as Record<string, string>) as Envelope
  const response = await fetch(envelope.payload_url)
  const bytes = Buffer.from(await response.arrayBuffer())
  return { envelope, response, bytes }
}

const order = { total: 42.5, order: 'ord_1', items: [{ sku: 'a-1', qty: 2 }], note: 'café ☕' }

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`thin deliveries: ${kind.name}`, () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let served: Awaited<ReturnType<typeof servedEngine>>
    let n = 0
    /** A webhook destination of tenant `t` on its own receiver path, with its signing secret. */
    const hook = async (payload: unknown, tenant = 't') => {
      const path = `/hook-${++n}`
      const created = await served.outflow.createDestination(tenant, { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}${path}` }, payload })
      return { id: created.id, path, secret: String(created.credentials.secret) }
    }

    let database: { url: string; drop: () => Promise<void> } | undefined
    beforeAll(async () => {
      receiver = await startReceiver()
      // A 10 MB jsonb statement takes seconds on a loaded machine: more than the 3 s a caller's call gets by default.
      database = kind.name === 'postgres' ? await createTestDatabase() : undefined
      const storage = database ? { storage: postgres({ url: database.url, max: 4, timeoutMs: 60_000, requestTimeoutMs: 60_000 }) } : {}
      served = await servedEngine((options) => kind.create({ ...storage, ...options }))
      await served.outflow.upsertTenant('t', {})
    })
    afterAll(async () => {
      await served?.close()
      await receiver?.close()
      await kind.cleanup()
      await database?.drop()
    })
    afterEach(() => vi.useRealTimers())

    it('sends the envelope signed like any body, and its link answers the data whose size and sha256 it carries', async () => {
      const destination = await hook('thin')
      const { id } = await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: order, metadata: { region: 'eu' } })
      const [received] = await waitFor(() => receiver.on(destination.path).length > 0 && receiver.on(destination.path), 10_000, 'the thin delivery')
      const { envelope, response, bytes } = await fetchThin(received!, destination.secret)
      expect(Object.keys(envelope)).toEqual(['id', 'topic', 'time', 'metadata', 'size', 'sha256', 'payload_url', 'payload_expires_at'])
      expect(envelope).toMatchObject({ id, topic: 'order.created', metadata: { 'event-id': id, topic: 'order.created', region: 'eu' } })
      expect(envelope.payload_url.startsWith(`${served.baseUrl}/payloads/`)).toBe(true)
      expect(new Date(envelope.payload_expires_at).getTime() - Date.parse(envelope.time)).toBeGreaterThan(23 * 3_600_000)
      expect(response.status).toBe(200)
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      expect(response.headers.get('cache-control')).toBe('no-store')
      expect(bytes.length).toBe(envelope.size)
      expect(sha256(bytes)).toBe(envelope.sha256)
      // Canonical JSON: keys sorted at every level, whatever order the publisher wrote them in.
      expect(bytes.toString('utf8')).toBe('{"items":[{"qty":2,"sku":"a-1"}],"note":"café ☕","order":"ord_1","total":42.5}')
      // The same link answers the same bytes once the event is read back from storage.
      expect(sha256(Buffer.from(await (await fetch(envelope.payload_url)).arrayBuffer()))).toBe(envelope.sha256)
    })

    it('goes thin with thin_above_bytes only for data larger than the threshold', async () => {
      const small = { note: 'x'.repeat(50) }
      const large = { note: 'x'.repeat(200) }
      const threshold = Buffer.byteLength(JSON.stringify(small)) // exactly at the threshold: full
      const destination = await hook({ thin_above_bytes: threshold })
      await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: small })
      await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: large })
      const got = await waitFor(() => receiver.on(destination.path).length >= 2 && receiver.on(destination.path), 10_000, 'both deliveries')
      const bodies = got.map((r) => new Webhook(destination.secret).verify(r.body, r.headers as Record<string, string>) as Record<string, unknown>)
      const full = bodies.find((b) => !('payload_url' in b))
      const thin = bodies.find((b) => 'payload_url' in b) as unknown as Envelope
      expect(full).toEqual(small)
      const bytes = Buffer.from(await (await fetch(thin.payload_url)).arrayBuffer())
      expect(JSON.parse(bytes.toString('utf8'))).toEqual(large)
      expect(sha256(bytes)).toBe(thin.sha256)
    })

    it('delivers a 10 MB event thin, and its link answers all of it', async () => {
      const destination = await hook({ thin_above_bytes: 256 * 1024 })
      const big = { blob: 'b'.repeat(10 * 1024 * 1024), rows: Array.from({ length: 1000 }, (_, i) => ({ i, label: `row ${i}` })) }
      await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: big })
      const [received] = await waitFor(() => receiver.on(destination.path).length > 0 && receiver.on(destination.path), 60_000, 'the thin delivery of 10 MB')
      expect(received!.body.length).toBeLessThan(2048)
      const { envelope, response, bytes } = await fetchThin(received!, destination.secret)
      expect(response.status).toBe(200)
      expect(envelope.size).toBeGreaterThan(10 * 1024 * 1024)
      expect(bytes.length).toBe(envelope.size)
      expect(sha256(bytes)).toBe(envelope.sha256)
      expect(JSON.parse(bytes.toString('utf8'))).toEqual(big)
    })

    it('answers 404 with one body for an expired, changed, foreign or withdrawn link, and never lists', async () => {
      const destination = await hook('thin')
      await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: order })
      const [received] = await waitFor(() => receiver.on(destination.path).length > 0 && receiver.on(destination.path), 10_000, 'the thin delivery')
      const { envelope } = await fetchThin(received!, destination.secret)
      const url = envelope.payload_url
      const token = url.slice(url.lastIndexOf('/') + 1)
      const [body, mac] = token.split('.') as [string, string]
      const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1)
      // Another engine (another jwtSecret) signs the same claims: not this engine's link.
      const other = await servedEngine((options) => kind.create(options), { jwtSecret: 'another-jwt-secret-0123456789' })
      await other.outflow.upsertTenant('t', {})
      const otherDestination = await other.outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/other` }, payload: 'thin' })
      await other.outflow.publish({ tenant_id: 't', topic: 'order.created', data: order })
      const [foreign] = await waitFor(() => receiver.on('/other').length > 0 && receiver.on('/other'), 10_000, 'the other engine\'s delivery')
      const foreignUrl = (JSON.parse(foreign!.body) as Envelope).payload_url
      await other.close()
      const tenantToken = (await served.outflow.getTenantToken('t')).token
      const refused = {
        'a changed MAC': `${body}.${flip(mac, 5)}`,
        'changed claims': `${flip(body, 10)}.${mac}`,
        'no MAC': body,
        'another engine\'s link': foreignUrl.slice(foreignUrl.lastIndexOf('/') + 1),
        'a tenant token': tenantToken,
        'the admin key': apiKey,
      }
      const answers = new Set<string>()
      for (const [what, bad] of Object.entries(refused)) {
        const response = await fetch(`${served.baseUrl}/payloads/${encodeURIComponent(bad)}`)
        expect(response.status, what).toBe(404)
        answers.add(await response.text())
      }
      // Listing: no route answers the collection.
      expect((await fetch(`${served.baseUrl}/payloads`)).status).toBe(404)
      // The link is no credential: as a Bearer token it opens nothing.
      expect((await served.api('/tenants/t', { headers: { authorization: `Bearer ${token}` } })).status).toBe(401)

      // Still valid a second before it expires, gone from the second it does (the engine's clock moved, not waited for).
      const expiresAt = Date.parse(envelope.payload_expires_at)
      vi.useFakeTimers({ toFake: ['Date'] })
      vi.setSystemTime(expiresAt - 1000)
      expect((await fetch(url)).status).toBe(200)
      vi.setSystemTime(expiresAt)
      const expired = await fetch(url)
      expect(expired.status).toBe(404)
      answers.add(await expired.text())
      vi.useRealTimers()

      // Withdrawn: the destination deleted.
      expect((await fetch(url)).status).toBe(200)
      await served.outflow.deleteDestination('t', destination.id)
      const withdrawn = await fetch(url)
      expect(withdrawn.status).toBe(404)
      answers.add(await withdrawn.text())
      expect([...answers]).toEqual([JSON.stringify({ status: 404, message: 'payload not found' })])
    })

    it('answers 404 once the tenant (and so the event) is deleted', async () => {
      await served.outflow.upsertTenant('gone', {})
      const destination = await hook('thin', 'gone')
      await served.outflow.publish({ tenant_id: 'gone', topic: 'order.created', data: order })
      const [received] = await waitFor(() => receiver.on(destination.path).length > 0 && receiver.on(destination.path), 10_000, 'the thin delivery')
      const { envelope, response } = await fetchThin(received!, destination.secret)
      expect(response.status).toBe(200)
      await served.outflow.deleteTenant('gone')
      expect((await fetch(envelope.payload_url)).status).toBe(404)
    })

    it('stores the policy, shows it, replaces it on PATCH and resets it with null, over HTTP', async () => {
      const create = await served.api('/tenants/t/destinations', { method: 'POST', body: JSON.stringify({ type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/x` }, payload: { thin_above_bytes: 1000 } }) })
      expect(create.status).toBe(201)
      const { id, payload } = (await create.json()) as { id: string; payload: unknown }
      expect(payload).toEqual({ thin_above_bytes: 1000 })
      const patch = (body: unknown) => served.api(`/tenants/t/destinations/${id}`, { method: 'PATCH', body: JSON.stringify(body) })
      expect(await (await patch({ payload: 'thin' })).json()).toMatchObject({ payload: 'thin' })
      expect(await (await served.api(`/tenants/t/destinations/${id}`)).json()).toMatchObject({ payload: 'thin' })
      // Another field's PATCH keeps it.
      expect(await (await patch({ metadata: { a: 'b' } })).json()).toMatchObject({ payload: 'thin' })
      expect(await (await patch({ payload: null })).json()).not.toHaveProperty('payload')
    })

    const invalid: [string, unknown][] = [
      ['an unknown word', 'slim'],
      ['a negative threshold', { thin_above_bytes: -1 }],
      ['a fractional threshold', { thin_above_bytes: 1.5 }],
      ['a threshold as text', { thin_above_bytes: '1000' }],
      ['an unknown field', { thin_above_bytes: 10, thin_below_bytes: 5 }],
      ['an empty object', {}],
      ['an array', ['thin']],
      ['a number', 1000],
    ]
    for (const [what, payload] of invalid) {
      it(`refuses ${what} with a 422 naming payload, on create and on PATCH`, async () => {
        const create = await served.api('/tenants/t/destinations', { method: 'POST', body: JSON.stringify({ type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/x` }, payload }) })
        expect(create.status).toBe(422)
        expect(Object.keys(((await create.json()) as { data: Record<string, string> }).data).some((k) => k.startsWith('payload'))).toBe(true)
        const { id } = await served.outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/x` } })
        const patch = await served.api(`/tenants/t/destinations/${id}`, { method: 'PATCH', body: JSON.stringify({ payload }) })
        expect(patch.status).toBe(422)
      })
    }
  })

  describe.runIf(kind.available)(`thin deliveries without a publicUrl: ${kind.name}`, () => {
    afterAll(() => kind.cleanup())

    it('refuses thin and thin_above_bytes with a 422 naming publicUrl, and takes full', async () => {
      const outflow = await kind.create({ delivery: { worker: false } })
      await outflow.upsertTenant('t', {})
      const handle = createHttpHandler(outflow)
      for (const payload of ['thin', { thin_above_bytes: 10 }]) {
        const response = await handle(
          new Request('http://localhost/api/v1/tenants/t/destinations', {
            method: 'POST',
            headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
            body: JSON.stringify({ type: 'webhook', topics: ['*'], config: { url: 'https://example.com/hook' }, payload }),
          }),
        )
        expect(response.status).toBe(422)
        expect(((await response.json()) as { data: Record<string, string> }).data.payload).toMatch(/publicUrl/)
      }
      expect((await outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: 'https://example.com/hook' }, payload: 'full' })).payload).toBe('full')
    })
  })

  describe.runIf(kind.available)(`a queue type's limit: ${kind.name}`, () => {
    const key = 'AKIATHINOUTFLOW00001'
    const secret = 'thin-secret-0123456789abcdefghijklmnopqrs'
    let sqs: FakeSqs
    beforeAll(async () => {
      sqs = await startFakeSqs({ accessKeyId: key, secretAccessKey: secret, queues: ['orders'] })
    })
    afterAll(async () => {
      await sqs?.close()
      await kind.cleanup()
    })
    const sqsDestination = { type: 'cloudx_sqs', topics: ['*'], config: { queue_url: '', endpoint: '' }, credentials: { key, secret } }
    const bigEvent = { blob: 'q'.repeat(300 * 1024) }
    const smallEvent = { blob: 'q'.repeat(1024) }

    it('sends an event over 256 KiB to SQS thin by default, and a small one in full', async () => {
      const served = await servedEngine((options) => kind.create(options))
      try {
        await served.outflow.upsertTenant('t', {})
        const config = { queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }
        const destination = await served.outflow.createDestination('t', { ...sqsDestination, config })
        expect(destination).not.toHaveProperty('payload')
        const big = await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: bigEvent })
        const small = await served.outflow.publish({ tenant_id: 't', topic: 'order.created', data: smallEvent })
        const sent = (id: string) => sqs.messages.find((m) => m.attributes['event-id']?.StringValue === id)
        const thin = JSON.parse((await waitFor(() => sent(big.id), 10_000, 'the large event in the queue')).body) as Envelope
        expect(JSON.parse((await waitFor(() => sent(small.id), 10_000, 'the small event in the queue')).body)).toEqual(smallEvent)
        expect(thin).toMatchObject({ id: big.id, size: Buffer.byteLength(JSON.stringify(bigEvent)) })
        const bytes = Buffer.from(await (await fetch(thin.payload_url)).arrayBuffer())
        expect(sha256(bytes)).toBe(thin.sha256)
        expect(JSON.parse(bytes.toString('utf8'))).toEqual(bigEvent)
      } finally {
        await served.close()
      }
    })

    it('fails the same event as SQS refuses it when the engine has no publicUrl (no link can be made)', async () => {
      const outflow = await kind.create({ delivery: { pollIntervalMs: 50, retry: { schedule: [], jitter: 0 } } })
      await outflow.upsertTenant('t', {})
      const config = { queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }
      await outflow.createDestination('t', { ...sqsDestination, config })
      const { id } = await outflow.publish({ tenant_id: 't', topic: 'order.created', data: bigEvent })
      const [attempt] = await waitFor(async () => (await outflow.listDeliveries('t', id).catch(() => [])).length > 0 && outflow.listDeliveries('t', id), 10_000, 'the failed attempt')
      expect(attempt).toMatchObject({ status: 'failed', response_status_code: 400 })
      expect(attempt!.response_body).toMatch(/shorter than 262144 bytes/)
    })
  })
}
