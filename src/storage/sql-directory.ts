import { and, asc, count, eq, gte, inArray, isNull, lte, sql, type SQL } from 'drizzle-orm'
import type { DestinationTypeName } from '../model/destination-type.js'
import type { JsonObject } from '../model/common.js'
import { deliveriesInIdOrder, keysetPlan, type Db, type SqlContext } from './sql-context.js'
import type { CredentialsReplacement, DestinationKey, DestinationRecord, StoredCredentials, TenantListRequest, TenantRecord, TenantSummary } from './storage.js'

// Tenants and destinations: the directory side of the storage port.

export async function upsertTenant(ctx: SqlContext, id: string, metadata: JsonObject | undefined, now: Date) {
  const { tenants } = ctx.tables
  return ctx.transaction(async (db) => {
    // A concurrent delete can remove the row between the insert that met it and the update: then insert again.
    for (;;) {
      const inserted = await db
        .insert(tenants)
        .values({ id, metadata: metadata ?? {}, created_at: now, updated_at: now })
        .onConflictDoNothing()
        .returning()
      if (inserted[0]) return { tenant: inserted[0] as TenantRecord, created: true }
      const set = metadata === undefined ? { updated_at: now } : { metadata, updated_at: now }
      const [row] = await db.update(tenants).set(set).where(eq(tenants.id, id)).returning()
      if (row) return { tenant: row as TenantRecord, created: false }
    }
  })
}

export async function getTenant(ctx: SqlContext, id: string): Promise<TenantRecord | null> {
  const { tenants } = ctx.tables
  const [row] = await ctx.run((db) => db.select().from(tenants).where(eq(tenants.id, id)).limit(1))
  return (row as TenantRecord | undefined) ?? null
}

export async function listTenants(ctx: SqlContext, q: TenantListRequest) {
  const { tenants } = ctx.tables
  const filters: SQL[] = []
  if (q.createdGte) filters.push(gte(tenants.created_at, q.createdGte))
  if (q.createdLte) filters.push(lte(tenants.created_at, q.createdLte))
  const plan = keysetPlan([tenants.created_at, tenants.id], q)
  return ctx.run(async (db) => {
    const rows = await db
      .select()
      .from(tenants)
      .where(and(...filters, plan.where))
      .orderBy(...plan.orderBy)
      .limit(q.limit + 1)
    const [total] = await db.select({ n: count() }).from(tenants).where(and(...filters))
    return { rows: (plan.reverse ? rows.reverse() : rows) as TenantRecord[], count: Number(total?.n ?? 0) }
  })
}

export async function deleteTenant(ctx: SqlContext, id: string): Promise<boolean> {
  const { tenants, destinations, events, deliveries, attempts, replay_jobs, expunge_jobs, rate_buckets } = ctx.tables
  return ctx.transaction(async (db) => {
    // Writers hold the tenant row (key share) until they commit, so this waits for them and then sees their rows.
    const gone = await db.delete(tenants).where(eq(tenants.id, id)).returning({ id: tenants.id })
    if (gone.length === 0) return false
    // Destinations in id order, as recordAttempts locks them (no deadlock); deliveries before the attempts that
    // recordAttempts writes under their row locks. Re-creating the id starts empty, so the tenant's log goes too.
    if (ctx.dialect === 'postgres')
      await db.select({ id: destinations.id }).from(destinations).where(eq(destinations.tenant_id, id)).orderBy(sql`${destinations.id} collate "C"`).for('update')
    await db.delete(destinations).where(eq(destinations.tenant_id, id))
    // Replay jobs before deliveries: a replay step locks its job, then deliveries (no deadlock).
    await db.delete(replay_jobs).where(eq(replay_jobs.tenant_id, id))
    await db.delete(expunge_jobs).where(eq(expunge_jobs.tenant_id, id))
    await db.delete(deliveries).where(deliveriesInIdOrder(ctx, db, eq(deliveries.tenant_id, id), id))
    await db.delete(attempts).where(eq(attempts.tenant_id, id))
    await db.delete(events).where(eq(events.tenant_id, id))
    await db.delete(rate_buckets).where(eq(rate_buckets.tenant_id, id))
    return true
  })
}

/**
 * Hold the tenant row until commit (Postgres `FOR KEY SHARE`: it blocks a delete, not an update), so
 * a concurrent deleteTenant waits for this transaction and then removes what it wrote. False when gone.
 */
export async function holdTenant(ctx: SqlContext, db: Db, id: string): Promise<boolean> {
  const { tenants } = ctx.tables
  let query = db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, id))
  if (ctx.dialect === 'postgres') query = query.for('key share') as typeof query
  return (await query).length > 0
}

