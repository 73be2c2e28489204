/**
 * Pruning one day of history on Postgres: the plain tables (batched DELETE) against the partitioned layout (the
 * day's partitions detached and dropped). Runs on a throwaway cluster of its own (initdb, fsync on, autovacuum
 * off so the dead tuples stay counted), so the WAL it reports is the prune's alone:
 *
 *   npx tsx bench/prune-day.ts [--events 260000] [--rate 500] [--live 8000]
 *
 * For each layout: a day of `events` delivered events (each with its delivery and attempt) 40 days old is
 * seeded, then (1) one pruning pass alone, worker off: events/s, WAL bytes (pg_current_wal_lsn difference),
 * dead tuples left (pg_stat_user_tables.n_dead_tup) and the VACUUM they then cost; (2) the same day seeded again
 * and pruned while `live` events are published at `rate`/s and delivered to a local sink: publish→receive p50,
 * p99 and max, against the same traffic with no pruning. Prints a markdown table.
 */
import { parseArgs } from 'node:util'
import postgresJs from 'postgres'
import { createOutflow } from '../src/create-outflow.js'
import type { Outflow } from '../src/engine.js'
import { postgres } from '../src/storage/postgres.js'
import { startCluster } from '../test/support/pg-cluster.js'
import { seed } from './seed.js'
import { measureLatency } from './support/measure.js'
import { startSink, type SinkHandle } from './support/sink-client.js'

const { values: args } = parseArgs({ options: { events: { type: 'string', default: '260000' }, rate: { type: 'string', default: '500' }, live: { type: 'string', default: '8000' } } })
const events = Number(args.events)
const rate = Number(args.rate)
const liveEvents = Number(args.live)
const day = 86_400_000
const oldDay = Math.floor((Date.now() - 40 * day) / day) * day
const tenantId = 't1'

type Layout = 'plain' | 'partitioned'
interface Row {
  layout: Layout
  seconds: number
  eventsPerSec: number
  walBytes: number
  deadTuples: number
  vacuumMs: number
  p50: number
  p99: number
  max: number
  quietP99: number
  lost: number
}

const log = (message: string) => process.stderr.write(`[prune-day] ${message}\n`)

async function open(url: string, layout: Layout, sinkUrl: string, retention: boolean, worker = true): Promise<Outflow> {
  return createOutflow({
    storage: postgres({ url, partitionHistory: layout === 'partitioned' }),
    apiKey: 'prune-day-admin-key',
    jwtSecret: 'prune-day-jwt-secret',
    encryptionKey: 'prune-day-encryption-key',
    allowPrivateNetworks: true,
    delivery: { concurrency: 50, perDestinationConcurrency: 50, worker },
    ...(retention ? { retention: { events: '30d' } } : {}),
  }).then(async (outflow) => {
    await outflow.upsertTenant(tenantId, {})
    if ((await outflow.listDestinations(tenantId)).length === 0) await outflow.createDestination(tenantId, { type: 'webhook', topics: ['*'], config: { url: sinkUrl } })
    return outflow
  })
}

