import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, engineKinds, jwtSecret } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { startReceiver, waitFor } from '../support/receiver.js'

/** A receipt at the sink: the event's key and place in publish order, and whether the sink said 200. */
interface Receipt {
  path: string
  id: string
  key: string
  n: number
  ok: boolean
}

// FIFO destinations: per ordering key, an event is attempted only after the one published before it succeeded
// (or, with on_exhausted: "skip", was given up on); other keys go on in parallel.
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`ordered delivery: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const receipts: Receipt[] = []
    /** Event ids the sink refuses (500) until they are taken out. */
    const poisoned = new Set<string>()
    let releaseHeld: () => void = () => {}
    const held = new Promise<void>((resolve) => (releaseHeld = resolve))
    const T = 'fifo'
    beforeAll(async () => {
      receiver = await startReceiver((r) => {
        const data = JSON.parse(r.body) as { key: string; n: number }
        const id = String(r.headers['webhook-id'])
        // Every fifth event (by n) fails its first attempt: retries must hold the key back.
        const ok = !poisoned.has(id) && !(data.n % 5 === 2 && !receipts.some((x) => x.id === id && x.path === r.path))
        receipts.push({ path: r.path, id, key: data.key, n: data.n, ok })
        if (r.path === '/held' && data.n === 4000) return { until: held }
        return ok ? {} : { status: 500 }
      })
      outflow = await kind.create({ delivery: { pollIntervalMs: 50, concurrency: 50, perDestinationConcurrency: 20 } })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      releaseHeld()
      await kind.cleanup()
      await receiver.close()
    })

    const fifo = (path: string, topic: string, extra: Record<string, unknown> = {}) =>
      outflow.createDestination(T, {
        type: 'webhook',
        topics: [topic],
        config: { url: `${receiver.url}${path}` },
        delivery: { ordering: 'fifo', ordering_key: 'data.key', schedule: [20], max_attempts: 5, ...extra },
      })
    const at = (path: string) => receipts.filter((r) => r.path === path)

    it('attempts each key strictly in publish order through retries, keys in parallel', async () => {
      await fifo('/ordered', 'o')
      const keys = ['a', 'b', 'c', 'd']
      // 25 a key, one after the other (each waits for the one before to be written): what a loaded machine
      // stretches, so the bound is generous and the count small (200 took over 30 s at load 10 on 2 cores).
      const events = Array.from({ length: 100 }, (_, n) => ({ tenant_id: T, topic: 'o', data: { key: keys[n % 4]!, n } }))
      for (let i = 0; i < events.length; i += 50) await outflow.publishMany(events.slice(i, i + 50))
      await waitFor(() => new Set(at('/ordered').filter((r) => r.ok).map((r) => r.n)).size === 100, 90_000, 'every event delivered')
      for (const key of keys) {
        const attempts = at('/ordered').filter((r) => r.key === key).map((r) => r.n)
        // Never an attempt of a later event before the earlier one succeeded: the attempts run in order,
        // a failed one repeated right where it was.
        expect(attempts).toEqual([...attempts].sort((x, y) => x - y))
        expect(new Set(attempts)).toEqual(new Set(events.filter((e) => e.data.key === key).map((e) => e.data.n)))
      }
      // The retries happened (every fifth event failed once), so the order held through them.
      expect(at('/ordered').filter((r) => !r.ok).length).toBe(20)
    }, 120_000)

    it('goes on after an exhausted delivery by default (skip)', async () => {
      const d = await fifo('/skip', 's', { max_attempts: 2 })
      // Poisoned before it is published: its first attempt can start before publishMany has answered.
      poisoned.add('skip-first')
      const [first] = await outflow.publishMany([{ id: 'skip-first', tenant_id: T, topic: 's', data: { key: 'k', n: 1000 } }])
      const [second] = await outflow.publishMany([{ tenant_id: T, topic: 's', data: { key: 'k', n: 1001 } }])
      await waitFor(() => at('/skip').some((r) => r.id === second!.id && r.ok), 10_000, 'the second event')
      expect(at('/skip').map((r) => [r.n, r.ok])).toEqual([[1000, false], [1000, false], [1001, true]])
      expect((await outflow.getEvent(T, first!.id, { destination_id: d.id })).status).toBe('failed')
    })

    it('holds the key behind an exhausted delivery with on_exhausted: "block" until it is retried and succeeds', async () => {
      const d = await fifo('/block', 'b', { max_attempts: 2, on_exhausted: 'block' })
      poisoned.add('block-first')
      const [first] = await outflow.publishMany([{ id: 'block-first', tenant_id: T, topic: 'b', data: { key: 'k', n: 2000 } }])
      const [second] = await outflow.publishMany([{ tenant_id: T, topic: 'b', data: { key: 'k', n: 2001 } }])
      await waitFor(async () => (await outflow.listDeliveries(T, first!.id).catch(() => [])).length === 2, 10_000, 'both attempts of the first event')
      // Nothing can make the second one due: no waiting delivery is free to go.
      expect(await outflow.storage.promoteWaitingDeliveries(new Date())).toBe(0)
      expect(at('/block').map((r) => r.n)).toEqual([2000, 2000])
      poisoned.delete(first!.id)
      await outflow.retryDelivery(T, d.id, first!.id)
      await waitFor(() => at('/block').some((r) => r.id === second!.id), 10_000, 'the second event')
      expect(at('/block').map((r) => [r.n, r.ok])).toEqual([[2000, false], [2000, false], [2000, true], [2001, true]])
    })

    it('keeps the order when the destination is disabled and enabled again mid-sequence', async () => {
      const d = await fifo('/held', 'h', { timeout_ms: 30_000 })
      // The first event is in flight (the sink holds it); the other nineteen wait behind it.
      await outflow.publishMany(Array.from({ length: 20 }, (_, i) => ({ tenant_id: T, topic: 'h', data: { key: 'k', n: 4000 + i } })))
      await waitFor(() => at('/held').length === 1, 10_000, 'the first attempt')
      await outflow.disableDestination(T, d.id)
      releaseHeld()
      // Its success lets the second go, which finds the destination disabled and is parked.
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id })).models.some((e) => e.skipped_at), 10_000, 'the second event parked')
      await outflow.enableDestination(T, d.id)
      await waitFor(() => new Set(at('/held').filter((r) => r.ok).map((r) => r.n)).size === 20, 15_000, 'every event')
      const attempts = at('/held').map((r) => r.n)
      expect(attempts).toEqual([...attempts].sort((x, y) => x - y))
    })

    it('orders the whole destination as one sequence without an ordering_key', async () => {
      await outflow.createDestination(T, { type: 'webhook', topics: ['w'], config: { url: `${receiver.url}/whole` }, delivery: { ordering: 'fifo', schedule: [20] } })
      await outflow.publishMany(Array.from({ length: 30 }, (_, i) => ({ tenant_id: T, topic: 'w', data: { key: String(i % 3), n: 3000 + i } })))
      await waitFor(() => new Set(at('/whole').filter((r) => r.ok).map((r) => r.n)).size === 30, 15_000, 'every event')
      const attempts = at('/whole').map((r) => r.n)
      expect(attempts).toEqual([...attempts].sort((x, y) => x - y))
    })
  })
}

describe.runIf(postgresAvailable)('ordered delivery with Outflow in a Postgres schema of its own', () => {
  it('takes publish order from the sequence in that schema', async () => {
    const db = await createTestDatabase()
    const received: number[] = []
    const receiver = await startReceiver((r) => (received.push((JSON.parse(r.body) as { n: number }).n), {}))
    const outflow = await createOutflow({ storage: postgres({ url: db.url, schema: 'fifo_s' }), apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { pollIntervalMs: 50 } })
    try {
      await outflow.upsertTenant('t', {})
      await outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/s` }, delivery: { ordering: 'fifo' } })
      await outflow.publishMany(Array.from({ length: 10 }, (_, n) => ({ tenant_id: 't', topic: 'a', data: { n } })))
      await waitFor(() => received.length === 10, 10_000, 'every event')
      expect(received).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    } finally {
      await outflow.close()
      await receiver.close()
      await db.drop()
    }
  })
})
