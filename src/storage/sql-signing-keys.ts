import { eq, isNotNull, lte, and } from 'drizzle-orm'
import type { SqlContext } from './sql-context.js'
import type { SigningKeyRecord } from './storage.js'

// The engine's Ed25519 signing keyring: one active key, previous keys until they retire.

export async function listSigningKeys(ctx: SqlContext): Promise<SigningKeyRecord[]> {
  const { signing_keys: k } = ctx.tables
  const rows = await ctx.run((db) => db.select().from(k).orderBy(k.created_at, k.kid))
  return rows.map((r) => ({ ...r, active: r.active === true }))
}

/**
 * Insert `key` as the active key. Without `retireActiveAt` it is inserted only when no key is active
 * (the first start; of several instances starting at once one key wins). With it, the active key
 * becomes a previous key retiring then, in the same transaction, and keys already retired are deleted.
 */
export async function insertSigningKey(ctx: SqlContext, key: Omit<SigningKeyRecord, 'active' | 'retires_at'>, retireActiveAt: Date | undefined, now: Date): Promise<boolean> {
  const { signing_keys: k } = ctx.tables
  const row = { ...key, active: true, retires_at: null }
  if (!retireActiveAt) {
    const inserted = await ctx.run((db) => db.insert(k).values(row).onConflictDoNothing().returning({ kid: k.kid }))
    return inserted.length > 0
  }
  return ctx.transaction(async (db) => {
    await db.delete(k).where(and(isNotNull(k.retires_at), lte(k.retires_at, now)))
    await db.update(k).set({ active: null, retires_at: retireActiveAt }).where(eq(k.active, true))
    await db.insert(k).values(row)
    return true
  })
}

/** Replace a key's sealed secret when it still is `from` (re-encryption); whether it was replaced. */
export async function replaceSigningKeySecret(ctx: SqlContext, kid: string, from: string, to: string): Promise<boolean> {
  const { signing_keys: k } = ctx.tables
  const rows = await ctx.run((db) => db.update(k).set({ secret: to }).where(and(eq(k.kid, kid), eq(k.secret, from))).returning({ kid: k.kid }))
  return rows.length > 0
}
