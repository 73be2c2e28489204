import type { Storage } from '../storage/storage.js'

// How often an idle engine looks for rare work. On plain Postgres and SQLite each look is an index probe, made
// every poll interval (the FIFO safety net at most once a second). On Citus (Storage.readsEveryShard) a look that
// names no tenant is a query on every shard, and with several engines these idle looks took 300–1,000 ms each on
// a small cluster (docs/citus.md): there they are made seldom. Claims keep the poll interval on every storage.

/** Between two looks for a replay or erasure job while none is waiting. The engine that creates a job wakes its own runners at once; this bounds how soon another instance takes up a job its creator cannot run. */
export function jobPollMs(storage: Pick<Storage, 'readsEveryShard'>, pollIntervalMs: number): number {
  return storage.readsEveryShard ? Math.max(pollIntervalMs, 10_000) : pollIntervalMs
}

/** How long an engine that wrote an ordered delivery's result keeps the FIFO safety net at its busy pace. */
export const orderedWorkMs = 60_000

/**
 * Between two runs of the FIFO safety net (Storage.promoteWaitingDeliveries), which scans every waiting delivery:
 * at most once a second; on Citus every 30 s, but once a second for a minute after this engine wrote an ordered
 * delivery's result (`orderedWork`). A delivery left waiting by the race the net is for has a head whose result
 * some engine wrote, so that engine runs the net soon.
 */
export function promotePollMs(storage: Pick<Storage, 'readsEveryShard'>, pollIntervalMs: number, orderedWork: boolean): number {
  return Math.max(pollIntervalMs, storage.readsEveryShard && !orderedWork ? 30_000 : 1_000)
}
