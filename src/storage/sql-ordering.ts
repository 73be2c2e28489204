import { and, sql } from 'drizzle-orm'
import { sameTenant, type Db, type SqlContext } from './sql-context.js'

// FIFO destinations: a delivery is 'waiting' (not due) while one published before it with the same ordering
// key is unfinished; it is made due once it is the first unfinished one of its key ("promoted").

/** One ordering sequence: a destination's deliveries with one ordering key. */
export interface OrderKey {
  tenant_id: string
  destination_id: string
  order_key: string
}

/**
 * Make the first unfinished delivery of each key due if it is waiting. Runs in the transaction that finished
 * or inserted deliveries of these keys; a concurrent one may miss a head the other made first (neither saw
 * the other's rows), which `promoteWaiting` catches on the worker's next poll.
 */
export async function promoteHeads(ctx: SqlContext, db: Db, keys: OrderKey[], now: Date): Promise<number> {
  const { deliveries: d } = ctx.tables
  const seen = new Set<string>()
  let promoted = 0
  for (const k of keys) {
    const id = `${k.tenant_id}\u0000${k.destination_id}\u0000${k.order_key}`
    if (seen.has(id)) continue
    seen.add(id)
    const head = sql`(select h.id from ${d} h where h.tenant_id = ${k.tenant_id} and h.destination_id = ${k.destination_id}
      and h.order_key = ${k.order_key} and h.status = 'pending' order by h.order_seq limit 1)`
    const rows = await db
      .update(d)
      .set({ order_state: null, next_attempt_at: now })
      .where(and(sameTenant(ctx, d.tenant_id, k.tenant_id), sql`${d.id} = ${head} and ${d.order_state} = 'waiting'`))
      .returning({ id: d.id })
    promoted += rows.length
  }
  return promoted
}

/** Make due every waiting delivery that nothing unfinished precedes (up to `limit`); returns how many. */
export async function promoteWaiting(ctx: SqlContext, now: Date, limit = 1000): Promise<number> {
  const { deliveries: d } = ctx.tables
  // Rows another transaction holds are left to the next pass (Postgres), so this never waits on a writer.
  const postgres = ctx.dialect === 'postgres'
  const order = postgres ? sql` order by w.order_seq` : sql``
  const lock = postgres ? sql` for update skip locked` : sql``
  // Most engines have no FIFO destination: a read of the empty index, not a write transaction, each time.
  const [waiting] = await ctx.run((db) => db.select({ id: d.id }).from(d).where(sql`${d.order_state} = 'waiting'`).limit(1))
  if (!waiting) return 0
  if (ctx.deliveryLocks) return promoteOnShards(ctx, now)
  return ctx.transaction(async (db) => {
    const rows = await db
      .update(d)
      .set({ order_state: null, next_attempt_at: now })
      .where(
        sql`${d.id} in (select w.id from ${d} w where w.order_state = 'waiting' and not exists (
          select 1 from ${d} p where p.tenant_id = w.tenant_id and p.destination_id = w.destination_id
            and p.order_key = w.order_key and p.status = 'pending' and p.order_seq < w.order_seq)${order} limit ${limit}${lock})`,
      )
      .returning({ id: d.id })
    if (rows.length > 0) await ctx.notifyWork?.(db)
    return rows.length
  }, { durable: false })
}

/**
 * promoteWaiting on Citus, which locks rows only in a statement on one shard: every head found (without a limit),
 * locked shard group by shard group (SqlContext.deliveryLocks), waiting for a writer that holds one.
 */
function promoteOnShards(ctx: SqlContext, now: Date): Promise<number> {
  const { deliveries: d } = ctx.tables
  const heads = sql`${d.order_state} = 'waiting' and not exists (
    select 1 from ${d} p where p.tenant_id = ${d.tenant_id} and p.destination_id = ${d.destination_id}
      and p.order_key = ${d.order_key} and p.status = 'pending' and p.order_seq < ${d.order_seq})`
  return ctx.transaction(async (db) => {
    const rows = await db.update(d).set({ order_state: null, next_attempt_at: now }).where(await ctx.deliveryLocks!(db, heads)).returning({ id: d.id })
    if (rows.length > 0) await ctx.notifyWork?.(db)
    return rows.length
  }, { durable: false })
}
