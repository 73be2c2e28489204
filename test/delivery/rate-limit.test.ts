import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import type { RateLimit } from '../../src/model/delivery-settings.js'
import { engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// The worker takes a token from a rate-limited destination's bucket before each attempt (several per round trip
// when several attempts wait), and never for others.
// (The rate itself, across three processes, is measured in test/scale/rate-limit.test.ts.)
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`per-destination rate limit: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    /** Every token request the worker made: the destination, how many it asked for and how many it got. */
    const log: { destination: string; asked: number; taken: number }[] = []
    const T = 'limits'
    beforeAll(async () => {
      receiver = await startReceiver()
      const storage = await kind.openStorage()
      const take = storage.takeTokens.bind(storage)
      const tapped = {
        ...storage,
        takeTokens: async (tenantId: string, destinationId: string, limit: RateLimit, count: number, now: Date) => {
          const result = await take(tenantId, destinationId, limit, count, now)
          log.push({ destination: destinationId, asked: count, taken: result.taken })
          return result
        },
      }
      outflow = await kind.create({ storage: tapped, delivery: { pollIntervalMs: 50 } })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('attempts a limited destination only with a token from its bucket, waiting when it is empty', async () => {
      const limited = await outflow.createDestination(T, { type: 'webhook', topics: ['a'], config: { url: `${receiver.url}/limited` }, delivery: { rate_limit: { per_second: 5, burst: 2 } } })
      const free = await outflow.createDestination(T, { type: 'webhook', topics: ['a'], config: { url: `${receiver.url}/free` } })
      await outflow.publishMany(Array.from({ length: 12 }, (_, i) => ({ tenant_id: T, topic: 'a', data: { i } })))
      await waitFor(() => receiver.on('/limited').length === 12 && receiver.on('/free').length === 12, 15_000, 'every delivery')
      const tokens = log.filter((l) => l.destination === limited.id)
      // One token per attempt, several per request while several attempts waited (the full bucket of 2 at
      // first); the bucket ran dry, so some requests got fewer than they asked for and had to wait.
      expect(tokens.reduce((sum, t) => sum + t.taken, 0)).toBe(12)
      expect(tokens.some((t) => t.taken > 1)).toBe(true)
      expect(tokens.some((t) => t.taken < t.asked)).toBe(true)
      expect(log.some((l) => l.destination === free.id)).toBe(false)
    })

    it('stops limiting once the limit is removed', async () => {
      const d = await outflow.createDestination(T, { type: 'webhook', topics: ['b'], config: { url: `${receiver.url}/unlimited-later` }, delivery: { rate_limit: { per_second: 1000 } } })
      await outflow.updateDestination(T, d.id, { delivery: { rate_limit: null } })
      // The update evicted this instance's cached copy of the destination at once.
      await outflow.publishMany(Array.from({ length: 5 }, () => ({ tenant_id: T, topic: 'b', data: {} })))
      await waitFor(() => receiver.on('/unlimited-later').length === 5, 15_000, 'the deliveries')
      expect(log.some((l) => l.destination === d.id)).toBe(false)
    })
  })
}