export async function summarizeTenants(ctx: SqlContext, ids: string[]): Promise<Map<string, TenantSummary>> {
  const { destinations } = ctx.tables
  const result = new Map<string, TenantSummary>(ids.map((id) => [id, { destinations_count: 0, topics: [] }]))
  if (ids.length === 0) return result
  const rows = await ctx.run((db) =>
    db.select({ tenant_id: destinations.tenant_id, topics: destinations.topics }).from(destinations).where(inArray(destinations.tenant_id, ids)),
  )
  const topicSets = new Map<string, Set<string>>()
  for (const row of rows) {
    const summary = result.get(row.tenant_id)!
    summary.destinations_count++
    const set = topicSets.get(row.tenant_id) ?? new Set<string>()
    for (const t of row.topics) set.add(t)
    topicSets.set(row.tenant_id, set)
  }
  for (const [id, set] of topicSets) result.get(id)!.topics = [...set].sort()
  return result
}

export async function listDestinations(
  ctx: SqlContext,
  tenantId: string,
  filter: { types?: DestinationTypeName[]; enabledOnly?: boolean } = {},
): Promise<DestinationRecord[]> {
  const { destinations } = ctx.tables
  const where = and(
    eq(destinations.tenant_id, tenantId),
    filter.types?.length ? inArray(destinations.type, filter.types) : undefined,
    filter.enabledOnly ? isNull(destinations.disabled_at) : undefined,
  )
  const rows = await ctx.run((db) => db.select().from(destinations).where(where).orderBy(asc(destinations.created_at), asc(destinations.id)))
  return rows as DestinationRecord[]
}

export async function getDestination(ctx: SqlContext, tenantId: string, id: string): Promise<DestinationRecord | null> {
  const { destinations } = ctx.tables
  const [row] = await ctx.run((db) =>
    db.select().from(destinations).where(and(eq(destinations.tenant_id, tenantId), eq(destinations.id, id))).limit(1),
  )
  return (row as DestinationRecord | undefined) ?? null
}

export async function insertDestination(ctx: SqlContext, record: DestinationRecord): Promise<'inserted' | 'exists' | 'no-tenant'> {
  const { destinations } = ctx.tables
  return ctx.transaction(async (db) => {
    if (!(await holdTenant(ctx, db, record.tenant_id))) return 'no-tenant'
    const rows = await db.insert(destinations).values(record).onConflictDoNothing().returning({ id: destinations.id })
    return rows.length > 0 ? 'inserted' : 'exists'
  })
}

/**
 * Compare-and-set on `updated_at`: the record was built from a read, and a change that landed since
 * (another update, a disable) must not be overwritten. `disabled_at` is left to setDestinationDisabled.
 */
export async function updateDestination(ctx: SqlContext, r: DestinationRecord, readAt: Date): Promise<'updated' | 'stale' | 'missing'> {
  const { destinations } = ctx.tables
  const match = and(eq(destinations.tenant_id, r.tenant_id), eq(destinations.id, r.id))
  return ctx.transaction(async (db) => {
    const rows = await db
      .update(destinations)
      .set({
        topics: r.topics,
        filter: r.filter,
        config: r.config,
        credentials: r.credentials,
        delivery_metadata: r.delivery_metadata,
        metadata: r.metadata,
        delivery: r.delivery ?? null,
        payload: r.payload ?? null,
        batch: r.batch ?? null,
        updated_at: r.updated_at,
      })
      .where(and(match, eq(destinations.updated_at, readAt)))
      .returning({ id: destinations.id })
    if (rows.length > 0) return 'updated'
    const [still] = await db.select({ id: destinations.id }).from(destinations).where(match).limit(1)
    return still ? 'stale' : 'missing'
  })
}

