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

const options = { windowMs: 1000, batchSize: 10, intervalMs: 60_000, logger: silent, now: () => new Date(1e12) }

describe('pruner pacing', () => {
  it('pauses between batches three times as long as a batch took while the engine has live work', async () => {
    const batchMs = 20
    const { storage, spans } = slowPruneStorage(5, batchMs)
    let asked = 0
    const pruner = new Pruner(storage, { ...options, busy: () => (asked++, true) })
    expect((await pruner.prune()).events).toBe(50)
    expect(spans.length).toBe(6)
    expect(asked).toBe(5)
    for (let i = 1; i < spans.length; i++) expect(spans[i]!.start - spans[i - 1]!.end).toBeGreaterThanOrEqual(3 * batchMs - 1)
  })

  it('lets the engine\'s timers run between every two batches', async () => {
    const batchMs = 10
    const { storage, spans } = slowPruneStorage(4, batchMs)
    const fired: number[] = []
    const timer = setInterval(() => fired.push(performance.now()), 1)
    try {
      const pruner = new Pruner(storage, { ...options, busy: () => true })
      await pruner.prune()
    } finally {
      clearInterval(timer)
    }
    // Every gap between two batches saw the engine's timer fire at least once.
    for (let i = 1; i < spans.length; i++) expect(fired.some((t) => t > spans[i - 1]!.end && t < spans[i]!.start)).toBe(true)
  })
})
