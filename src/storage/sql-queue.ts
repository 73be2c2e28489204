import { and, count, desc, eq, gte, inArray, isNotNull, isNull, lte, lt, min, ne, or, sql, type SQL } from 'drizzle-orm'
import { deliveriesLocked, keysetPlan, listedDelivery, runLocking, type Db, type SqlContext } from './sql-context.js'
import { promoteHeads } from './sql-ordering.js'
import { leavingOut, pageOverDays, type SettledDay } from './listing-days.js'
import type {
  AttemptRecord,
  AttemptWrite,
  ClaimRequest,
  ClaimedDelivery,
  DestinationStreak,
  EventListRequest,
  EventRecord,
  EventRow,
  InsertEventResult,
  NewEventWithDeliveries,
  QueueStats,
} from './storage.js'

// Events, the delivery queue and the attempt log.

export async function insertEvents(ctx: SqlContext, items: NewEventWithDeliveries[]): Promise<InsertEventResult[]> {
  if (items.length === 0) return []
  const write = async (db: Db) => {
    const results = await ctx.hotPath.insertEvents(db, items)
    // FIFO destinations: a new delivery that nothing of its key precedes is due at once.
    const ordered = items.flatMap(({ event, deliveries }) =>
      deliveries.flatMap((d) => (d.order_key === undefined || d.skipped ? [] : [{ tenant_id: event.tenant_id, destination_id: d.destination_id, order_key: d.order_key }])),
    )
    if (ordered.length) await promoteHeads(ctx, db, ordered, items[0]!.event.created_at)
    // Rows the local worker did not take are for any instance: wake them (once they are visible).
    if (items.some((i) => i.deliveries.some((d) => !d.lease_owner))) await ctx.notifyWork?.(db)
    return results
  }
  return ctx.hotPath.singleStatementInsert ? ctx.run(write) : ctx.transaction(write)
}

export async function claimDueDeliveries(ctx: SqlContext, q: ClaimRequest): Promise<ClaimedDelivery[]> {
  const { hotPath } = ctx
  if (hotPath.claimDueDeliveries) return ctx.transaction(async (db) => hotPath.claimDueDeliveries!(db, q), { durable: false })
  const { deliveries } = ctx.tables
  const due = and(
    eq(deliveries.status, 'pending'),
    lte(deliveries.next_attempt_at, q.now),
    q.dueSince ? gte(deliveries.next_attempt_at, q.dueSince) : undefined,
    or(isNull(deliveries.lease_until), lt(deliveries.lease_until, q.now)),
  )
  return ctx.transaction(async (db) => {
    let pick = db.select({ id: deliveries.id }).from(deliveries).where(due).orderBy(deliveries.next_attempt_at).limit(q.limit)
    // Many engines share one Postgres: rows another worker is claiming right now are skipped, not waited on.
    if (ctx.dialect === 'postgres') pick = pick.for('update', { skipLocked: true }) as typeof pick
    const ids = (await pick).map((r) => r.id)
    if (ids.length === 0) return []
    await db.update(deliveries).set({ lease_owner: q.owner, lease_until: q.leaseUntil }).where(inArray(deliveries.id, ids))
    return loadClaimed(ctx, db, ids)
  }, { durable: false })
}

async function loadClaimed(ctx: SqlContext, db: Db, ids: string[]): Promise<ClaimedDelivery[]> {
  const { deliveries, events } = ctx.tables
  const rows = await db
    .select({ d: deliveries, e: events })
    .from(deliveries)
    .innerJoin(events, and(eq(events.tenant_id, deliveries.tenant_id), eq(events.id, deliveries.event_id)))
    .where(inArray(deliveries.id, ids))
  return rows.map(({ d, e }) => ({
    id: d.id,
    tenant_id: d.tenant_id,
    event_id: d.event_id,
    destination_id: d.destination_id,
    attempt_count: d.attempt_count,
    manual: d.manual,
    ...(d.replay_job ? { replay: true } : {}),
    order_key: d.order_key,
    due_at: d.next_attempt_at!,
    event: e as EventRecord,
  }))
}

