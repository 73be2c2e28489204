import { and, eq } from 'drizzle-orm'
import { rateLimitBurst, type RateLimit } from '../model/delivery-settings.js'
import type { SqlContext } from './sql-context.js'

// Per-destination token buckets, shared by every instance through the database.

/**
 * Refill the destination's bucket for the time since its last refill (at `per_second`, up to its burst) and
 * take one token: `waitMs` 0 when taken, else how long until one is there.
 */
export async function takeToken(ctx: SqlContext, tenantId: string, destinationId: string, limit: RateLimit, now: Date): Promise<{ waitMs: number }> {
  const { rate_buckets: b } = ctx.tables
  const burst = rateLimitBurst(limit)
  const match = and(eq(b.tenant_id, tenantId), eq(b.destination_id, destinationId))
  return ctx.transaction(async (db) => {
    await db.insert(b).values({ tenant_id: tenantId, destination_id: destinationId, tokens: burst, refilled_at: now }).onConflictDoNothing()
    let read = db.select().from(b).where(match).limit(1)
    // Instances take tokens one after another: the row is the lock.
    if (ctx.dialect === 'postgres') read = read.for('update') as typeof read
    const [row] = await read
    const last = row!.refilled_at.getTime()
    const tokens = Math.min(burst, row!.tokens + (Math.max(0, now.getTime() - last) / 1000) * limit.per_second)
    const refilled_at = new Date(Math.max(now.getTime(), last))
    const taken = tokens >= 1
    await db.update(b).set({ tokens: taken ? tokens - 1 : tokens, refilled_at }).where(match)
    return { waitMs: taken ? 0 : Math.ceil(((1 - tokens) / limit.per_second) * 1000) }
  }, { durable: false })
}
