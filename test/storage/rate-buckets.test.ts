import { afterAll, describe, expect, it } from 'vitest'
import type { RateLimit } from '../../src/model/delivery-settings.js'
import type { Storage } from '../../src/storage/storage.js'
import { storageKinds } from '../support/storages.js'

// The token bucket behind per-destination rate limits, with explicit times (no clock involved).
for (const kind of storageKinds()) {
  describe.runIf(kind.available)(`rate buckets: ${kind.name}`, () => {
    afterAll(() => kind.cleanup())
    const t0 = new Date('2026-01-01T00:00:00.000Z')
    const at = (ms: number) => new Date(t0.getTime() + ms)
    /** Asks for one token: its waitMs (0 when it was given). */
    const one = async (storage: Storage, tenant: string, destination: string, limit: RateLimit, now: Date) => {
      const { taken, waitMs } = await storage.takeTokens(tenant, destination, limit, 1, now)
      expect([0, 1]).toContain(taken)
      return taken === 1 ? 0 : waitMs
    }

    it('starts full: a burst of tokens at once, then one per 1/per_second', async () => {
      const storage = await kind.open()
      const limit = { per_second: 10, burst: 3 }
      const taken = []
      for (let i = 0; i < 4; i++) taken.push(await one(storage, 't', 'd', limit, t0))
      // Three tokens, then the next one is 100 ms away.
      expect(taken).toEqual([0, 0, 0, 100])
      expect(await one(storage, 't', 'd', limit, at(50))).toBe(50)
      expect(await one(storage, 't', 'd', limit, at(100))).toBe(0)
      expect(await one(storage, 't', 'd', limit, at(100))).toBe(100)
    })

    it('gives several tokens in one call: as many as asked while the bucket has them, never more than it has', async () => {
      const storage = await kind.open()
      const limit = { per_second: 10, burst: 5 }
      // A full bucket: 3 of 5, with 2 left (no wait for the next).
      expect(await storage.takeTokens('t', 'd', limit, 3, t0)).toEqual({ taken: 3, waitMs: 0 })
      // 4 asked, 2 there: 2 given, and the next is 100 ms away.
      expect(await storage.takeTokens('t', 'd', limit, 4, t0)).toEqual({ taken: 2, waitMs: 100 })
      expect(await storage.takeTokens('t', 'd', limit, 4, at(50))).toEqual({ taken: 0, waitMs: 50 })
      // 250 ms later: 2.5 tokens refilled, 2 given, the half left is 50 ms from a whole one.
      expect(await storage.takeTokens('t', 'd', limit, 4, at(250))).toEqual({ taken: 2, waitMs: 50 })
    })

    it('gives at most the burst in one call, however many are asked', async () => {
      const storage = await kind.open()
      expect(await storage.takeTokens('t', 'd', { per_second: 100, burst: 4 }, 50, t0)).toEqual({ taken: 4, waitMs: 10 })
      expect(await storage.takeTokens('t', 'd', { per_second: 100, burst: 4 }, 50, at(3_600_000))).toEqual({ taken: 4, waitMs: 10 })
    })

    it('refills up to the burst only, however long the pause', async () => {
      const storage = await kind.open()
      const limit = { per_second: 50, burst: 2 }
      await one(storage, 't', 'd', limit, t0)
      const after = []
      for (let i = 0; i < 3; i++) after.push(await one(storage, 't', 'd', limit, at(3_600_000)))
      expect(after).toEqual([0, 0, 20])
    })

    it('defaults the burst to half a second of tokens, at least one', async () => {
      const storage = await kind.open()
      expect((await storage.takeTokens('t', 'fifty', { per_second: 50 }, 100, t0)).taken).toBe(25)
      expect((await storage.takeTokens('t', 'three', { per_second: 3 }, 100, t0)).taken).toBe(2)
      expect((await storage.takeTokens('t', 'one', { per_second: 1 }, 100, t0)).taken).toBe(1)
      expect((await storage.takeTokens('t', 'slow', { per_second: 0.1 }, 100, t0)).taken).toBe(1)
    })

    it('keeps one bucket per destination and tenant', async () => {
      const storage = await kind.open()
      const limit = { per_second: 1, burst: 1 }
      expect(await one(storage, 'a', 'd', limit, t0)).toBe(0)
      expect(await one(storage, 'b', 'd', limit, t0)).toBe(0)
      expect(await one(storage, 'a', 'e', limit, t0)).toBe(0)
      expect(await one(storage, 'a', 'd', limit, t0)).toBe(1000)
    })

    it('never refills backwards when an instance with a slower clock asks', async () => {
      const storage = await kind.open()
      const limit = { per_second: 10, burst: 1 }
      expect(await one(storage, 't', 'd', limit, at(1000))).toBe(0)
      // An earlier "now" from another instance adds nothing and takes nothing it does not have.
      expect(await one(storage, 't', 'd', limit, at(900))).toBe(100)
      expect(await one(storage, 't', 'd', limit, at(1100))).toBe(0)
    })

    it('gives concurrent takers together exactly the burst plus what the elapsed time refilled, never more', async () => {
      const storage = await kind.open()
      const limit = { per_second: 1000, burst: 20 }
      // The whole burst at t0: the bucket starts empty, so nothing can overflow (be lost) while it refills.
      let given = (await storage.takeTokens('t', 'd', limit, 20, t0)).taken
      expect(given).toBe(20)
      // 8 takers at once (on Postgres over 4 connections, so they meet on the row lock), each asking for
      // 1-3 tokens at a time; every call is 1 ms later than the one before (1 token at 1000/s), but calls
      // reach the bucket in any order.
      let clock = 0
      const taker = async (ask: number) => {
        for (let i = 0; i < 40; i++) {
          const { taken } = await storage.takeTokens('t', 'd', limit, ask, at(++clock))
          expect(taken).toBeGreaterThanOrEqual(0)
          expect(taken).toBeLessThanOrEqual(ask)
          given += taken
        }
      }
      await Promise.all([1, 2, 3, 1, 2, 3, 2, 3].map(taker))
      // Whatever is left, taken at the latest time: then every token the bucket ever had was given once.
      given += (await storage.takeTokens('t', 'd', limit, 20, at(clock))).taken
      const bound = limit.burst + (clock / 1000) * limit.per_second
      expect(given).toBeLessThanOrEqual(bound)
      expect(given).toBeGreaterThanOrEqual(bound - 1)
    })
  })
}
