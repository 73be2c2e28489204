import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { createHttpHandler } from '../../src/http/handler.js'
import { apiKey, engineKinds } from '../support/engines.js'
import { startReceiver, waitFor, type Received } from '../support/receiver.js'

// Batched delivery (docs/delivery.md › Batched delivery): deliveries of a destination with `batch` go out together,
// one signed POST per batch for webhooks, while the attempt log, retries and rate limits stay per event.

const T = 't'

interface CloudEvent {
  specversion: string
  id: string
  source: string
  type: string
  time: string
  datacontenttype: string
  data: { n: number; key?: string }
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`batched delivery: ${kind.name}`, () => {
    let outflow: Outflow
    // /fail-once-* answers 500 to its first request; /relay-* is a relay gateway.
    const receiver = startReceiver((r, n) => ({ status: r.path.startsWith('/fail-once') && n === 0 ? 500 : 200 }))
    let url: string
    let on: (path: string) => Received[]
    /** A webhook destination batching per `batch`, on its own receiver path, with its signing secret. */
    const hook = async (path: string, topic: string, batch: Record<string, unknown>, delivery: Record<string, unknown> = {}) => {
      const created = await outflow.createDestination(T, { type: 'webhook', topics: [topic], config: { url: `${url}${path}` }, batch, delivery })
      return { id: created.id, secret: String(created.credentials.secret) }
    }
    const events = (r: Received) => JSON.parse(r.body) as CloudEvent[]
    const publish = async (topic: string, count: number, data: (i: number) => Record<string, unknown> = (i) => ({ n: i })) =>
      (await outflow.publishMany(Array.from({ length: count }, (_, i) => ({ tenant_id: T, topic, data: data(i) })))).map((r) => r.id)

    beforeAll(async () => {
      const r = await receiver
      url = r.url
      on = r.on
      outflow = await kind.create({ delivery: { pollIntervalMs: 50, retry: { schedule: [200], jitter: 0 } } })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await (await receiver).close()
    })

    it('sends events due together as one CloudEvents batch, signed as one body, after max_wait_ms; each event logs its own attempt', async () => {
      const { id: destinationId, secret } = await hook('/ce', 'ce', { max_events: 10, max_wait_ms: 100 })
      const ids = await publish('ce', 3)
      const [request] = await waitFor(() => on('/ce').length > 0 && on('/ce'), 10_000, 'the batch')
      expect(request!.headers['content-type']).toBe('application/cloudevents-batch+json')
      expect(request!.headers['webhook-id']).toMatch(/^batch_[0-9a-f]{32}$/)
      expect(new Webhook(secret).verify(request!.body, request!.headers as Record<string, string>)).toHaveLength(3)
      const batch = events(request!)
      expect(batch.map((e) => e.id)).toEqual(ids)
      expect(batch[0]).toEqual({ specversion: '1.0', id: ids[0], source: `/tenants/${T}`, type: 'ce', time: expect.any(String), datacontenttype: 'application/json', data: { n: 0 } })
      for (const id of ids) {
        const attempts = await waitFor(async () => ((await outflow.listDeliveries(T, id).catch(() => [])).length > 0 ? outflow.listDeliveries(T, id) : false), 10_000, 'the attempt')
        expect(attempts).toMatchObject([{ status: 'success', destination_id: destinationId, attempt_number: 1 }])
      }
    })

    it('splits by max_events (25 events, 10 a batch: 3 requests, every event once) in the json format', async () => {
      await hook('/json', 'json', { max_events: 10, max_wait_ms: 300, format: 'json' })
      const ids = await publish('json', 25)
      await waitFor(() => on('/json').flatMap(events).length >= 25, 10_000, 'every event')
      const requests = on('/json')
      expect(requests.map((r) => r.headers['content-type'])).toEqual(['application/json', 'application/json', 'application/json'])
      expect(requests.map((r) => events(r).length).sort((a, b) => b - a)).toEqual([10, 10, 5])
      expect(requests.flatMap(events).map((e) => e.id).sort()).toEqual([...ids].sort())
      expect(Object.keys(events(requests[0]!)[0]!)).toEqual(['id', 'topic', 'time', 'metadata', 'data'])
      expect(events(requests[0]!)[0]).toMatchObject({ topic: 'json', metadata: { 'event-id': expect.any(String), topic: 'json' } })
    })

    it('splits by max_bytes of event data: an event that would pass it starts the next batch', async () => {
      await hook('/bytes', 'bytes', { max_events: 10, max_bytes: 1024, max_wait_ms: 50 })
      // About 420 bytes each: two fit in 1,024, a third would not.
      await publish('bytes', 5, (i) => ({ n: i, pad: 'x'.repeat(400) }))
      await waitFor(() => on('/bytes').flatMap(events).length >= 5, 10_000, 'every event')
      // Batches may be sent side by side (perDestinationConcurrency), so in any order.
      expect(on('/bytes').map((r) => events(r).map((e) => e.data.n)).sort((a, b) => a[0]! - b[0]!)).toEqual([[0, 1], [2, 3], [4]])
    })

    it('fails the whole batch on a 500 and retries it; each event logs its failed and its successful attempt', async () => {
      await hook('/fail-once-b', 'fail', { max_events: 10, max_wait_ms: 50 })
      const ids = await publish('fail', 2)
      await waitFor(() => on('/fail-once-b').length >= 2, 10_000, 'the retried batch')
      expect(on('/fail-once-b').map((r) => events(r).map((e) => e.id))).toEqual([ids, ids])
      for (const id of ids) {
        const attempts = await waitFor(async () => {
          const log = await outflow.listDeliveries(T, id).catch(() => [])
          return log.length === 2 && log
        }, 10_000, 'both attempts written')
        expect(attempts.map((a) => [a.attempt_number, a.status, a.response_status_code])).toEqual([
          [2, 'success', 200],
          [1, 'failed', 500],
        ])
      }
    })

    it('spends one rate-limit token per event of a batch', async () => {
      const limit = { per_second: 0.01, burst: 3 }
      const { id } = await hook('/limited', 'limited', { max_events: 10, max_wait_ms: 50 }, { rate_limit: limit })
      const ids = await publish('limited', 3)
      await waitFor(() => on('/limited').length > 0, 10_000, 'the batch')
      expect(on('/limited').map((r) => events(r).map((e) => e.id))).toEqual([ids])
      // The burst of 3 went to the batch's 3 events; the next token is 100 s away.
      expect((await outflow.storage.takeTokens(T, id, limit, 1, new Date())).taken).toBe(0)
    })

    it('keeps a FIFO destination in order per key: never two of one key in a batch', async () => {
      await hook('/fifo', 'fifo', { max_events: 10, max_wait_ms: 50 }, { ordering: 'fifo', ordering_key: 'data.key' })
      await publish('fifo', 6, (i) => ({ n: i, key: i % 2 ? 'b' : 'a' }))
      await waitFor(() => on('/fifo').flatMap(events).length >= 6, 10_000, 'every event')
      for (const request of on('/fifo')) {
        const keys = events(request).map((e) => e.data.key)
        expect(new Set(keys).size).toBe(keys.length)
      }
      const sent = on('/fifo').flatMap(events).map((e) => e.data)
      expect(sent.filter((d) => d.key === 'a').map((d) => d.n)).toEqual([0, 2, 4])
      expect(sent.filter((d) => d.key === 'b').map((d) => d.n)).toEqual([1, 3, 5])
    })

    it('replays batched deliveries as batches (each event once more)', async () => {
      const { id } = await hook('/replay', 'replay', { max_events: 10, max_wait_ms: 50 })
      const ids = await publish('replay', 3)
      await waitFor(() => on('/replay').flatMap(events).length >= 3, 10_000, 'the first delivery')
      // The replay selects deliveries whose success is written.
      for (const eventId of ids) await waitFor(async () => (await outflow.listDeliveries(T, eventId).catch(() => [])).length > 0, 10_000, 'the attempt written')
      const job = await outflow.replayDestination(T, id, { since: new Date(Date.now() - 60_000).toISOString(), status: 'success' })
      expect(job.matched).toBe(3)
      await waitFor(async () => (await outflow.getReplay(T, id, job.id)).status === 'completed', 10_000, 'the replay')
      // Right after live traffic the replay is admitted a delivery at a time (replay-admission.ts): batches of one.
      const replayed = on('/replay').slice(1)
      expect(replayed.map((r) => r.headers['content-type'])).toEqual(replayed.map(() => 'application/cloudevents-batch+json'))
      expect(replayed.flatMap(events).map((e) => e.id).sort()).toEqual([...ids].sort())
    })

    it('does not send an event erased while it waits for its batch', async () => {
      await hook('/erase', 'erase', { max_events: 10, max_wait_ms: 500 })
      const [erased, kept] = await publish('erase', 2)
      expect((await outflow.expungeEvents(T, { ids: [erased!] })).results).toEqual([{ id: erased, status: 'expunged' }])
      await waitFor(() => on('/erase').length > 0, 10_000, 'the batch')
      expect(on('/erase').flatMap(events).map((e) => e.id)).toEqual([kept])
    })

    it('publishes a batch one message at a time for a type without publishBatch (relay)', async () => {
      await outflow.createDestination(T, { type: 'relay', topics: ['relay'], config: { url: `${url}/relay-1` }, credentials: { token: 'relay-token' }, batch: { max_events: 10, max_wait_ms: 50 } })
      const ids = await publish('relay', 3)
      await waitFor(() => on('/relay-1').length >= 3, 10_000, 'three relay requests')
      expect(on('/relay-1').map((r) => r.headers['webhook-id'])).toEqual(ids)
    })

    it('validates batch over HTTP (422 with field data), merge-patches it and removes it with null', async () => {
      const handler = createHttpHandler(outflow)
      const call = async (method: string, path: string, body: unknown) => {
        const response = await handler(new Request(`http://engine/api/v1/tenants/${T}${path}`, { method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }))
        return { status: response.status, body: (await response.json()) as { data?: Record<string, string>; batch?: unknown; id?: string } }
      }
      const create = (batch: unknown) => call('POST', '/destinations', { type: 'webhook', topics: ['v'], config: { url: `${url}/v` }, batch })
      expect(await create({ max_events: 0 })).toMatchObject({ status: 422, body: { data: { 'batch.max_events': 'must be an integer between 1 and 1000' } } })
      expect(await create({})).toMatchObject({ status: 422, body: { data: { 'batch.max_events': 'required' } } })
      expect(await create({ max_events: 5, format: 'xml', max_bytes: 10, extra: 1 })).toMatchObject({
        status: 422,
        body: { data: { 'batch.format': 'must be "cloudevents" or "json"', 'batch.max_bytes': expect.stringContaining('between 1024'), 'batch.extra': 'unexpected field' } },
      })
      const created = await create({ max_events: 5 })
      expect(created).toMatchObject({ status: 201, body: { batch: { max_events: 5 } } })
      const path = `/destinations/${created.body.id}`
      expect(await call('PATCH', path, { batch: { max_wait_ms: 20, format: 'json' } })).toMatchObject({ status: 200, body: { batch: { max_events: 5, max_wait_ms: 20, format: 'json' } } })
      expect(await call('PATCH', path, { batch: { max_events: null } })).toMatchObject({ status: 422, body: { data: { 'batch.max_events': 'required' } } })
      expect(await call('PATCH', path, { batch: { max_events: 2000 } })).toMatchObject({ status: 422, body: { data: { 'batch.max_events': expect.any(String) } } })
      expect((await outflow.getDestination(T, created.body.id!)).batch).toEqual({ max_events: 5, max_wait_ms: 20, format: 'json' })
      const removed = await call('PATCH', path, { batch: null })
      expect(removed.status).toBe(200)
      expect(removed.body.batch).toBeUndefined()
    })
  })
}