export async function recordAttempts(ctx: SqlContext, writes: AttemptWrite[]): Promise<DestinationStreak[]> {
  const { destinations } = ctx.tables
  const { writeAttempts } = ctx.hotPath
  if (!writeAttempts) throw new Error('this storage records attempts with its own statement')
  if (writes.length === 0) return []
  return ctx.transaction(async (db) => {
    // Failure streaks per destination: failures after the batch's last success, added to the stored streak if none.
    const streaks = new Map<string, { tenant_id: string; destination_id: string; failures: number; reset: boolean }>()
    for (const { attempt } of writes) {
      const key = `${attempt.tenant_id}\u0000${attempt.destination_id}`
      const s = streaks.get(key) ?? { tenant_id: attempt.tenant_id, destination_id: attempt.destination_id, failures: 0, reset: false }
      if (attempt.status === 'success') Object.assign(s, { failures: 0, reset: true })
      else s.failures++
      streaks.set(key, s)
    }
    const result: DestinationStreak[] = []
    // Fixed order, so instances updating the same destinations cannot deadlock.
    const ordered = [...streaks.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, s]) => s)
    for (const s of ordered) {
      if (ctx.hotPath.updateStreak) {
        const n = ctx.hotPath.updateStreak(db, s)
        if (n !== null) result.push({ tenant_id: s.tenant_id, destination_id: s.destination_id, consecutive_failures: n })
        continue
      }
      const match = and(eq(destinations.tenant_id, s.tenant_id), eq(destinations.id, s.destination_id))
      if (s.reset && s.failures === 0) {
        // The common case, a success on a healthy destination: no write, so no lock on a hot row.
        await db.update(destinations).set({ consecutive_failures: 0 }).where(and(match, sql`${destinations.consecutive_failures} <> 0`))
        result.push({ tenant_id: s.tenant_id, destination_id: s.destination_id, consecutive_failures: 0 })
        continue
      }
      const value = s.reset ? sql`${s.failures}` : sql`${destinations.consecutive_failures} + ${s.failures}`
      const [row] = await db.update(destinations).set({ consecutive_failures: value }).where(match).returning({ n: destinations.consecutive_failures })
      if (row) result.push({ tenant_id: s.tenant_id, destination_id: s.destination_id, consecutive_failures: row.n })
    }
    // After the destinations, the order deleteTenant and deleteDestination lock rows in.
    await writeAttempts(db, writes)
    // FIFO destinations: a finished delivery lets the next one of its key go.
    const finished = writes.flatMap(({ attempt, delivery }) =>
      delivery.order_key != null && delivery.status !== 'pending' ? [{ tenant_id: attempt.tenant_id, destination_id: attempt.destination_id, order_key: delivery.order_key }] : [],
    )
    if (finished.length && (await promoteHeads(ctx, db, finished, writes[0]!.attempt.delivered_at)) > 0) await ctx.notifyWork?.(db)
    return result
  }, { durable: false })
}

export async function extendLeases(ctx: SqlContext, owner: string, ids: string[], leaseUntil: Date): Promise<number> {
  const { hotPath } = ctx
  if (hotPath.extendLeases) return ctx.run(async (db) => hotPath.extendLeases!(db, owner, ids, leaseUntil))
  const { deliveries } = ctx.tables
  let extended = 0
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await runLocking(ctx, async (db) =>
      db
        .update(deliveries)
        .set({ lease_until: leaseUntil })
        .where(await deliveriesLocked(ctx, db, and(eq(deliveries.lease_owner, owner), eq(deliveries.status, 'pending'), inArray(deliveries.id, ids.slice(i, i + 1000)))))
        .returning({ id: deliveries.id }),
    { durable: false })
    extended += rows.length
  }
  return extended
}

