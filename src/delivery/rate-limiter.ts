import PQueue from 'p-queue'
import { setTimeout as sleep } from 'node:timers/promises'
import type { RateLimit } from '../model/delivery-settings.js'
import type { Storage } from '../storage/storage.js'

/** Longest a waiter sleeps before asking the bucket again (a changed limit is picked up this soon). */
const maxWaitMs = 1_000

/**
 * Per-destination rate limits shared by every instance: the token bucket lives in the database
 * (`rate_buckets`), and each attempt takes one token from it before it starts. One waiter per destination
 * and instance asks at a time, so a limited destination costs one round trip per attempt and no busy polling;
 * its queued attempts wait in its own queue, never in a global slot, so other destinations run at full speed.
 */
export class RateLimiter {
  readonly #storage: Storage
  readonly #now: () => Date
  readonly #gates = new Map<string, PQueue>()

  constructor(storage: Storage, now: () => Date) {
    this.#storage = storage
    this.#now = now
  }

  #gate(key: string): PQueue {
    const gate = new PQueue({ concurrency: 1 })
    this.#gates.set(key, gate)
    gate.on('idle', () => {
      if (this.#gates.get(key) === gate && gate.size === 0 && gate.pending === 0) this.#gates.delete(key)
    })
    return gate
  }

  /** Resolves when the destination's bucket gave this attempt a token (at once when `limit()` says it has none). */
  async acquire(tenantId: string, destinationId: string, limit: () => Promise<RateLimit | undefined>): Promise<void> {
    const key = `${tenantId}\u0000${destinationId}`
    const gate = this.#gates.get(key) ?? this.#gate(key)
    await gate.add(async () => {
      for (;;) {
        const current = await limit()
        if (!current) return
        const { waitMs } = await this.#storage.takeToken(tenantId, destinationId, current, this.#now())
        if (waitMs === 0) return
        await sleep(Math.min(waitMs, maxWaitMs))
      }
    })
  }
}