export async function deleteDestination(ctx: SqlContext, tenantId: string, id: string): Promise<boolean> {
  const { destinations, deliveries, replay_jobs, rate_buckets } = ctx.tables
  return ctx.transaction(async (db) => {
    const gone = await db
      .delete(destinations)
      .where(and(eq(destinations.tenant_id, tenantId), eq(destinations.id, id)))
      .returning({ id: destinations.id })
    if (gone.length === 0) return false
    // Its replays end with it; before the deliveries, the order a replay step locks them in.
    await db
      .update(replay_jobs)
      .set({ status: 'cancelled', finished_at: new Date(), lease_owner: null, lease_until: null })
      .where(and(eq(replay_jobs.tenant_id, tenantId), eq(replay_jobs.destination_id, id), eq(replay_jobs.status, 'running')))
    // Publishers hold the destination row (key share) until they commit, so their deliveries are visible here.
    await db
      .update(deliveries)
      .set({ status: 'cancelled', next_attempt_at: null, lease_owner: null, lease_until: null })
      .where(deliveriesInIdOrder(ctx, db, and(eq(deliveries.tenant_id, tenantId), eq(deliveries.destination_id, id), eq(deliveries.status, 'pending')), tenantId))
    await db.delete(rate_buckets).where(and(eq(rate_buckets.tenant_id, tenantId), eq(rate_buckets.destination_id, id)))
    return true
  })
}

export async function setDestinationDisabled(
  ctx: SqlContext,
  tenantId: string,
  id: string,
  at: Date | null,
  now: Date,
): Promise<DestinationRecord | null> {
  const { destinations, deliveries } = ctx.tables
  const match = and(eq(destinations.tenant_id, tenantId), eq(destinations.id, id))
  return ctx.transaction(async (db) => {
    // Locked, so concurrent disables keep the first time and an enable cannot interleave with them.
    let read = db.select().from(destinations).where(match).limit(1)
    if (ctx.dialect === 'postgres') read = read.for('update') as typeof read
    const [current] = await read
    if (!current) return null
    // Disabling twice keeps the first time; enabling clears the failure streak.
    if (at && current.disabled_at) return current as DestinationRecord
    if (!at && !current.disabled_at) return current as DestinationRecord
    // updated_at versions the row (updateDestination compares it), so it moves on even within one millisecond.
    const updated_at = new Date(Math.max(now.getTime(), current.updated_at.getTime() + 1))
    const set = at ? { disabled_at: at, updated_at } : { disabled_at: null, consecutive_failures: 0, updated_at }
    const [row] = await db.update(destinations).set(set).where(match).returning()
    if (!at) {
      // Deliveries parked while the destination was disabled become due again.
      await db
        .update(deliveries)
        .set({ next_attempt_at: now })
        .where(
          deliveriesInIdOrder(
            ctx,
            db,
            // Not the deliveries of a FIFO destination waiting for their turn: the one before them lets them go.
            and(eq(deliveries.tenant_id, tenantId), eq(deliveries.destination_id, id), eq(deliveries.status, 'pending'), isNull(deliveries.next_attempt_at), isNull(deliveries.order_state)),
            tenantId,
          ),
        )
    }
    return row as DestinationRecord
  })
}

export async function scanCredentials(ctx: SqlContext, after: DestinationKey | undefined, limit: number): Promise<StoredCredentials[]> {
  const { destinations: d } = ctx.tables
  return ctx.run((db) =>
    db
      .select({ tenant_id: d.tenant_id, id: d.id, credentials: d.credentials })
      .from(d)
      .where(after ? sql`(${d.tenant_id}, ${d.id}) > (${after.tenant_id}, ${after.id})` : undefined)
      .orderBy(asc(d.tenant_id), asc(d.id))
      .limit(limit),
  )
}

export async function replaceCredentials(ctx: SqlContext, rows: CredentialsReplacement[]): Promise<number> {
  const { destinations: d } = ctx.tables
  if (rows.length === 0) return 0
  return ctx.transaction(async (db) => {
    let replaced = 0
    for (const r of rows) {
      const done = await db
        .update(d)
        .set({ credentials: r.to })
        .where(and(eq(d.tenant_id, r.tenant_id), eq(d.id, r.id), eq(d.credentials, r.from)))
        .returning({ id: d.id })
      replaced += done.length
    }
    return replaced
  })
}

export async function publishTargets(ctx: SqlContext, tenantIds: string[]): Promise<Map<string, DestinationRecord[]>> {
  const { tenants, destinations } = ctx.tables
  // One round trip: each tenant with its destinations (a tenant without any comes back once, with nulls).
  const rows = await ctx.run((db) =>
    db
      .select({ tenant: tenants.id, destination: destinations })
      .from(tenants)
      .leftJoin(destinations, eq(destinations.tenant_id, tenants.id))
      .where(inArray(tenants.id, tenantIds))
      .orderBy(asc(destinations.created_at), asc(destinations.id)),
  )
  const result = new Map<string, DestinationRecord[]>()
  for (const row of rows) {
    const list = result.get(row.tenant) ?? []
    result.set(row.tenant, list)
    if (row.destination) list.push(row.destination as DestinationRecord)
  }
  return result
}
