import { describe, expect, it } from 'vitest'
import { Pruner } from '../../src/engine/pruner.js'
import type { Storage } from '../../src/storage/storage.js'

const silent = { debug() {}, info() {}, warn() {}, error() {} }

/** Blocks the thread like a better-sqlite3 statement does. */
function spin(ms: number): void {
  const until = performance.now() + ms
  while (performance.now() < until);
}

/** A storage whose every prune batch holds the thread for `batchMs`, with `batches` full batches to delete. */
function slowPruneStorage(batches: number, batchMs: number) {
  const spans: { start: number; end: number }[] = []
  let left = batches
  const storage = {
    pruneEvents() {
      const start = performance.now()
      spin(batchMs)
      spans.push({ start, end: performance.now() })
      const found = left-- > 0 ? 10 : 0
      return Promise.resolve({ events: found, deliveries: found, attempts: found, found, last: found ? new Date(spans.length) : null })
    },
  } as unknown as Storage
  return { storage, spans }
}

describe('pruner pacing', () => {
  it('pauses between batches for as long as a batch took when other work was waiting', async () => {
    const batchMs = 20
    const { storage, spans } = slowPruneStorage(5, batchMs)
    // Live traffic: a callback due every millisecond that itself takes 1 ms.
    let served = 0
    const traffic = setInterval(() => {
      served++
      spin(1)
    }, 1)
    await new Promise((r) => setTimeout(r, 10))
    try {
      const pruner = new Pruner(storage, { windowMs: 1000, batchSize: 10, intervalMs: 60_000, logger: silent, now: () => new Date(1e12) })
      const result = await pruner.prune()
      expect(result.events).toBe(50)
    } finally {
      clearInterval(traffic)
    }
    expect(spans.length).toBe(6)
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start - spans[i - 1]!.end).toBeGreaterThanOrEqual(batchMs - 1)
    // The traffic ran in those pauses.
    expect(served).toBeGreaterThanOrEqual(spans.length - 1)
  })
})
