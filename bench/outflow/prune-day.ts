/**
 * Pruning one day on Postgres, the plain tables' batched DELETE against the partitioned layout's detach and DROP
 * (issue 31), on a throwaway cluster of the scenario's own (bench/support/prune-day.ts): each layout's pass alone
 * (seconds, WAL bytes, dead tuples left) and live publish→receive latency while the same day is pruned again.
 */
import { startCluster } from '../../test/support/pg-cluster.js'
import { diskNote } from '../support/disk.js'
import { measurePruneDay, pruneDayCluster } from '../support/prune-day.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

runScenario(async (ctx) => {
  const sizes = { events: ctx.sizes.pruneDayEvents, rate: ctx.sizes.latencyRate, live: ctx.sizes.pruneDayLive }
  const cluster = await startCluster(pruneDayCluster)
  const sink = await startSink()
  try {
    const values: Record<string, number> = {}
    const notes = ['prune-day: a throwaway Postgres cluster of its own (fsync on, autovacuum off), not the shared one']
    for (const layout of ['plain', 'partitioned'] as const) {
      const r = await measurePruneDay(cluster, layout, sink, sizes, (message) => log(ctx, message))
      Object.assign(values, {
        [`${layout}Seconds`]: r.seconds,
        [`${layout}WalBytes`]: r.walBytes,
        [`${layout}DeadTuples`]: r.deadTuples,
        [`${layout}P50`]: r.p50,
        [`${layout}P99`]: r.p99,
        [`${layout}QuietP99`]: r.quietP99,
        [`${layout}P99Outside`]: r.disk.p99Outside,
        [`${layout}QuietP99Outside`]: r.quietDisk.p99Outside,
        [`${layout}LivePassMs`]: r.livePassMs,
        [`${layout}Lost`]: r.lost,
      })
      notes.push(`prune-day ${layout}, while pruning: ${diskNote(r.disk)}`, `prune-day ${layout}, without pruning: ${diskNote(r.quietDisk)}`)
    }
    return { values, notes }
  } finally {
    await sink.close()
    await cluster.stop()
  }
})
