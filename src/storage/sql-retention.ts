import { sql } from 'drizzle-orm'
import type { SqlContext } from './sql-context.js'
import type { PruneBatch, PruneRequest } from './storage.js'

// The bounded event log: old events go with their deliveries and attempts, a small batch per
// transaction. The statements are in sqlite-hot-path.ts and postgres-hot-path.ts: built through the
// query builder with a parameter per row, they cost more CPU than the deletes themselves.

/** Postgres `lock_not_available`: the lock_timeout below expired (drizzle may wrap the driver's error). */
function lockTimedOut(err: unknown): boolean {
  const e = err as { code?: string; cause?: { code?: string } } | null
  return e?.code === '55P03' || e?.cause?.code === '55P03'
}

export async function pruneEvents(ctx: SqlContext, q: PruneRequest): Promise<PruneBatch> {
  try {
    return await ctx.transaction(
      async (db) => {
        // Never queue behind another transaction: give up this batch instead (the next pass retries it),
        // so the pruner is always the one to yield, never a publish, a claim or a tenant delete.
        if (ctx.dialect === 'postgres') await db.execute(sql`set local lock_timeout = '100ms'`)
        return ctx.hotPath.pruneEvents(db, q)
      },
      // Losing a prune to a crash only means pruning it again.
      { durable: false },
    )
  } catch (err) {
    if (lockTimedOut(err)) return { events: 0, deliveries: 0, attempts: 0, found: 0, last: null, busy: true }
    throw err
  }
}