async function seedDay(url: string, destinationId: string): Promise<void> {
  const started = performance.now()
  await seed({ dialect: 'postgres', location: url }, { tenantId, destinationId, topic: 'bench', count: events, startMs: oldDay, stepMs: Math.floor(day / events), state: 'delivered' })
  log(`seeded ${events} events of ${new Date(oldDay).toISOString().slice(0, 10)} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
}

const walLsn = async (sql: postgresJs.Sql) => BigInt((await sql<{ lsn: string }[]>`select (pg_current_wal_lsn() - '0/0')::bigint::text as lsn`)[0]!.lsn)

/** Dead tuples of the log's tables (partitions included), once the statistics have settled. */
async function deadTuples(sql: postgresJs.Sql): Promise<number> {
  let last = -1
  for (let i = 0; i < 30; i++) {
    await new Promise((r) => setTimeout(r, 1000))
    const [row] = await sql<{ dead: number }[]>`
      select coalesce(sum(n_dead_tup), 0)::int as dead from pg_stat_user_tables where relname ~ '^(events|deliveries|attempts)'`
    if (row!.dead === last) return last
    last = row!.dead
  }
  return last
}

async function live(outflow: Outflow, sink: SinkHandle) {
  return measureLatency(sink, {
    rate,
    count: liveEvents,
    drainMs: 30_000,
    fire: (i, t) => outflow.publish({ tenant_id: tenantId, topic: 'bench', data: { n: i, t } }),
  })
}

async function measure(cluster: Awaited<ReturnType<typeof startCluster>>, layout: Layout, sink: SinkHandle): Promise<Row> {
  const url = await cluster.createDatabase(`prune_${layout}`)
  const sql = postgresJs(url, { max: 1, onnotice: () => {} })
  try {
    let outflow = await open(url, layout, sink.url, false, false)
    const destinationId = (await outflow.listDestinations(tenantId))[0]!.id
    await outflow.close()
    await seedDay(url, destinationId)
    // (1) The pass alone.
    await sql`checkpoint`
    const wal0 = await walLsn(sql)
    const t0 = performance.now()
    outflow = await open(url, layout, sink.url, true, false)
    const pruned = await outflow.prune()
    const seconds = (performance.now() - t0) / 1000
    const walBytes = Number((await walLsn(sql)) - wal0)
    await outflow.close()
    if (pruned.events !== events) throw new Error(`${layout}: pruned ${pruned.events} of ${events}`)
    const dead = await deadTuples(sql)
    const v0 = performance.now()
    await sql`vacuum events, deliveries, attempts`
    const vacuumMs = performance.now() - v0
    log(`${layout}: pruned ${pruned.events} events in ${seconds.toFixed(2)} s, ${(walBytes / 1e6).toFixed(1)} MB of WAL, ${dead} dead tuples, VACUUM ${vacuumMs.toFixed(0)} ms`)
    // (2) Live traffic without pruning, then while the same day is pruned again.
    outflow = await open(url, layout, sink.url, false)
    const quiet = await live(outflow, sink)
    await outflow.close()
    // The same day again (its rows were pruned), pruned with live traffic this time.
    await seedDay(url, destinationId)
    await sql`checkpoint`
    outflow = await open(url, layout, sink.url, true)
    const during = await live(outflow, sink)
    await outflow.close()
    log(`${layout}: live p99 ${during.p99.toFixed(2)} ms while pruning (${quiet.p99.toFixed(2)} ms without), lost ${during.lost}`)
    return { layout, seconds, eventsPerSec: events / seconds, walBytes, deadTuples: dead, vacuumMs, p50: during.p50, p99: during.p99, max: during.max, quietP99: quiet.p99, lost: during.lost }
  } finally {
    await sql.end()
  }
}

const cluster = await startCluster({ settings: '-c fsync=on -c autovacuum=off -c shared_buffers=256MB' })
const sink = await startSink()
try {
  const rows: Row[] = []
  for (const layout of ['plain', 'partitioned'] as const) rows.push(await measure(cluster, layout, sink))
  const f = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
  console.log(`Pruning one day (${events.toLocaleString('en-US')} events, each with a delivery and an attempt); live: ${rate}/s publish→receive, ${liveEvents} events\n`)
  console.log('| layout | pass | events/s | WAL | dead tuples | VACUUM after | live p50 / p99 / max while pruning | live p99 without |')
  console.log('|---|---|---|---|---|---|---|---|')
  for (const r of rows)
    console.log(
      `| ${r.layout === 'plain' ? 'plain tables (DELETE)' : 'partitioned (DROP)'} | ${f(r.seconds, 2)} s | ${f(r.eventsPerSec, 0)} | ${f(r.walBytes / 1e6)} MB | ${r.deadTuples.toLocaleString('en-US')} | ${f(r.vacuumMs, 0)} ms | ${f(r.p50, 2)} / ${f(r.p99, 2)} / ${f(r.max)} ms${r.lost ? ` (${r.lost} lost)` : ''} | ${f(r.quietP99, 2)} ms |`,
    )
} finally {
  await sink.close()
  await cluster.stop()
}
