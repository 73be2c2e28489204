import { and, asc, eq, gte, inArray, isNotNull, isNull, lt, lte, ne, or, sql } from 'drizzle-orm'
import { holdTenant } from './sql-directory.js'
import { promoteHeads } from './sql-ordering.js'
import { deliveriesInIdOrder, keysetCondition, jobTenant, lockOldestJob, sameTenant, type Db, type SqlContext } from './sql-context.js'
import type { ExpungeJobRecord, ExpungeOutcome, ExpungeStep, ExpungeStepRequest, NewExpungeJob, Storage } from './storage.js'

// Erasure: an event's payload and its attempts' response bodies are removed, its deliveries end (status
// 'expunged': never claimed, replayed or retried again), and the log keeps ids, topic, times and status codes.

/**
 * Erase these events of the tenant in the caller's transaction (which holds the tenant). Rows are locked in one
 * order (events by id, then deliveries by id), so concurrent erasures of overlapping ids cannot deadlock, and a
 * claim either leased a delivery before this (it carries the payload it read) or sees it ended. Returns the ids
 * found, and of those the ones not erased before.
 */
async function erase(ctx: SqlContext, db: Db, tenantId: string, ids: string[], now: Date): Promise<{ found: string[]; fresh: string[] }> {
  const { events: e, deliveries: d, attempts: a } = ctx.tables
  if (ids.length === 0) return { found: [], fresh: [] }
  let read = db.select({ id: e.id, expunged_at: e.expunged_at }).from(e).where(and(eq(e.tenant_id, tenantId), inArray(e.id, ids))).orderBy(asc(e.id))
  if (ctx.dialect === 'postgres') read = read.for('update') as typeof read
  const rows = await read
  const found = rows.map((r) => r.id)
  const fresh = rows.filter((r) => r.expunged_at === null).map((r) => r.id)
  if (found.length === 0) return { found, fresh }
  if (fresh.length) {
    // JSON null, not SQL NULL: the column stays NOT NULL (SQLite could not drop that without copying the table).
    const erased = ctx.dialect === 'postgres' ? sql`'null'::jsonb` : sql`'null'`
    await db.update(e).set({ data: erased, expunged_at: now }).where(and(eq(e.tenant_id, tenantId), inArray(e.id, fresh)))
  }
  const ofEvents = and(eq(d.tenant_id, tenantId), inArray(d.event_id, found))
  // FIFO destinations: an erased delivery that was its key's next one lets the following one go.
  const keys = await db
    .select({ tenant_id: d.tenant_id, destination_id: d.destination_id, order_key: d.order_key })
    .from(d)
    .where(and(ofEvents, eq(d.status, 'pending'), isNotNull(d.order_key)))
  await db
    .update(d)
    .set({ status: 'expunged', next_attempt_at: null, lease_owner: null, lease_until: null, order_state: null, replay_job: null })
    .where(deliveriesInIdOrder(ctx, db, and(ofEvents, ne(d.status, 'expunged')), tenantId))
  if (keys.length && (await promoteHeads(ctx, db, keys.map((k) => ({ ...k, order_key: k.order_key! })), now)) > 0) await ctx.notifyWork?.(db)
  await db.update(a).set({ response_body: null }).where(and(eq(a.tenant_id, tenantId), inArray(a.event_id, found), isNotNull(a.response_body)))
  return { found, fresh }
}

/** Storage.expungeEvents: each id `expunged` (now or before) or `not_found`; null when the tenant is gone. */
export async function expungeEvents(ctx: SqlContext, tenantId: string, ids: string[], now: Date): Promise<Map<string, ExpungeOutcome> | null> {
  return ctx.transaction(async (db) => {
    if (!(await holdTenant(ctx, db, tenantId))) return null
    const { found } = await erase(ctx, db, tenantId, [...new Set(ids)], now)
    const erased = new Set(found)
    return new Map(ids.map((id) => [id, erased.has(id) ? 'expunged' : 'not_found']))
  })
}

export async function insertExpungeJob(ctx: SqlContext, job: NewExpungeJob): Promise<ExpungeJobRecord | null> {
  const { expunge_jobs: x } = ctx.tables
  return ctx.transaction(async (db) => {
    // Held like every writer for a tenant: a concurrent tenant delete removes this job too.
    if (!(await holdTenant(ctx, db, job.tenant_id))) return null
    const record: ExpungeJobRecord = {
      ...job,
      status: 'created',
      expunged: 0,
      cursor_time: null,
      cursor_event: null,
      lease_owner: null,
      lease_until: null,
      updated_at: job.created_at,
      finished_at: null,
    }
    await db.insert(x).values(record)
    return record
  })
}

export async function getExpungeJob(ctx: SqlContext, tenantId: string, id: string): Promise<ExpungeJobRecord | null> {
  const { expunge_jobs: x } = ctx.tables
  const [row] = await ctx.run((db) => db.select().from(x).where(and(eq(x.id, id), eq(x.tenant_id, tenantId))).limit(1))
  return (row as ExpungeJobRecord | undefined) ?? null
}

