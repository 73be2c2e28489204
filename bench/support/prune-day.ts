/**
 * Pruning one day of history on Postgres, the plain tables (batched DELETE) against the partitioned layout (the
 * day's partitions detached and dropped), on a throwaway cluster (fsync on, autovacuum off so the dead tuples stay
 * counted) so that the WAL measured is the prune's alone. Used by `bench/prune-day.ts` (a table of its own) and by
 * the bench's `prune-day` group (rows of the bench table).
 */
import postgresJs from 'postgres'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import type { startCluster } from '../../test/support/pg-cluster.js'
import { seed } from '../seed.js'
import type { DiskFigures } from './disk.js'
import { measureLatency } from './measure.js'
import type { SinkHandle } from './sink-client.js'

type Cluster = Awaited<ReturnType<typeof startCluster>>

/** Events of the day pruned; live traffic's rate (events/s) and events. */
export interface PruneDaySizes {
  events: number
  rate: number
  live: number
}

/** The cluster's settings for these figures: WAL written for real, and no autovacuum to clear the dead tuples counted. */
export const pruneDayCluster = { settings: '-c fsync=on -c autovacuum=off -c shared_buffers=256MB' }

const day = 86_400_000
const oldDay = Math.floor((Date.now() - 40 * day) / day) * day
const tenantId = 't1'

export type PruneLayout = 'plain' | 'partitioned'
/** One layout's figures: the pass alone, then live traffic while the same day is pruned again, and without. */
export interface PruneDayFigures {
  layout: PruneLayout
  seconds: number
  eventsPerSec: number
  walBytes: number
  deadTuples: number
  vacuumMs: number
  p50: number
  p99: number
  max: number
  quietP99: number
  /** The disk's stalls while pruning, and without (see disk.ts). */
  disk: DiskFigures
  quietDisk: DiskFigures
  /** How long the pass during live traffic took, ms. */
  livePassMs: number
  lost: number
}


async function open(url: string, layout: PruneLayout, sinkUrl: string, retention: boolean, worker = true): Promise<Outflow> {
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

async function seedDay(url: string, destinationId: string, { events }: PruneDaySizes, log: (message: string) => void): Promise<void> {
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

/**
 * Live traffic on a warm engine: `rate`/s for a second and a half unmeasured (an engine's first second is slow with
 * or without a prune), then `live` events measured. With `prune`, the engine's pruner makes a pass two seconds into
 * the measured traffic, as a pass on its interval would; answers how long that pass took, ms.
 */
async function live(outflow: Outflow, sink: SinkHandle, { rate, live: liveEvents }: PruneDaySizes, prune: boolean) {
  const fire = (i: number, t: number) => outflow.publish({ tenant_id: tenantId, topic: 'bench', data: { n: i, t } })
  await measureLatency(sink, { rate, count: Math.ceil(rate * 1.5), drainMs: 30_000, fire })
  let pass: Promise<number> | undefined
  const figures = await measureLatency(sink, {
    rate,
    count: liveEvents,
    drainMs: 30_000,
    fire: (i, t) => {
      if (prune && i === Math.min(rate * 2, Math.floor(liveEvents / 4))) {
        const started = performance.now()
        pass = outflow.prune().then(() => performance.now() - started)
      }
      return fire(i, t)
    },
  })
  return { ...figures, passMs: pass ? await pass : Number.NaN }
}

/**
 * Prune one seeded day of `sizes.events` delivered events on `layout`, in a database of its own on `cluster`: the
 * pass alone (worker off), then live traffic on a warm engine without pruning, and while the same day, seeded
 * again, is pruned by that engine's pass.
 *
 * @example
 * const plain = await measurePruneDay(cluster, 'plain', sink, { events: 260_000, rate: 500, live: 8_000 }, console.error)
 */
export async function measurePruneDay(cluster: Cluster, layout: PruneLayout, sink: SinkHandle, sizes: PruneDaySizes, log: (message: string) => void): Promise<PruneDayFigures> {
  const { events } = sizes
  const url = await cluster.createDatabase(`prune_${layout}`)
  const sql = postgresJs(url, { max: 1, onnotice: () => {} })
  try {
    let outflow = await open(url, layout, sink.url, false, false)
    const destinationId = (await outflow.listDestinations(tenantId))[0]!.id
    await outflow.close()
    await seedDay(url, destinationId, sizes, log)
    // (1) The pass alone.
    await sql`checkpoint`
    const wal0 = await walLsn(sql)
    const t0 = performance.now()
    outflow = await open(url, layout, sink.url, true, false)
    const pruned = await outflow.prune()
    const seconds = (performance.now() - t0) / 1000
    const walBytes = Number((await walLsn(sql)) - wal0)
    await outflow.close()
    // A day dropped whole is counted from the planner's statistics (the seed analyzes), so allow an estimate;
    // that nothing of the day is left is checked exactly.
    const [{ left }] = await sql<[{ left: number }]>`select count(*)::int as left from events`
    const off = Math.abs(pruned.events - events)
    if (left !== 0 || (pruned.estimated ? off > events * 0.05 : off !== 0)) throw new Error(`${layout}: pruned ${pruned.events} of ${events}, ${left} left`)
    const dead = await deadTuples(sql)
    const v0 = performance.now()
    await sql`vacuum events, deliveries, attempts`
    const vacuumMs = performance.now() - v0
    log(`${layout}: pruned ${pruned.events}${pruned.estimated ? ' (estimated)' : ''} events in ${seconds.toFixed(2)} s, ${(walBytes / 1e6).toFixed(1)} MB of WAL, ${dead} dead tuples, VACUUM ${vacuumMs.toFixed(0)} ms`)
    // (2) Live traffic without pruning, then while the same day is pruned again: an engine with retention (its
    // first pass, at its start, finds nothing to prune), the day seeded beside it, a pass two seconds into traffic.
    outflow = await open(url, layout, sink.url, true)
    const quiet = await live(outflow, sink, sizes, false)
    await seedDay(url, destinationId, sizes, log)
    await sql`checkpoint`
    const during = await live(outflow, sink, sizes, true)
    await outflow.close()
    log(`${layout}: live p99 ${during.p99.toFixed(2)} ms while pruning (${quiet.p99.toFixed(2)} ms without; the pass took ${during.passMs.toFixed(0)} ms), lost ${during.lost}`)
    return { layout, seconds, eventsPerSec: events / seconds, walBytes, deadTuples: dead, vacuumMs, p50: during.p50, p99: during.p99, max: during.max, quietP99: quiet.p99, disk: during.disk, quietDisk: quiet.disk, livePassMs: during.passMs, lost: during.lost }
  } finally {
    await sql.end()
  }
}

