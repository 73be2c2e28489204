/**
 * Anchor for publish throughput: what the database itself does for the same rows. Each batch of
 * `batch` events is one transaction of two multi-row INSERTs (the events, and one delivery row per
 * event, as a publish with one matching destination writes them) into the engine's own tables,
 * with the engine's durability settings (SQLite: WAL, synchronous=FULL). No validation, matching
 * or ORM.
 */
import type BetterSqlite3 from 'better-sqlite3'
import connectPostgres from 'postgres'
import { wallNow } from '../support/clock.js'
import { addWebhook, closeOutflow, openOutflow, sqlitePath, tenantId, topic } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'

interface Rows {
  events: { tenant_id: string; id: string; topic: string; time: Date; data: unknown; metadata: object; eligible_for_retry: boolean; created_at: Date }[]
  deliveries: {
    id: string
    tenant_id: string
    event_id: string
    destination_id: string
    topic: string
    event_time: Date
    status: string
    attempt_count: number
    manual: boolean
    next_attempt_at: Date
    lease_owner: string
    lease_until: Date
  }[]
}

function batchRows(destinationId: string, from: number, size: number): Rows {
  const now = new Date()
  const leaseUntil = new Date(now.getTime() + 60_000)
  const rows: Rows = { events: [], deliveries: [] }
  for (let n = from; n < from + size; n++) {
    const id = `evt_bare${String(n).padStart(9, '0')}`
    rows.events.push({ tenant_id: tenantId, id, topic, time: now, data: { n }, metadata: {}, eligible_for_retry: true, created_at: now })
    rows.deliveries.push({
      id: `dlv_bare${String(n).padStart(9, '0')}`,
      tenant_id: tenantId,
      event_id: id,
      destination_id: destinationId,
      topic,
      event_time: now,
      status: 'pending',
      attempt_count: 0,
      manual: false,
      next_attempt_at: now,
      lease_owner: 'wrk_bench',
      lease_until: leaseUntil,
    })
  }
  return rows
}

type InsertBatch = (rows: Rows) => Promise<void>

async function sqliteInserter(ctx: ScenarioContext): Promise<{ insert: InsertBatch; close: () => Promise<void> }> {
  const { default: Database } = (await import('better-sqlite3')) as { default: typeof BetterSqlite3 }
  const db = new Database(sqlitePath(ctx))
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = FULL')
  const statements = new Map<number, { events: BetterSqlite3.Statement; deliveries: BetterSqlite3.Statement }>()
  const prepared = (size: number) => {
    let s = statements.get(size)
    if (!s) {
      const values = (columns: number) => Array.from({ length: size }, () => `(${Array(columns).fill('?').join(',')})`).join(',')
      s = {
        events: db.prepare(`INSERT INTO events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) VALUES ${values(8)}`),
        deliveries: db.prepare(
          `INSERT INTO deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, lease_owner, lease_until) VALUES ${values(12)}`,
        ),
      }
      statements.set(size, s)
    }
    return s
  }
  const write = db.transaction((rows: Rows) => {
    const s = prepared(rows.events.length)
    s.events.run(rows.events.flatMap((e) => [e.tenant_id, e.id, e.topic, e.time.getTime(), JSON.stringify(e.data), JSON.stringify(e.metadata), 1, e.created_at.getTime()]))
    s.deliveries.run(
      rows.deliveries.flatMap((d) => [d.id, d.tenant_id, d.event_id, d.destination_id, d.topic, d.event_time.getTime(), d.status, d.attempt_count, 0, d.next_attempt_at.getTime(), d.lease_owner, d.lease_until.getTime()]),
    )
  })
  return {
    insert: async (rows) => write.immediate(rows),
    close: async () => void db.close(),
  }
}

async function postgresInserter(ctx: ScenarioContext): Promise<{ insert: InsertBatch; close: () => Promise<void> }> {
  const sql = connectPostgres(ctx.pgUrl!, { max: 10, onnotice: () => {} })
  return {
    insert: async (rows) => {
      await sql.begin((tx) => [
        tx`INSERT INTO events ${tx(rows.events.map((e) => ({ ...e, data: tx.json(e.data as never), metadata: tx.json(e.metadata as never) })))}`,
        tx`INSERT INTO deliveries ${tx(rows.deliveries)}`,
      ])
    },
    close: () => sql.end({ timeout: 5 }),
  }
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  // The engine creates the tables and the destination the rows point to.
  const outflow = await openOutflow(ctx, { worker: false })
  const { destinationId } = await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
  await closeOutflow(outflow)

  const inserter = ctx.db === 'sqlite' ? await sqliteInserter(ctx) : await postgresInserter(ctx)
  try {
    const run = async (from: number, count: number) => {
      for (let at = from; at < from + count; at += sizes.batch) await inserter.insert(batchRows(destinationId, at, Math.min(sizes.batch, from + count - at)))
    }
    await run(10_000_000, 10 * sizes.batch) // warm-up
    const t0 = wallNow()
    await run(0, sizes.publishMany)
    const eventsPerSec = sizes.publishMany / ((wallNow() - t0) / 1000)
    log(ctx, `${eventsPerSec.toFixed(0)} events/s`)
    return { values: { eventsPerSec }, notes: [] }
  } finally {
    await inserter.close()
  }
})