export async function releaseLeases(ctx: SqlContext, owner: string, ids?: string[]): Promise<number> {
  const { hotPath } = ctx
  if (hotPath.releaseLeases) return ctx.run(async (db) => hotPath.releaseLeases!(db, owner, ids))
  const { deliveries } = ctx.tables
  const rows = await runLocking(ctx, async (db) =>
    db
      .update(deliveries)
      .set({ lease_owner: null, lease_until: null })
      .where(await deliveriesLocked(ctx, db, and(eq(deliveries.lease_owner, owner), eq(deliveries.status, 'pending'), ids ? inArray(deliveries.id, ids) : undefined)))
      .returning({ id: deliveries.id }),
  { durable: false })
  return rows.length
}

export async function holdDeliveries(ctx: SqlContext, ids: string[], cancel: boolean, now = new Date()): Promise<void> {
  const { deliveries } = ctx.tables
  if (ids.length === 0) return
  // Parked: shown as skipped from now on (the first time it was held, if held before) until attempted again.
  const skipped = cancel ? {} : { skipped_at: sql`coalesce(${deliveries.skipped_at}, ${sql.param(now, deliveries.skipped_at)})` }
  await runLocking(ctx, async (db) =>
    db
      .update(deliveries)
      .set({ status: cancel ? 'cancelled' : 'pending', next_attempt_at: null, lease_owner: null, lease_until: null, ...skipped })
      .where(await deliveriesLocked(ctx, db, and(inArray(deliveries.id, ids), eq(deliveries.status, 'pending')))),
  )
}

export async function requeueDelivery(ctx: SqlContext, tenantId: string, eventId: string, destinationId: string, now: Date): Promise<boolean> {
  const { deliveries, destinations } = ctx.tables
  // A delete that committed first leaves nothing to requeue; one that commits later cancels the row again. An
  // erased event is never sent again.
  const destinationExists = sql`exists (select 1 from ${destinations} where ${destinations.tenant_id} = ${tenantId} and ${destinations.id} = ${destinationId})`
  return ctx.transaction(async (db) => {
    const rows = await db
      .update(deliveries)
      .set({ status: 'pending', manual: true, next_attempt_at: now, lease_owner: null, lease_until: null })
      .where(and(eq(deliveries.tenant_id, tenantId), eq(deliveries.event_id, eventId), eq(deliveries.destination_id, destinationId), ne(deliveries.status, 'expunged'), destinationExists))
      .returning({ id: deliveries.id })
    if (rows.length > 0) await ctx.notifyWork?.(db)
    return rows.length > 0
  })
}

function eventRowSelection(ctx: SqlContext) {
  const { deliveries: d, events: e } = ctx.tables
  return {
    tenant_id: d.tenant_id,
    event_id: d.event_id,
    destination_id: d.destination_id,
    topic: d.topic,
    time: d.event_time,
    data: e.data,
    metadata: e.metadata,
    status: d.status,
    successful_at: d.successful_at,
    last_attempt_at: d.last_attempt_at,
    skipped_at: d.skipped_at,
    schema_valid: e.schema_valid,
    expunged_at: e.expunged_at,
  }
}

