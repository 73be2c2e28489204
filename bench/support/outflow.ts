import path from 'node:path'
import { createOutflow } from '../../src/create-outflow.js'
import { type Outflow } from '../../src/engine.js'
import type { OutflowOptions } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { seed } from '../seed.js'
import { wallNow, withTimeout } from './clock.js'
import { runPool } from './load.js'
import { log, type ScenarioContext } from './scenario.js'

/** Admin bearer key of the benchmark engines (the HTTP rows send it). */
export const apiKey = 'outflow-bench-admin-key'
export const tenantId = 't1'
export const topic = 'bench'

/** The SQLite file of a scenario (one per scenario directory, so a second process can open it). */
export function sqlitePath(ctx: ScenarioContext): string {
  return path.join(ctx.tmpDir, 'outflow.db')
}

/** The storage of the scenario's database, with the engine's defaults (SQLite: WAL, synchronous=FULL). */
export function storageOf(ctx: ScenarioContext): OutflowOptions['storage'] {
  // BENCH_PG_POOL overrides the engine's default pool size, to try what the pool does to the figures;
  // BENCH_PG_PARTITION_HISTORY=1 gives the scenario's new database the partitioned layout (postgres({ partitionHistory })).
  if (ctx.db === 'postgres')
    return postgres({
      url: ctx.pgUrl!,
      ...(process.env.BENCH_PG_POOL ? { max: Number(process.env.BENCH_PG_POOL) } : {}),
      ...(process.env.BENCH_PG_PARTITION_HISTORY === '1' ? { partitionHistory: true } : {}),
    })
  if (ctx.db === 'sqlite') return sqlite({ path: sqlitePath(ctx) })
  throw new Error(`scenario ${ctx.name} has no database`)
}

/**
 * An engine on the scenario's database with the shared concurrency, as global and as
 * per-destination limit (there is one destination, and every anchor gets the full concurrency).
 *
 * @example
 * const outflow = await openOutflow(ctx); const destination = await addWebhook(outflow, sink.url)
 */
export function openOutflow(
  ctx: ScenarioContext,
  delivery: NonNullable<OutflowOptions['delivery']> = {},
  options: Pick<OutflowOptions, 'retention'> = {},
): Promise<Outflow> {
  const c = ctx.sizes.concurrency
  return createOutflow({
    storage: storageOf(ctx),
    apiKey,
    jwtSecret: 'outflow-bench-jwt-secret',
    encryptionKey: 'outflow-bench-encryption-key',
    allowPrivateNetworks: true,
    delivery: { concurrency: c, perDestinationConcurrency: c, ...delivery },
    ...options,
  })
}

/** The retention of the pruning rows: events older than 30 days go. */
export const benchRetention = { events: '30d' }

/**
 * `count` delivered events (each with its delivery and attempt) 40 days old, for the pruning rows:
 * the engine is closed meanwhile, and reopened by the caller with `benchRetention`.
 */
export async function seedOldEvents(ctx: ScenarioContext, destinationId: string, count: number): Promise<void> {
  const started = wallNow()
  await seed(
    { dialect: ctx.db!, location: ctx.db === 'sqlite' ? sqlitePath(ctx) : ctx.pgUrl! },
    { tenantId, destinationId, topic, count, startMs: Date.now() - 40 * 86_400_000, state: 'delivered' },
  )
  log(ctx, `seeded ${count} old delivered events in ${((wallNow() - started) / 1000).toFixed(1)} s`)
}

/** Tenant `t1` with one webhook destination for every topic. */
export async function addWebhook(outflow: Outflow, url: string): Promise<{ destinationId: string }> {
  await outflow.upsertTenant(tenantId, {})
  const destination = await outflow.createDestination(tenantId, { type: 'webhook', topics: ['*'], config: { url } })
  return { destinationId: destination.id }
}

/**
 * Publish events [from, from + count) with publishMany in batches of `batch`, `lanes` batches in
 * flight at a time (1: one after another); data carries `n`.
 */
export async function publishBatches(outflow: Outflow, from: number, count: number, batch: number, lanes = 1): Promise<void> {
  await runPool(Math.ceil(count / batch), lanes, async (b) => {
    const at = from + b * batch
    const size = Math.min(batch, from + count - at)
    await outflow.publishMany(Array.from({ length: size }, (_, k) => ({ tenant_id: tenantId, topic, data: { n: at + k } })))
  })
}

/** close(), bounded: a stuck drain must not hang the scenario. */
export async function closeOutflow(outflow: Outflow | undefined): Promise<void> {
  if (outflow) await withTimeout(outflow.close(), 30_000, 'outflow.close()')
}
