import { and, gte, inArray, lt, ne, sql, type SQL } from 'drizzle-orm'
import type { SqlContext } from './sql-context.js'
import type { PruneBatch, PruneRequest } from './storage.js'

// The bounded event log: old events go with their deliveries and attempts, a small batch per transaction.

type Pair = [tenantId: string, eventId: string]

/** (tenant_id, event_id) pairs as a subquery, for `(a, b) in (…)`. Postgres gets two array parameters whatever the size. */
function pairs(ctx: SqlContext, list: Pair[]): SQL {
  if (ctx.dialect === 'postgres')
    return sql`select * from unnest(${sql.param(list.map((p) => p[0]))}::text[], ${sql.param(list.map((p) => p[1]))}::text[])`
  return sql`values ${sql.join(
    list.map(([t, e]) => sql`(${t}, ${e})`),
    sql`, `,
  )}`
}

const key = (tenantId: string, eventId: string) => `${tenantId}\u0000${eventId}`

/** Postgres `lock_not_available`: the lock_timeout below expired (drizzle may wrap the driver's error). */
function lockTimedOut(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | null
  return e?.code === '55P03' || e?.cause?.code === '55P03'
}

export async function pruneEvents(ctx: SqlContext, q: PruneRequest): Promise<PruneBatch> {
  try {
    return await pruneBatch(ctx, q)
  } catch (err) {
    if (lockTimedOut(err)) return { events: 0, deliveries: 0, attempts: 0, found: 0, last: null, busy: true }
    throw err
  }
}

function pruneBatch(ctx: SqlContext, q: PruneRequest): Promise<PruneBatch> {
  const { events: e, deliveries: d, attempts: a } = ctx.tables
  return ctx.transaction(
    async (db) => {
      // Never queue behind another transaction: give up this batch instead (it is retried by the next
      // one), so the pruner is always the one to yield, never a publish, a claim or a tenant delete.
      if (ctx.dialect === 'postgres') await db.execute(sql`set local lock_timeout = '100ms'`)
      const pending = sql`exists (select 1 from ${d} where ${d.tenant_id} = ${e.tenant_id} and ${d.event_id} = ${e.id} and ${d.status} = 'pending')`
      const found = await db
        .select({ tenant_id: e.tenant_id, id: e.id, time: e.time })
        .from(e)
        .where(and(lt(e.time, q.before), q.from ? gte(e.time, q.from) : undefined, sql`not ${pending}`))
        .orderBy(e.time)
        .limit(q.limit)
      const last = found.at(-1)?.time ?? null
      if (found.length === 0) return { events: 0, deliveries: 0, attempts: 0, found: 0, last }

      // A delivery may have become pending since (a manual retry): lock the finished deliveries, skipping
      // rows another transaction holds, and keep every event with a delivery that is not locked here.
      const ofFound = sql`(${d.tenant_id}, ${d.event_id}) in (${pairs(ctx, found.map((r) => [r.tenant_id, r.id]))})`
      let lock = db.select({ id: d.id }).from(d).where(and(ofFound, ne(d.status, 'pending')))
      if (ctx.dialect === 'postgres') lock = lock.for('update', { skipLocked: true }) as typeof lock
      const locked = new Set((await lock).map((r) => r.id))
      const all = await db.select({ id: d.id, tenant_id: d.tenant_id, event_id: d.event_id }).from(d).where(ofFound)
      const kept = new Set(all.filter((r) => !locked.has(r.id)).map((r) => key(r.tenant_id, r.event_id)))
      const gone = found.filter((r) => !kept.has(key(r.tenant_id, r.id))).map((r): Pair => [r.tenant_id, r.id])
      if (gone.length === 0) return { events: 0, deliveries: 0, attempts: 0, found: found.length, last }

      const goneSet = new Set(gone.map(([t, id]) => key(t, id)))
      const deliveryIds = all.filter((r) => goneSet.has(key(r.tenant_id, r.event_id))).map((r) => r.id)
      const attempts = await db
        .delete(a)
        .where(sql`(${a.tenant_id}, ${a.event_id}) in (${pairs(ctx, gone)})`)
        .returning({ id: a.id })
      const deliveries = deliveryIds.length ? await db.delete(d).where(inArray(d.id, deliveryIds)).returning({ id: d.id }) : []
      const events = await db
        .delete(e)
        .where(sql`(${e.tenant_id}, ${e.id}) in (${pairs(ctx, gone)})`)
        .returning({ id: e.id })
      return { events: events.length, deliveries: deliveries.length, attempts: attempts.length, found: found.length, last }
    },
    // Losing a prune to a crash only means pruning it again.
    { durable: false },
  )
}
