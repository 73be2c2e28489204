/**
 * Publish throughput, events/s committed: single `publish()` calls from `concurrency` callers,
 * then `publishMany` batches one after another, then single publishes inside host transactions
 * (the outbox: each transaction inserts a row of the host's own table and publishes its event;
 * Postgres: `sql.begin` + `publish(e, { tx })` from `concurrency` callers over a pool as large as the
 * engine's; SQLite: `db.transaction(() => … publishSync(e, { db }))()` on the host's own connection,
 * one after another as better-sqlite3 runs them). The tenant has one webhook destination, so every
 * event also writes its delivery row. The delivery worker is off (`delivery.worker: false`) so
 * the figure is the publish path alone, as the bare INSERT anchor's is. CPU µs of this process per
 * event beside each (on Postgres the database server's CPU is another process's).
 */
import Database from 'better-sqlite3'
import postgresJs from 'postgres'
import type { Outflow } from '../../src/engine.js'
import { wallNow } from '../support/clock.js'
import { runPool } from '../support/load.js'
import { cpuMicros } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, publishBatches, sqlitePath, tenantId, topic } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'

interface HostTransactions {
  /** A host transaction: its row and the event, committed together. */
  publish(n: number): Promise<unknown>
  /** The same transaction without the event: what the host pays anyway (the anchor). */
  alone(n: number): Promise<unknown>
  close(): Promise<void>
}

async function hostTransactions(ctx: ScenarioContext, outflow: Outflow): Promise<HostTransactions> {
  if (ctx.db === 'postgres') {
    const sql = postgresJs(ctx.pgUrl!, { max: 10, onnotice: () => {} })
    await sql`create table bench_orders (n bigint primary key)`
    return {
      publish: (n) =>
        sql.begin(async (tx) => {
          await tx`insert into bench_orders (n) values (${n})`
          await outflow.publish({ tenant_id: tenantId, topic, data: { n } }, { tx })
        }),
      alone: (n) => sql.begin((tx) => tx`insert into bench_orders (n) values (${n})`),
      close: () => sql.end(),
    }
  }
  const db = new Database(sqlitePath(ctx))
  db.exec('create table bench_orders (n integer primary key)')
  const insert = db.prepare('insert into bench_orders (n) values (?)')
  const place = db.transaction((n: number) => {
    insert.run(n)
    outflow.publishSync({ tenant_id: tenantId, topic, data: { n } }, { db })
  })
  const alone = db.transaction((n: number) => void insert.run(n))
  return { publish: async (n) => place(n), alone: async (n) => alone(n), close: async () => void db.close() }
}

/** Events (or transactions) per second and CPU µs each, of `count` calls from `concurrency` callers. */
async function measure(count: number, concurrency: number, call: (i: number) => Promise<unknown>): Promise<{ perSec: number; cpuUs: number }> {
  const t0 = wallNow()
  const cpu0 = cpuMicros()
  await runPool(count, concurrency, call)
  return { perSec: count / ((wallNow() - t0) / 1000), cpuUs: (cpuMicros() - cpu0) / count }
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  const outflow = await openOutflow(ctx, { worker: false })
  try {
    await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
    const single = (n: number) => outflow.publish({ tenant_id: tenantId, topic, data: { n } })
    // Warm-up: JIT, statement caches, connection pool.
    await runPool(Math.min(500, sizes.publishSingle / 4), sizes.concurrency, (i) => single(-1 - i))
    await publishBatches(outflow, 10_000_000, 10 * sizes.batch, sizes.batch)

    let t0 = wallNow()
    let cpu0 = cpuMicros()
    await runPool(sizes.publishSingle, sizes.concurrency, (i) => single(i))
    const singlePerSec = sizes.publishSingle / ((wallNow() - t0) / 1000)
    const singleCpuUs = (cpuMicros() - cpu0) / sizes.publishSingle
    t0 = wallNow()
    cpu0 = cpuMicros()
    await publishBatches(outflow, 20_000_000, sizes.publishMany, sizes.batch)
    const manyPerSec = sizes.publishMany / ((wallNow() - t0) / 1000)
    const manyCpuUs = (cpuMicros() - cpu0) / sizes.publishMany

    const host = await hostTransactions(ctx, outflow)
    let inTx: { perSec: number; cpuUs: number }
    let alone: { perSec: number; cpuUs: number }
    try {
      const warm = Math.min(500, sizes.publishSingle / 4)
      await runPool(warm, sizes.concurrency, (i) => host.alone(30_000_000 + i))
      alone = await measure(sizes.publishSingle, sizes.concurrency, (i) => host.alone(35_000_000 + i))
      await runPool(warm, sizes.concurrency, (i) => host.publish(40_000_000 + i))
      inTx = await measure(sizes.publishSingle, sizes.concurrency, (i) => host.publish(45_000_000 + i))
    } finally {
      await host.close()
    }
    log(
      ctx,
      `single ${singlePerSec.toFixed(0)}/s (${singleCpuUs.toFixed(0)} µs CPU each), publishMany ${manyPerSec.toFixed(0)}/s (${manyCpuUs.toFixed(0)} µs CPU each), ` +
        `inside host transactions ${inTx.perSec.toFixed(0)}/s (${inTx.cpuUs.toFixed(0)} µs CPU each; the host's transactions alone ${alone.perSec.toFixed(0)}/s, ${alone.cpuUs.toFixed(0)} µs CPU each)`,
    )
    const values = { singlePerSec, manyPerSec, singleCpuUs, manyCpuUs, inTxPerSec: inTx.perSec, inTxCpuUs: inTx.cpuUs, hostAlonePerSec: alone.perSec }
    return { values, notes: [] }
  } finally {
    await closeOutflow(outflow)
  }
})
