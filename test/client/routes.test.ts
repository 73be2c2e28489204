import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OutflowClient, pages } from '../../src/client/index.js'
import { routes } from '../../src/http/routes.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { apiKey, failure, serveOutflow, servedStorages, type Served } from './served.js'

// Every /api/v1 route through outflow/client against a real `outflow serve`, on each storage. The
// client's fetch records each call, and the last test checks that every route of src/http/routes.ts
// was answered with a success through it.

/** The client method of each route whose operationId is not the engine's method name. */
const methodOf: Record<string, string> = { createPortalSession: 'exchangePortalCode', getEventMetrics: 'eventMetrics', getAttemptMetrics: 'attemptMetrics', getPayload: 'readPayload' }

/** What the client sent and what came back, by method and path below /api/v1. */
interface Recorded {
  method: string
  path: string
  status: number
}

/** A loopback port nothing listens on (one the system just handed out and took back). */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

for (const storage of servedStorages) {
  describe.runIf(storage.available)(`outflow/client against outflow serve on ${storage.name}`, { timeout: 60_000 }, () => {
    const recorded: Recorded[] = []
    const recording: typeof fetch = async (input, init) => {
      const response = await fetch(input, init)
      recorded.push({ method: init?.method ?? 'GET', path: new URL(String(input)).pathname.replace(/^\/api\/v1/, ''), status: response.status })
      return response
    }
    let served: Served
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const hook = () => `${receiver.url}/hook`

    beforeAll(async () => {
      receiver = await startReceiver()
      served = await serveOutflow(storage, { fetch: recording })
    }, 90_000)
    afterAll(async () => {
      await served?.stop()
      await receiver?.close()
    })

    it('creates, reads, lists, updates and deletes tenants; hands out tenant tokens and portal sessions', async () => {
      const { admin } = served
      const created = await admin.upsertTenant('acme', { metadata: { plan: 'pro' } })
      expect(created).toMatchObject({ created: true, tenant: { id: 'acme', metadata: { plan: 'pro' }, destinations_count: 0 } })
      expect(await admin.upsertTenant('acme', { metadata: { plan: 'team' } })).toMatchObject({ created: false, tenant: { metadata: { plan: 'team' } } })
      expect(await admin.upsertTenant('globex')).toMatchObject({ created: true, tenant: { id: 'globex' } })
      expect(await admin.getTenant('acme')).toMatchObject({ id: 'acme', metadata: { plan: 'team' } })
      const listed = await admin.listTenants({ dir: 'asc' })
      expect([listed.count, listed.models.map((t) => t.id)]).toEqual([2, ['acme', 'globex']])

      const { token, tenant_id } = await admin.getTenantToken('acme')
      expect(tenant_id).toBe('acme')
      const tenant = served.client({ token })
      expect((await tenant.getTenant('acme')).id).toBe('acme')
      expect(await failure(tenant.getTenant('globex'))).toMatchObject({ status: 403, code: 'forbidden' })
      expect(await failure(tenant.listTenants())).toMatchObject({ status: 403, code: 'forbidden' })

      const { redirect_url } = await admin.getPortalRedirect('acme', { theme: 'dark' })
      const code = new URL(redirect_url).searchParams.get('code')!
      expect(new URL(redirect_url).searchParams.get('theme')).toBe('dark')
      const anonymous = served.client({ apiKey: undefined, token: undefined })
      const session = await anonymous.exchangePortalCode({ code })
      expect(session.tenant_id).toBe('acme')
      expect((await served.client({ token: () => session.token }).getTenant('acme')).id).toBe('acme')
      expect(await failure(anonymous.exchangePortalCode({ code }))).toMatchObject({ status: 401, code: 'unauthorized' })

      expect(await admin.deleteTenant('globex')).toEqual({ success: true })
      expect(await failure(admin.getTenant('globex'))).toMatchObject({ status: 404, code: 'not_found', message: 'tenant not found: globex' })
    })

    it('manages destinations: create, list, get, update, disable, enable, delete; and the destination types', async () => {
      const { admin } = served
      const created = await admin.createDestination('acme', { id: 'hook', type: 'webhook', topics: ['order.created', 'user.signed_up'], config: { url: hook() } })
      expect(created).toMatchObject({ id: 'hook', type: 'webhook', topics: ['order.created', 'user.signed_up'], disabled_at: null, config: { url: hook() } })
      await admin.createDestination('acme', { id: 'spare', type: 'webhook', topics: '*', config: { url: `${receiver.url}/spare` } })
      expect((await admin.listDestinations('acme')).map((d) => d.id).sort()).toEqual(['hook', 'spare'])
      expect((await admin.listDestinations('acme', { topics: ['user.signed_up'], type: 'webhook' })).map((d) => d.id).sort()).toEqual(['hook', 'spare'])
      expect((await admin.getDestination('acme', 'hook')).config).toEqual({ url: hook() })
      expect(await admin.updateDestination('acme', 'spare', { metadata: { team: 'billing' } })).toMatchObject({ id: 'spare', metadata: { team: 'billing' } })
      expect((await admin.disableDestination('acme', 'spare')).disabled_at).toEqual(expect.any(String))
      expect((await admin.enableDestination('acme', 'spare')).disabled_at).toBeNull()
      expect(await admin.deleteDestination('acme', 'spare')).toEqual({ success: true })
      expect(await failure(admin.getDestination('acme', 'spare'))).toMatchObject({ status: 404, code: 'not_found' })

      const types = await admin.listDestinationTypes()
      expect(types.map((t) => t.type)).toContain('webhook')
      expect((await admin.getDestinationType('webhook')).config_fields.map((f) => f.key)).toContain('url')
      expect((await admin.listTenantDestinationTypes('acme')).map((t) => t.type)).toEqual(types.map((t) => t.type))
      expect((await admin.getTenantDestinationType('acme', 'webhook')).label).toBe((await admin.getDestinationType('webhook')).label)
      expect(await failure(admin.listTenantDestinationTypes('nobody'))).toMatchObject({ status: 404, code: 'not_found' })
    })

    it('reads the event catalog', async () => {
      const { admin } = served
      expect((await admin.listTopics()).map((t) => t.name).sort()).toEqual(['order.created', 'user.signed_up'])
      expect(await admin.getTopic('order.created')).toMatchObject({ name: 'order.created', description: 'An order was placed', validation: 'enforce' })
      expect(await failure(admin.getTopic('order.shipped'))).toMatchObject({ status: 404, code: 'not_found' })
    })

    it('publishes, lists and reads events and their attempts, retries a delivery, and reads metrics', async () => {
      const { admin } = served
      const published = await admin.publish({ id: 'order-1', tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 42 } })
      expect(published).toEqual({ id: 'order-1', duplicate: false, destination_ids: ['hook'] })
      expect((await admin.publish({ id: 'order-1', tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 42 } })).duplicate).toBe(true)
      await waitFor(() => receiver.on('/hook').some((r) => r.headers['webhook-id'] === 'order-1'), 20_000, 'the delivery of order-1')
      // An event is listed from its first attempt on (a 404 until then).
      const [attempt] = await waitFor(async () => {
        const attempts = await admin.listDeliveries('acme', 'order-1').catch(() => [])
        return attempts.length === 1 && attempts
      }, 20_000, 'the attempt of order-1 recorded')
      expect(attempt).toMatchObject({ destination_id: 'hook', status: 'success', response_status_code: 200 })

      const page = await admin.listEvents('acme', { topic: 'order.created' })
      expect(page.models.map((e) => [e.id, e.destination_id, e.status])).toEqual([['order-1', 'hook', 'success']])
      expect(await admin.getEvent('acme', 'order-1', { destination_id: 'hook' })).toMatchObject({ id: 'order-1', topic: 'order.created', data: { id: 'o-1', total: 42 } })
      expect((await admin.listAdminEvents({ tenant_id: 'acme' })).models.map((e) => e.id)).toEqual(['order-1'])
      expect((await admin.listDestinationEvents('acme', 'hook', { status: 'success' })).models.map((e) => e.id)).toEqual(['order-1'])
      expect((await admin.getDestinationEvent('acme', 'hook', 'order-1')).id).toBe('order-1')

      expect(await admin.retryDelivery('acme', 'hook', 'order-1')).toEqual({ success: true })
      const attempts = await waitFor(async () => {
        const all = await admin.listDeliveries('acme', 'order-1')
        return all.length === 2 && all
      }, 20_000, 'the manual attempt')
      expect(attempts.map((a) => [a.status, a.manual])).toEqual([['success', true], ['success', false]])

      const time = { start: new Date(Date.now() - 3_600_000), end: new Date(Date.now() + 3_600_000) }
      const events = await admin.eventMetrics({ time, measures: ['count'], dimensions: ['topic'], filters: { tenant_id: 'acme' } })
      expect(events.data).toEqual([{ dimensions: { topic: 'order.created' }, metrics: { count: 1 } }])
      const byDestination = await admin.attemptMetrics({ time, measures: ['count'], dimensions: ['destination_id'], filters: { tenant_id: ['acme'] } })
      expect(byDestination.data).toEqual([{ dimensions: { destination_id: 'hook' }, metrics: { count: 2 } }])
    })

    it('reads a thin delivery\'s payload by its link, then erases the event by id and by a range job', async () => {
      const { admin } = served
      await admin.upsertTenant('thin')
      await admin.createDestination('thin', { id: 'thin-hook', type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/thin` }, payload: 'thin' })
      await admin.publish({ id: 'order-thin', tenant_id: 'thin', topic: 'order.created', data: { id: 'o-thin', total: 7 } })
      const [delivered] = await waitFor(() => { const got = receiver.on('/thin'); return got.length > 0 && got }, 20_000, 'the thin delivery')
      const envelope = JSON.parse(delivered!.body) as { payload_url: string }
      const token = envelope.payload_url.split('/payloads/')[1]!
      expect(await admin.readPayload(token)).toEqual({ id: 'o-thin', total: 7 })
      expect(await failure(admin.readPayload(`${token}x`))).toMatchObject({ status: 404 })

      expect(await admin.expungeEvents('thin', { ids: ['order-thin', 'order-none'] })).toEqual({ results: [{ id: 'order-thin', status: 'expunged' }, { id: 'order-none', status: 'not_found' }] })
      expect(await failure(admin.readPayload(token))).toMatchObject({ status: 404 })
      const job = await admin.expungeEvents('thin', { from: new Date(Date.now() - 3_600_000).toISOString() })
      expect((await admin.getExpungeJob('thin', job.id)).id).toBe(job.id)
      expect(await failure(admin.getExpungeJob('thin', 'exp_none'))).toMatchObject({ status: 404, code: 'not_found' })
      await admin.deleteTenant('thin') // the tenant count of the paging test stays its own
    })

    it('starts, reads and cancels replays', async () => {
      const { admin } = served
      const since = new Date(Date.now() - 3_600_000).toISOString()
      const job = await admin.replayDestination('acme', 'hook', { since, status: 'success' })
      expect(job).toMatchObject({ destination_id: 'hook', matched: 1, criteria: { status: 'success' } })
      expect((await admin.getReplay('acme', 'hook', job.id)).id).toBe(job.id)
      const cancelled = await admin.cancelReplay('acme', 'hook', job.id)
      expect(cancelled.id).toBe(job.id)
      expect(['cancelled', 'completed']).toContain(cancelled.status)
      const jobs = await admin.replayTenant('acme', { since, destination_id: ['hook'] })
      expect(jobs.map((j) => j.destination_id)).toEqual(['hook'])
      expect(await failure(admin.getReplay('acme', 'hook', 'rpl_none'))).toMatchObject({ status: 404, code: 'not_found' })
    })

    it('reads health, the signing keys and the OpenAPI document, and rotates the signing key', async () => {
      const { admin } = served
      expect(await admin.health()).toMatchObject({ status: 'ok', storage: { reachable: true } })
      expect(await served.client({ apiKey: undefined }).health({ details: false })).toEqual({ status: 'ok' })
      const before = await admin.getSigningKeys()
      expect(before.keys.map((k) => k.status)).toEqual(['active'])
      const after = await admin.rotateSigningKey({ overlap: '1h' })
      expect(after.keys.map((k) => [k.kid === before.keys[0]!.kid, k.status]).sort()).toEqual([[false, 'active'], [true, 'previous']])
      const document = await admin.openapi()
      expect(document).toMatchObject({ openapi: expect.stringMatching(/^3\.1\./) })
      expect(Object.keys(document.paths as object)).toContain('/publish')
    })

    it('maps error answers to OutflowError: 401, 400, 409 and 422 with the body’s message and data', async () => {
      const wrongKey = served.client({ apiKey: 'not-the-key' })
      expect(await failure(wrongKey.getTenant('acme'))).toMatchObject({ status: 401, code: 'unauthorized', message: 'invalid credentials' })
      const noKey = await failure(served.client({ apiKey: undefined }).listTenants())
      expect(noKey).toMatchObject({ status: 401, code: 'unauthorized' })
      expect(noKey.headers?.['www-authenticate']).toBe('Bearer realm="outflow"')

      const { admin } = served
      // @ts-expect-error an unknown parameter does not compile; the server refuses it too, and a limit over 1000
      const badQuery = await failure(admin.listEvents('acme', { limit: 5000, unknown: 'x' }))
      expect(badQuery).toMatchObject({ status: 400, code: 'bad_request', data: { limit: 'must be an integer between 1 and 1000', unknown: 'unexpected field' } })
      expect(await failure(admin.createDestination('acme', { id: 'hook', type: 'webhook', topics: '*', config: { url: hook() } }))).toMatchObject({ status: 409, code: 'conflict' })
      const invalid = await failure(admin.createDestination('acme', { type: 'webhook', topics: ['order.created'], config: {} }))
      expect(invalid).toMatchObject({ status: 422, code: 'validation', message: 'validation error', data: { 'config.url': 'required' } })
      // A JavaScript caller (or a cast) past the catalog's types: the server's schema refuses it.
      const untyped = served.client()
      const refused = await failure(untyped.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-2', total: 'many' } }))
      expect(refused).toMatchObject({ status: 422, code: 'validation' })
      expect(Object.keys(refused.data!)).toEqual(['data.total'])
    })

    it('pages through tenants and events with listAll… and pages()', async () => {
      const { admin } = served
      await admin.upsertTenant('pager')
      await admin.createDestination('pager', { id: 'sink', type: 'webhook', topics: '*', config: { url: `${receiver.url}/pager` } })
      const ids = Array.from({ length: 7 }, (_, i) => `evt-${i}`)
      for (const [i, id] of ids.entries()) await admin.publish({ id, tenant_id: 'pager', topic: 'user.signed_up', data: { n: i }, time: new Date(Date.UTC(2026, 0, 1, 0, i)) })
      await waitFor(async () => (await admin.listEvents('pager')).models.length === ids.length, 20_000, 'the seven events attempted (listed from then on)')

      const seen: string[] = []
      for await (const event of admin.listAllEvents('pager', { limit: 3, dir: 'asc' })) seen.push(event.id)
      expect(seen).toEqual(ids)
      const sizes: number[] = []
      for await (const page of pages((next) => admin.listEvents('pager', { limit: 3, next }))) sizes.push(page.models.length)
      expect(sizes).toEqual([3, 3, 1])
      const adminSeen: string[] = []
      for await (const event of admin.listAllAdminEvents({ tenant_id: 'pager', limit: 2 })) adminSeen.push(event.id)
      expect(adminSeen).toEqual([...ids].reverse())

      await Promise.all(['t1', 't2', 't3', 't4'].map((id) => admin.upsertTenant(id)))
      const tenants: string[] = []
      for await (const tenant of admin.listAllTenants({ limit: 2 })) tenants.push(tenant.id)
      const all = await admin.listTenants({ limit: 100 })
      expect(all.count).toBe(6)
      expect(tenants).toEqual(all.models.map((t) => t.id))
    })

    it('has a method for every route, and every route answered a call of the suite with a success', () => {
      const client = new OutflowClient({ baseUrl: served.api, apiKey })
      const missing = routes.map((r) => methodOf[r.operationId] ?? r.operationId).filter((name) => typeof (client as unknown as Record<string, unknown>)[name] !== 'function')
      expect(missing).toEqual([])
      const unanswered = routes.filter((route) => {
        const pattern = new RegExp(`^${route.path.replace(/\{[^}]+\}/g, '[^/]+')}$`)
        return !recorded.some((call) => call.method === route.method && pattern.test(call.path) && call.status < 300)
      })
      expect(unanswered.map((r) => `${r.method} ${r.path}`)).toEqual([])
    })
  })
}

describe('outflow/client without an answer', () => {
  it('surfaces a refused connection as an OutflowError with status 0, code unavailable and the cause', async () => {
    const port = await closedPort()
    const client = new OutflowClient({ baseUrl: `http://127.0.0.1:${port}/api/v1`, apiKey, retry: false })
    const error = await failure(client.getTenant('acme'))
    expect(error).toMatchObject({ status: 0, code: 'unavailable' })
    expect(error.message).toBe(`GET http://127.0.0.1:${port}/api/v1/tenants/acme: no answer: fetch failed: connect ECONNREFUSED 127.0.0.1:${port}`)
    expect(error.cause).toBeInstanceOf(Error)
  })

  it('refuses apiKey and token together', () => {
    expect(() => new OutflowClient({ baseUrl: 'http://127.0.0.1:9/api/v1', apiKey, token: 'x' })).toThrow(/give apiKey or token, not both/)
  })
})
