import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Webhook } from 'standardwebhooks'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { apiKey, engineKinds, jwtSecret } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// An attempt sends the event's data as the JSON text the storage holds: no parse and no serialisation per
// attempt, and the same bytes on every attempt of an event.

const order = { order: 'ord_1', total: 42.5, items: [{ sku: 'a-1', qty: 2 }], note: 'café ☕' }

describe.each(engineKinds())('the body of each attempt: $name', (kind) => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    // The first request to each path fails, so every event is attempted twice: once as published, once claimed.
    receiver = await startReceiver((_r, n) => ({ status: n === 0 ? 500 : 200 }))
  })
  afterAll(() => receiver?.close())
  afterEach(() => kind.cleanup())

  it.runIf(kind.available)('sends the published data on the first attempt and on the retry, signed over the bytes sent', async () => {
    const outflow = await kind.create({ delivery: { pollIntervalMs: 50, retry: { schedule: [50], jitter: 0 } } })
    await outflow.upsertTenant('t', {})
    const path = `/${kind.name.replace(/\W+/g, '-')}`
    const destination = await outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}${path}` } })
    const secret = String((await outflow.getDestination('t', destination.id)).credentials.secret)
    await outflow.publish({ tenant_id: 't', topic: 'order.created', data: order })
    await waitFor(() => receiver.on(path).length >= 2, 10_000, 'the first attempt and its retry')
    const [first, retry] = receiver.on(path)
    // The first attempt carries the text written at publish, the publisher's own key order.
    expect(first!.body).toBe(JSON.stringify(order))
    expect(JSON.parse(retry!.body)).toEqual(order)
    for (const r of [first!, retry!]) expect(new Webhook(secret).verify(r.body, r.headers as Record<string, string>)).toEqual(order)
    // SQLite keeps the text as written: the retry's bytes are the first attempt's.
    if (kind.name.startsWith('sqlite')) expect(retry!.body).toBe(first!.body)
  })
})

describe('a delivery claimed from SQLite', () => {
  let dir: string
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'outflow-stored-'))
    receiver = await startReceiver()
  })
  afterAll(async () => {
    await receiver?.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('sends the stored JSON text byte for byte, not the data serialised again', async () => {
    const path = join(dir, 'outflow.db')
    const options = { apiKey, jwtSecret, allowPrivateNetworks: true, storage: sqlite({ path }) }
    const publisher = await createOutflow({ ...options, delivery: { worker: false } })
    await publisher.upsertTenant('t', {})
    const destination = await publisher.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/claimed` } })
    const secret = String((await publisher.getDestination('t', destination.id)).credentials.secret)
    const { id } = await publisher.publish({ tenant_id: 't', topic: 'order.created', data: { a: 1 } })
    await publisher.close()
    // Text no JSON.stringify writes (spaces, 2.50, an escaped é): what the stored bytes are is what goes out.
    const stored = '{"b": 1,  "a": 2.50, "s": "caf\\u00e9"}'
    const db = new Database(path)
    expect(db.prepare('update events set data = ? where id = ?').run(stored, id).changes).toBe(1)
    db.close()

    const worker = await createOutflow({ ...options, delivery: { pollIntervalMs: 50 } })
    try {
      await waitFor(() => receiver.on('/claimed').length >= 1, 10_000, 'the claimed delivery')
      const [received] = receiver.on('/claimed')
      expect(received!.body).toBe(stored)
      expect(new Webhook(secret).verify(received!.body, received!.headers as Record<string, string>)).toEqual({ b: 1, a: 2.5, s: 'café' })
      // The API still reads the data as data (once the attempt is recorded, the event is listed).
      const event = await waitFor(async () => (await worker.listEvents('t', { status: 'success', limit: 1 })).models[0], 10_000, 'the attempt recorded')
      expect(event.data).toEqual({ b: 1, a: 2.5, s: 'café' })
    } finally {
      await worker.close()
    }
  })
})
