/**
 * Pruning one day of history on Postgres: the plain tables (batched DELETE) against the partitioned layout (the
 * day's partitions detached and dropped), on a throwaway cluster of its own (see bench/support/prune-day.ts):
 *
 *   npx tsx bench/prune-day.ts [--events 260000] [--rate 500] [--live 8000]
 *
 * For each layout: a day of `events` delivered events (each with its delivery and attempt) 40 days old is
 * seeded, then (1) one pruning pass alone, worker off: events/s, WAL bytes (pg_current_wal_lsn difference),
 * dead tuples left (pg_stat_user_tables.n_dead_tup) and the VACUUM they then cost; (2) the same day seeded again
 * and pruned while `live` events are published at `rate`/s and delivered to a local sink: publish→receive p50,
 * p99 and max, against the same traffic with no pruning. Prints a markdown table. `npm run bench` has the same
 * figures as its `prune-day` rows.
 */
import { parseArgs } from 'node:util'
import { startCluster } from '../test/support/pg-cluster.js'
import { diskNote } from './support/disk.js'
import { measurePruneDay, pruneDayCluster, type PruneDayFigures } from './support/prune-day.js'
import { startSink } from './support/sink-client.js'

const { values: args } = parseArgs({ options: { events: { type: 'string', default: '260000' }, rate: { type: 'string', default: '500' }, live: { type: 'string', default: '8000' } } })
const sizes = { events: Number(args.events), rate: Number(args.rate), live: Number(args.live) }
const log = (message: string) => process.stderr.write(`[prune-day] ${message}\n`)

const cluster = await startCluster(pruneDayCluster)
const sink = await startSink()
try {
  const rows: PruneDayFigures[] = []
  for (const layout of ['plain', 'partitioned'] as const) rows.push(await measurePruneDay(cluster, layout, sink, sizes, log))
  const f = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
  console.log(`Pruning one day (${sizes.events.toLocaleString('en-US')} events, each with a delivery and an attempt); live: ${sizes.rate}/s publish→receive, ${sizes.live} events\n`)
  console.log('| layout | pass | events/s | WAL | dead tuples | VACUUM after | live p50 / p99 / max while pruning | live p99 without |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const r of rows)
    console.log(
      `| ${r.layout === 'plain' ? 'plain tables (DELETE)' : 'partitioned (DROP)'} | ${f(r.seconds, 2)} s | ${f(r.eventsPerSec, 0)} | ${f(r.walBytes / 1e6)} MB | ${r.deadTuples.toLocaleString('en-US')} | ${f(r.vacuumMs, 0)} ms | ${f(r.p50, 2)} / ${f(r.p99, 2)} / ${f(r.max)} ms${r.lost ? ` (${r.lost} lost)` : ''} | ${f(r.quietP99, 2)} ms |`,
    )
  for (const r of rows) console.log(`\n${r.layout}, while pruning: ${diskNote(r.disk)}\n${r.layout}, without pruning: ${diskNote(r.quietDisk)}`)
} finally {
  await sink.close()
  await cluster.stop()
}