export async function listEvents(ctx: SqlContext, q: EventListRequest): Promise<EventRow[]> {
  const { deliveries: d, events: e } = ctx.tables
  const filters: (SQL | undefined)[] = [
    // A pair is listed from its first attempt on, or once skipped (matches the partial indexes).
    listedDelivery(ctx),
    q.tenantIds?.length ? inArray(d.tenant_id, q.tenantIds) : undefined,
    q.destinationIds?.length ? inArray(d.destination_id, q.destinationIds) : undefined,
    q.topics?.length ? inArray(d.topic, q.topics) : undefined,
    q.status === 'success' ? isNotNull(d.successful_at) : q.status === 'failed' ? isNull(d.successful_at) : undefined,
    q.timeGte ? gte(d.event_time, q.timeGte) : undefined,
    q.timeLte ? lte(d.event_time, q.timeLte) : undefined,
  ]
  const plan = keysetPlan([d.event_time, d.event_id, d.destination_id], q)
  const read = (leftOut: SettledDay[]) =>
    ctx.run((db) =>
      db
        .select(eventRowSelection(ctx))
        .from(d)
        .innerJoin(e, and(eq(e.tenant_id, d.tenant_id), eq(e.id, d.event_id)))
        .where(and(...filters, plan.where, leavingOut(d.event_created_at, leftOut), leavingOut(e.created_at, leftOut)))
        .orderBy(...plan.orderBy)
        .limit(q.limit + 1),
    ) as Promise<EventRow[]>
  // The partitioned layout: days whose event times cannot reach the page are left out (listing-days.ts).
  const days = (await ctx.settledDays?.()) ?? []
  const rows = days.length ? await pageOverDays(q, days, read) : await read([])
  return plan.reverse ? rows.reverse() : rows
}

export async function getEvent(ctx: SqlContext, tenantId: string, eventId: string, destinationId?: string): Promise<EventRow | null> {
  const { deliveries: d, events: e } = ctx.tables
  const [row] = await ctx.run((db) =>
    db
      .select(eventRowSelection(ctx))
      .from(d)
      .innerJoin(e, and(eq(e.tenant_id, d.tenant_id), eq(e.id, d.event_id)))
      .where(
        and(
          eq(d.tenant_id, tenantId),
          eq(d.event_id, eventId),
          destinationId === undefined ? undefined : eq(d.destination_id, destinationId),
          listedDelivery(ctx),
        ),
      )
      // Skipped pairs (never attempted) come after attempted ones on both dialects.
      .orderBy(sql`${d.last_attempt_at} desc nulls last`, desc(d.destination_id))
      .limit(1),
  )
  return (row as EventRow | undefined) ?? null
}

/** An event's data when it has a delivery to the destination, whatever the delivery's state (a thin delivery's link). */
export async function getDeliveredData(ctx: SqlContext, tenantId: string, eventId: string, destinationId: string): Promise<{ data: unknown } | null> {
  const { deliveries: d, events: e } = ctx.tables
  const [row] = await ctx.run((db) =>
    db
      .select({ data: e.data })
      .from(d)
      .innerJoin(e, and(eq(e.tenant_id, d.tenant_id), eq(e.id, d.event_id)))
      .where(and(eq(d.tenant_id, tenantId), eq(d.event_id, eventId), eq(d.destination_id, destinationId)))
      .limit(1),
  )
  return row ?? null
}

export async function listAttempts(ctx: SqlContext, tenantId: string, eventId: string): Promise<AttemptRecord[]> {
  const { attempts } = ctx.tables
  const rows = await ctx.run((db) =>
    db
      .select()
      .from(attempts)
      .where(and(eq(attempts.tenant_id, tenantId), eq(attempts.event_id, eventId)))
      .orderBy(desc(attempts.delivered_at), desc(attempts.id)),
  )
  return rows as AttemptRecord[]
}

export async function queueStats(ctx: SqlContext, now: Date): Promise<QueueStats> {
  const { deliveries } = ctx.tables
  // The range of the partial deliveries_due_idx (pending rows by next_attempt_at) up to now.
  const [row] = await ctx.run((db) =>
    db
      .select({ due: count(), oldest: min(deliveries.next_attempt_at) })
      .from(deliveries)
      .where(and(eq(deliveries.status, 'pending'), lte(deliveries.next_attempt_at, now))),
  )
  return { due: Number(row?.due ?? 0), oldest_due_at: row?.oldest ?? null }
}

export async function ping(ctx: SqlContext): Promise<void> {
  const { tenants } = ctx.tables
  // The same builder on both dialects (drizzle's raw execute differs between them); one index probe.
  await ctx.run((db) => db.select({ id: tenants.id }).from(tenants).limit(1))
}
