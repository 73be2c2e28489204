import { eq, lte } from 'drizzle-orm'
import type { SqlContext } from './sql-context.js'
import type { PortalCodeRecord } from './storage.js'

// Portal sign-in codes: issued by the portal redirect, used once by the portal page.

export async function insertPortalCode(ctx: SqlContext, code: PortalCodeRecord, now: Date): Promise<void> {
  const { portal_codes } = ctx.tables
  await ctx.transaction(async (db) => {
    // Expired codes go when new ones come: the table holds at most the last few minutes' codes.
    await db.delete(portal_codes).where(lte(portal_codes.expires_at, now))
    await db.insert(portal_codes).values(code)
  })
}

export async function takePortalCode(ctx: SqlContext, codeHash: string): Promise<PortalCodeRecord | null> {
  const { portal_codes } = ctx.tables
  // One DELETE … RETURNING: of two instances (or requests) using the same code at once, one gets the row.
  const [row] = await ctx.run((db) => db.delete(portal_codes).where(eq(portal_codes.code_hash, codeHash)).returning())
  return (row as PortalCodeRecord | undefined) ?? null
}
