import { setTimeout as sleep } from 'node:timers/promises'
import type { RateLimit } from '../model/delivery-settings.js'
import type { Storage } from '../storage/storage.js'

/** Longest a destination's taker sleeps before asking the bucket again (a changed limit is picked up this soon). */
const maxWaitMs = 1_000

interface Waiter {
  /** The destination's limit for this delivery now; undefined once it needs no token (dropped, limit removed, stopping). */
  limit: () => Promise<RateLimit | undefined>
  resolve: () => void
  reject: (err: unknown) => void
}

/**
 * Per-destination rate limits shared by every instance: the token bucket lives in the database
 * (`rate_buckets`), and each attempt takes one token from it before it starts. One taker per destination and
 * instance asks the bucket for as many tokens as deliveries are waiting (up to the burst) in one round trip,
 * hands out what it got in arrival order and sleeps until the next token is due: no busy polling, and no
 * tokens left to overflow a full bucket while a round trip is on its way. Waiting deliveries sit in their
 * destination's own queue, never in a global slot, so other destinations run at full speed.
 */
export class RateLimiter {
  readonly #storage: Storage
  readonly #now: () => Date
  /** Each destination's deliveries waiting for a token, in arrival order; listed while its taker runs. */
  readonly #waiting = new Map<string, Waiter[]>()

  constructor(storage: Storage, now: () => Date) {
    this.#storage = storage
    this.#now = now
  }

  /**
   * Resolves when the destination's bucket gave this attempt a token (at once when `limit()` says it needs
   * none). A token given to a delivery that is then not attempted (dropped meanwhile) is spent all the same.
   */
  acquire(tenantId: string, destinationId: string, limit: () => Promise<RateLimit | undefined>): Promise<void> {
    const key = `${tenantId}\u0000${destinationId}`
    return new Promise((resolve, reject) => {
      const waiter = { limit, resolve, reject }
      const waiting = this.#waiting.get(key)
      if (waiting) return void waiting.push(waiter)
      this.#waiting.set(key, [waiter])
      void this.#takeFor(key, tenantId, destinationId)
    })
  }

  /** The destination's taker: runs until no delivery waits; a storage error fails every waiting delivery. */
  async #takeFor(key: string, tenantId: string, destinationId: string): Promise<void> {
    const waiting = this.#waiting.get(key)!
    try {
      // Deliveries claimed together come in the same turn of the event loop: the first request asks for all of them.
      await new Promise((resolve) => setImmediate(resolve))
      while (waiting.length > 0) {
        // Only acquire() touches the list meanwhile, and only to append.
        const asked = waiting.length
        const limits = await Promise.all(waiting.slice(0, asked).map((w) => w.limit()))
        const current = limits.find((l) => l !== undefined)
        const asking = waiting.slice(0, asked).filter((_, i) => limits[i] !== undefined)
        for (const [i, w] of waiting.splice(0, asked, ...asking).entries()) if (!limits[i]) w.resolve()
        if (!current) continue
        const { taken, waitMs } = await this.#storage.takeTokens(tenantId, destinationId, current, asking.length, this.#now())
        for (const w of waiting.splice(0, taken)) w.resolve()
        if (waiting.length > 0 && waitMs > 0) await sleep(Math.min(waitMs, maxWaitMs))
      }
    } catch (err) {
      for (const w of waiting.splice(0)) w.reject(err)
    } finally {
      this.#waiting.delete(key)
    }
  }
}
