import { afterAll, describe, expect, it } from 'vitest'
import { storageKinds } from '../support/storages.js'

// The token bucket behind per-destination rate limits, with explicit times (no clock involved).
for (const kind of storageKinds()) {
  describe.runIf(kind.available)(`rate buckets: ${kind.name}`, () => {
    afterAll(() => kind.cleanup())
    const t0 = new Date('2026-01-01T00:00:00.000Z')
    const at = (ms: number) => new Date(t0.getTime() + ms)

    it('starts full: a burst of tokens at once, then one per 1/per_second', async () => {
      const storage = await kind.open()
      const limit = { per_second: 10, burst: 3 }
      const taken = []
      for (let i = 0; i < 4; i++) taken.push((await storage.takeToken('t', 'd', limit, t0)).waitMs)
      // Three tokens, then the next one is 100 ms away.
      expect(taken).toEqual([0, 0, 0, 100])
      expect((await storage.takeToken('t', 'd', limit, at(50))).waitMs).toBe(50)
      expect((await storage.takeToken('t', 'd', limit, at(100))).waitMs).toBe(0)
      expect((await storage.takeToken('t', 'd', limit, at(100))).waitMs).toBe(100)
    })

    it('refills up to the burst only, however long the pause', async () => {
      const storage = await kind.open()
      const limit = { per_second: 50, burst: 2 }
      await storage.takeToken('t', 'd', limit, t0)
      const after = []
      for (let i = 0; i < 3; i++) after.push((await storage.takeToken('t', 'd', limit, at(3_600_000))).waitMs)
      expect(after).toEqual([0, 0, 20])
    })

    it('defaults the burst to a tenth of a second of tokens, at least one', async () => {
      const storage = await kind.open()
      const granted = async (limit: { per_second: number }, destination: string) => {
        let n = 0
        while ((await storage.takeToken('t', destination, limit, t0)).waitMs === 0) n++
        return n
      }
      expect(await granted({ per_second: 50 }, 'fifty')).toBe(5)
      expect(await granted({ per_second: 2 }, 'two')).toBe(1)
    })

    it('keeps one bucket per destination and tenant', async () => {
      const storage = await kind.open()
      const limit = { per_second: 1, burst: 1 }
      expect((await storage.takeToken('a', 'd', limit, t0)).waitMs).toBe(0)
      expect((await storage.takeToken('b', 'd', limit, t0)).waitMs).toBe(0)
      expect((await storage.takeToken('a', 'e', limit, t0)).waitMs).toBe(0)
      expect((await storage.takeToken('a', 'd', limit, t0)).waitMs).toBe(1000)
    })

    it('never refills backwards when an instance with a slower clock asks', async () => {
      const storage = await kind.open()
      const limit = { per_second: 10, burst: 1 }
      expect((await storage.takeToken('t', 'd', limit, at(1000))).waitMs).toBe(0)
      // An earlier "now" from another instance adds nothing and takes nothing it does not have.
      expect((await storage.takeToken('t', 'd', limit, at(900))).waitMs).toBe(100)
      expect((await storage.takeToken('t', 'd', limit, at(1100))).waitMs).toBe(0)
    })
  })
}