export async function claimExpungeJob(ctx: SqlContext, owner: string, now: Date, leaseUntil: Date): Promise<ExpungeJobRecord | null> {
  const { expunge_jobs: x } = ctx.tables
  return ctx.transaction(async (db) => {
    const free = await lockOldestJob(ctx, db, x, and(ne(x.status, 'done'), or(isNull(x.lease_until), lt(x.lease_until, now)))!)
    if (!free) return null
    const [row] = await db.update(x).set({ lease_owner: owner, lease_until: leaseUntil }).where(and(sameTenant(ctx, x.tenant_id, free.tenant_id), eq(x.id, free.id))).returning()
    return (row as ExpungeJobRecord | undefined) ?? null
  }, { durable: false })
}

export async function releaseExpungeJobs(ctx: SqlContext, owner: string): Promise<void> {
  const { expunge_jobs: x } = ctx.tables
  await ctx.run((db) => db.update(x).set({ lease_owner: null, lease_until: null }).where(and(eq(x.lease_owner, owner), ne(x.status, 'done'))))
}

/**
 * One step of a job `owner` holds, in one transaction: erase the next `batchSize` events of its range not erased
 * yet (by `time`, then id) and move its cursor past them, or mark it done when none is left. A step that did not
 * commit is taken again from the same cursor.
 */
export async function advanceExpungeJob(ctx: SqlContext, q: ExpungeStepRequest): Promise<ExpungeStep> {
  const { expunge_jobs: x, events: e } = ctx.tables
  return ctx.transaction(async (db) => {
    const lost: ExpungeStep = { outcome: 'lost', job: null, event_ids: [] }
    const tenant = await jobTenant(ctx, db, x, q)
    const mine = and(eq(x.id, q.id), tenant === undefined ? undefined : eq(x.tenant_id, tenant), eq(x.lease_owner, q.owner), ne(x.status, 'done'))
    // The tenant row first, held like any writer's (a tenant delete waits for the step, then removes the job), then
    // the job's row: the order a tenant delete takes them in.
    const [owned] = await db.select({ tenant_id: x.tenant_id }).from(x).where(mine).limit(1)
    if (!owned || !(await holdTenant(ctx, db, owned.tenant_id))) return lost
    let read = db.select().from(x).where(mine).limit(1)
    if (ctx.dialect === 'postgres') read = read.for('update') as typeof read
    const [row] = await read
    if (!row) return lost
    const job = row as ExpungeJobRecord
    const after = job.cursor_time ? keysetCondition([e.time, e.id], [job.cursor_time.getTime(), job.cursor_event!], '>') : undefined
    const batch = await db
      .select({ id: e.id, time: e.time })
      .from(e)
      .where(
        and(eq(e.tenant_id, job.tenant_id), gte(e.time, job.time_from), lte(e.time, job.time_to), job.topic ? eq(e.topic, job.topic) : undefined, isNull(e.expunged_at), after),
      )
      .orderBy(asc(e.time), asc(e.id))
      .limit(q.batchSize)
    const last = batch.at(-1)
    if (!last) {
      const [done] = await db
        .update(x)
        .set({ status: 'done', finished_at: q.now, updated_at: q.now, lease_owner: null, lease_until: null })
        .where(and(sameTenant(ctx, x.tenant_id, job.tenant_id), eq(x.id, job.id)))
        .returning()
      return { outcome: 'finished', job: done as ExpungeJobRecord, event_ids: [] }
    }
    const { fresh } = await erase(ctx, db, job.tenant_id, batch.map((b) => b.id), q.now)
    const [next] = await db
      .update(x)
      .set({ status: 'running', expunged: job.expunged + fresh.length, cursor_time: last.time, cursor_event: last.id, lease_until: q.leaseUntil, updated_at: q.now })
      .where(and(sameTenant(ctx, x.tenant_id, job.tenant_id), eq(x.id, job.id)))
      .returning()
    return { outcome: 'erased', job: next as ExpungeJobRecord, event_ids: fresh }
  })
}

/** The Storage port's erasure methods over a dialect's SqlContext. */
export function expungeMethods(
  ctx: SqlContext,
): Pick<Storage, 'expungeEvents' | 'insertExpungeJob' | 'getExpungeJob' | 'claimExpungeJob' | 'advanceExpungeJob' | 'releaseExpungeJobs'> {
  return {
    expungeEvents: (t, ids, now) => expungeEvents(ctx, t, ids, now),
    insertExpungeJob: (job) => insertExpungeJob(ctx, job),
    getExpungeJob: (t, id) => getExpungeJob(ctx, t, id),
    claimExpungeJob: (owner, now, until) => claimExpungeJob(ctx, owner, now, until),
    advanceExpungeJob: (q) => advanceExpungeJob(ctx, q),
    releaseExpungeJobs: (owner) => releaseExpungeJobs(ctx, owner),
  }
}
