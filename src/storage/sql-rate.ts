import { and, eq, sql } from 'drizzle-orm'
import { rateLimitBurst, type RateLimit } from '../model/delivery-settings.js'
import type { TokensTaken } from './storage.js'
import type { SqlContext } from './sql-context.js'

// Per-destination token buckets, shared by every instance through the database.

/**
 * Refill the destination's bucket for the time since its last refill (at `per_second`, up to its burst) and
 * take up to `count` tokens (at most the burst) at once: how many it gave, and how long until the next one.
 */
export async function takeTokens(ctx: SqlContext, tenantId: string, destinationId: string, limit: RateLimit, count: number, now: Date): Promise<TokensTaken> {
  const wanted = Math.max(0, Math.min(Math.floor(count), rateLimitBurst(limit)))
  if (ctx.dialect === 'postgres') return takePostgres(ctx, tenantId, destinationId, limit, wanted, now)
  const { rate_buckets: b } = ctx.tables
  const match = and(eq(b.tenant_id, tenantId), eq(b.destination_id, destinationId))
  // SQLite has one writer: inside its transaction the read and the write cannot interleave with another take.
  return ctx.transaction(async (db) => {
    const [row] = await db.select().from(b).where(match).limit(1)
    const next = take(row, limit, wanted, now)
    await db
      .insert(b)
      .values({ tenant_id: tenantId, destination_id: destinationId, tokens: next.tokens, refilled_at: next.refilledAt })
      .onConflictDoUpdate({ target: [b.tenant_id, b.destination_id], set: { tokens: next.tokens, refilled_at: next.refilledAt } })
    return answer(next.taken, next.tokens, limit)
  }, { durable: false })
}

/** The bucket after refilling it to `now` and taking up to `wanted` tokens (a missing bucket starts full). */
function take(row: { tokens: number; refilled_at: Date } | undefined, limit: RateLimit, wanted: number, now: Date) {
  const burst = rateLimitBurst(limit)
  const last = row?.refilled_at.getTime() ?? now.getTime()
  // An instance whose clock is behind adds nothing and never moves the refill time back.
  const available = row ? Math.min(burst, row.tokens + (Math.max(0, now.getTime() - last) / 1000) * limit.per_second) : burst
  const taken = Math.min(wanted, Math.floor(available))
  return { taken, tokens: available - taken, refilledAt: new Date(Math.max(now.getTime(), last)) }
}

const answer = (taken: number, tokens: number, limit: RateLimit): TokensTaken => ({
  taken,
  waitMs: tokens >= 1 ? 0 : Math.ceil(((1 - tokens) / limit.per_second) * 1000),
})

/**
 * Postgres: one statement per take. It locks the bucket row (`for update`: concurrent takers from every instance
 * queue on it and each reads the row as the one before it left it), computes the refill and the take, writes
 * the row and returns what it took. A bucket is created (full) by the first take, with an insert that yields to
 * another instance's if both create it at once.
 */
async function takePostgres(ctx: SqlContext, tenantId: string, destinationId: string, limit: RateLimit, wanted: number, now: Date): Promise<TokensTaken> {
  const { rate_buckets: b } = ctx.tables
  const burst = rateLimitBurst(limit)
  const at = now.toISOString()
  for (;;) {
    const [taken] = (await ctx.run((db) =>
      db.execute(sql`
        with prior as materialized (
          select ${b.tokens} as tokens, ${b.refilled_at} as refilled_at from ${b}
          where ${b.tenant_id} = ${tenantId} and ${b.destination_id} = ${destinationId} for update
        ), refill as (
          select least(${burst}::float8, tokens + greatest(0, extract(epoch from ${at}::timestamptz - refilled_at))::float8 * ${limit.per_second}::float8) as available,
            greatest(refilled_at, ${at}::timestamptz) as refilled_at
          from prior
        ), took as materialized (
          select least(${wanted}::int, floor(available)::int) as taken, available, refilled_at from refill
        ), written as (
          update ${b} set tokens = took.available - took.taken, refilled_at = took.refilled_at from took
          where ${b.tenant_id} = ${tenantId} and ${b.destination_id} = ${destinationId}
        )
        select taken, available - taken as tokens from took`),
    )) as unknown as { taken: number; tokens: number }[]
    if (taken) return answer(Number(taken.taken), Number(taken.tokens), limit)
    const first = take(undefined, limit, wanted, now)
    const created = await ctx.run((db) =>
      db
        .insert(b)
        .values({ tenant_id: tenantId, destination_id: destinationId, tokens: first.tokens, refilled_at: first.refilledAt })
        .onConflictDoNothing()
        .returning({ tokens: b.tokens }),
    )
    if (created.length > 0) return answer(first.taken, first.tokens, limit)
    // Another instance created it between the two statements: take from its bucket.
  }
}
