import { and, asc, count, eq, gte, inArray, isNull, lt, lte, min, or, sql, type SQL } from 'drizzle-orm'
import { deliveriesInIdOrder, keysetCondition, listedDelivery, jobTenant, lockOldestJob, sameTenant, type Db, type SqlContext } from './sql-context.js'
import type { NewReplayJob, ReplayJobRecord, ReplayStep, ReplayStepRequest } from './storage.js'

// Replays: durable jobs that hand a destination's past deliveries back to the worker, a batch at a time.

/** A job's row by its key (the tenant on Postgres: see sameTenant). */
function jobKey(ctx: SqlContext, job: { id: string; tenant_id: string }): SQL {
  const { replay_jobs: r } = ctx.tables
  return and(sameTenant(ctx, r.tenant_id, job.tenant_id), eq(r.id, job.id))!
}

/** The delivery states a job replays. */
function selectedStates(job: NewReplayJob): string[] {
  return job.select_status === 'all' ? ['success', 'failed', 'skipped'] : [job.select_status]
}

/** The deliveries a job selects, from its cursor on: one range of deliveries_destination_time_idx. */
function selection(ctx: SqlContext, job: NewReplayJob): SQL {
  const { deliveries: d } = ctx.tables
  return and(
    eq(d.tenant_id, job.tenant_id),
    eq(d.destination_id, job.destination_id),
    listedDelivery(ctx),
    gte(d.event_time, job.since),
    lte(d.event_time, job.until),
    inArray(d.status, selectedStates(job)),
    job.topics?.length ? inArray(d.topic, job.topics) : undefined,
  )!
}

export async function insertReplayJobs(ctx: SqlContext, jobs: NewReplayJob[]): Promise<ReplayJobRecord[] | null> {
  const { tenants, destinations, replay_jobs: r, deliveries: d } = ctx.tables
  if (jobs.length === 0) return []
  return ctx.transaction(async (db) => {
    // Held like every writer for a tenant (see holdTenant): a concurrent tenant delete removes these jobs too.
    let owner = db.select({ id: tenants.id }).from(tenants).where(eq(tenants.id, jobs[0]!.tenant_id))
    if (ctx.dialect === 'postgres') owner = owner.for('key share') as typeof owner
    if ((await owner).length === 0) return null
    const inserted: ReplayJobRecord[] = []
    for (const job of jobs) {
      const [exists] = await db
        .select({ id: destinations.id })
        .from(destinations)
        .where(and(eq(destinations.tenant_id, job.tenant_id), eq(destinations.id, job.destination_id)))
      if (!exists) continue
      const [matched] = await db.select({ n: count() }).from(d).where(selection(ctx, job))
      const record: ReplayJobRecord = {
        ...job,
        status: 'running',
        matched: Number(matched?.n ?? 0),
        done: 0,
        failed: 0,
        cursor_time: null,
        cursor_event: null,
        batch_time: null,
        batch_event: null,
        batch_started_at: null,
        lease_owner: null,
        lease_until: null,
        updated_at: job.created_at,
        finished_at: null,
      }
      await db.insert(r).values(record)
      inserted.push(record)
    }
    return inserted
  })
}

export async function getReplayJob(ctx: SqlContext, tenantId: string, destinationId: string, id: string): Promise<ReplayJobRecord | null> {
  const { replay_jobs: r } = ctx.tables
  const [row] = await ctx.run((db) =>
    db.select().from(r).where(and(eq(r.id, id), eq(r.tenant_id, tenantId), eq(r.destination_id, destinationId))).limit(1),
  )
  return (row as ReplayJobRecord | undefined) ?? null
}

export async function cancelReplayJob(ctx: SqlContext, tenantId: string, destinationId: string, id: string, now: Date): Promise<ReplayJobRecord | null> {
  const { replay_jobs: r, deliveries: d } = ctx.tables
  const match = and(eq(r.id, id), eq(r.tenant_id, tenantId), eq(r.destination_id, destinationId))
  return ctx.transaction(async (db) => {
    const [row] = await db
      .update(r)
      .set({ status: 'cancelled', finished_at: now, updated_at: now, lease_owner: null, lease_until: null })
      .where(and(match, eq(r.status, 'running')))
      .returning()
    if (!row) {
      const [existing] = await db.select().from(r).where(match).limit(1)
      return (existing as ReplayJobRecord | undefined) ?? null
    }
    // The batch handed out goes on as ordinary deliveries; nothing counts it any more.
    await db.update(d).set({ replay_job: null }).where(deliveriesInIdOrder(ctx, db, eq(d.replay_job, id), tenantId))
    return row as ReplayJobRecord
  })
}

export async function claimReplayJob(ctx: SqlContext, owner: string, now: Date, leaseUntil: Date): Promise<ReplayJobRecord | null> {
  const { replay_jobs: r } = ctx.tables
  return ctx.transaction(async (db) => {
    const free = await lockOldestJob(ctx, db, r, and(eq(r.status, 'running'), or(isNull(r.lease_until), lt(r.lease_until, now)))!)
    if (!free) return null
    const [row] = await db.update(r).set({ lease_owner: owner, lease_until: leaseUntil }).where(jobKey(ctx, free)).returning()
    return (row as ReplayJobRecord | undefined) ?? null
  }, { durable: false })
}

export async function releaseReplayJobs(ctx: SqlContext, owner: string): Promise<void> {
  const { replay_jobs: r } = ctx.tables
  await ctx.run((db) => db.update(r).set({ lease_owner: null, lease_until: null }).where(and(eq(r.lease_owner, owner), eq(r.status, 'running'))))
}

export async function skippedDeliveries(ctx: SqlContext, tenantId: string, destinationId: string): Promise<{ count: number; oldest: Date | null }> {
  const { deliveries: d } = ctx.tables
  const [row] = await ctx.run((db) =>
    db
      .select({ n: count(), oldest: min(d.event_time) })
      .from(d)
      .where(and(eq(d.tenant_id, tenantId), eq(d.destination_id, destinationId), listedDelivery(ctx), eq(d.status, 'skipped'))),
  )
  return { count: Number(row?.n ?? 0), oldest: row?.oldest ?? null }
}

export async function advanceReplayJob(ctx: SqlContext, q: ReplayStepRequest): Promise<ReplayStep> {
  const { replay_jobs: r, destinations } = ctx.tables
  return ctx.transaction(async (db) => {
    const tenant = await jobTenant(ctx, db, r, q)
    let read = db.select().from(r).where(and(eq(r.id, q.id), tenant === undefined ? undefined : eq(r.tenant_id, tenant), eq(r.lease_owner, q.owner), eq(r.status, 'running'))).limit(1)
    // The job row is locked for the step: a cancel or a tenant delete waits for it, and then wins.
    if (ctx.dialect === 'postgres') read = read.for('update') as typeof read
    const [row] = await read
    if (!row) return { outcome: 'lost', job: null }
    let job = row as ReplayJobRecord
    const [destination] = await db
      .select({ id: destinations.id })
      .from(destinations)
      .where(and(eq(destinations.tenant_id, job.tenant_id), eq(destinations.id, job.destination_id)))
    if (!destination) return { outcome: 'finished', job: await finish(ctx, db, job, 'cancelled', q.now) }
    if (job.batch_time) {
      // Checked many times a second while the worker attempts the batch: a probe that stops at the first
      // delivery still waiting, and a lease renewed once a third of it has passed.
      if (await batchWaiting(ctx, db, job)) return { outcome: 'waiting', job: await renewWhenDue(ctx, db, job, q) }
      job = await countBatch(ctx, db, job, q.now)
    }
    if (await freshDeliveriesWaiting(ctx, db, q)) return { outcome: 'yielded', job: await renew(ctx, db, job, q) }
    const handed = await handOutBatch(ctx, db, job, q)
    if (!handed) return { outcome: 'finished', job: await finish(ctx, db, job, 'completed', q.now) }
    return { outcome: 'handed', job: handed }
  }, { durable: false }) // a step lost to a power failure is taken again: the batch is re-sent (replay is at least once)
}

async function renew(ctx: SqlContext, db: Db, job: ReplayJobRecord, q: ReplayStepRequest): Promise<ReplayJobRecord> {
  const { replay_jobs: r } = ctx.tables
  const [row] = await db.update(r).set({ lease_until: q.leaseUntil }).where(jobKey(ctx, job)).returning()
  return row as ReplayJobRecord
}

async function renewWhenDue(ctx: SqlContext, db: Db, job: ReplayJobRecord, q: ReplayStepRequest): Promise<ReplayJobRecord> {
  const left = (job.lease_until?.getTime() ?? 0) - q.now.getTime()
  return left < ((q.leaseUntil.getTime() - q.now.getTime()) * 2) / 3 ? renew(ctx, db, job, q) : job
}

/** A delivery of the batch handed out is still waiting for its attempt (a parked one included: its destination was disabled meanwhile). */
async function batchWaiting(ctx: SqlContext, db: Db, job: ReplayJobRecord): Promise<boolean> {
  const { deliveries: d } = ctx.tables
  const [row] = await db
    .select({ id: d.id })
    .from(d)
    .where(and(sameTenant(ctx, d.tenant_id, job.tenant_id), eq(d.replay_job, job.id), eq(d.status, 'pending'), or(isNull(d.last_attempt_at), lt(d.last_attempt_at, job.batch_started_at!))))
    .limit(1)
  return row !== undefined
}

async function finish(ctx: SqlContext, db: Db, job: ReplayJobRecord, status: 'completed' | 'cancelled', now: Date): Promise<ReplayJobRecord> {
  const { replay_jobs: r } = ctx.tables
  const [row] = await db
    .update(r)
    .set({ status, finished_at: now, updated_at: now, lease_owner: null, lease_until: null })
    .where(jobKey(ctx, job))
    .returning()
  return row as ReplayJobRecord
}

/**
 * Count the batch handed out, once every delivery of it was attempted since (or left the queue: its destination
 * was deleted; see batchWaiting), and move the cursor past it.
 */
async function countBatch(ctx: SqlContext, db: Db, job: ReplayJobRecord, now: Date): Promise<ReplayJobRecord> {
  const { deliveries: d, replay_jobs: r } = ctx.tables
  const rows = await db.select({ status: d.status }).from(d).where(and(sameTenant(ctx, d.tenant_id, job.tenant_id), eq(d.replay_job, job.id)))
  const failed = rows.filter((x) => x.status !== 'success').length
  await db.update(d).set({ replay_job: null }).where(deliveriesInIdOrder(ctx, db, eq(d.replay_job, job.id), job.tenant_id))
  const [row] = await db
    .update(r)
    .set({
      done: job.done + rows.length,
      failed: job.failed + failed,
      cursor_time: job.batch_time,
      cursor_event: job.batch_event,
      batch_time: null,
      batch_event: null,
      batch_started_at: null,
      updated_at: now,
    })
    .where(jobKey(ctx, job))
    .returning()
  return row as ReplayJobRecord
}

/** More than `yieldAbove` deliveries not of a replay are due: live traffic goes first. */
async function freshDeliveriesWaiting(ctx: SqlContext, db: Db, q: ReplayStepRequest): Promise<boolean> {
  const { deliveries: d } = ctx.tables
  // A bounded probe of the due index: it never counts more than yieldAbove + 1 rows.
  const due = db
    .select({ id: d.id })
    .from(d)
    .where(and(eq(d.status, 'pending'), lte(d.next_attempt_at, q.now), isNull(d.replay_job)))
    .limit(q.yieldAbove + 1)
    .as('due')
  const [row] = await db.select({ n: count() }).from(due)
  return Number(row?.n ?? 0) > q.yieldAbove
}

/** The next deliveries after the cursor, made due now under this job's mark; null when none is left. */
async function handOutBatch(ctx: SqlContext, db: Db, job: ReplayJobRecord, q: ReplayStepRequest): Promise<ReplayJobRecord | null> {
  const { deliveries: d, replay_jobs: r } = ctx.tables
  const after = job.cursor_time ? keysetCondition([d.event_time, d.event_id], [job.cursor_time.getTime(), job.cursor_event!], '>') : undefined
  // Partitioned layout: the batch in order from each day's index (a merge), never the whole rest of the range
  // read and sorted for each batch, which the planner prefers while the range is small (O(n²) for a replay).
  if (ctx.dialect === 'postgres') await db.execute(sql`select set_config('enable_sort', 'off', true), set_config('enable_bitmapscan', 'off', true)`)
  const batch = await db
    .select({ id: d.id, time: d.event_time, event: d.event_id })
    .from(d)
    .where(and(selection(ctx, job), after))
    .orderBy(asc(d.event_time), asc(d.event_id))
    .limit(q.batchSize)
  const last = batch.at(-1)
  if (!last) return null
  // Re-checked under the row locks: a delivery that became pending meanwhile (a manual retry) is left to it.
  // Only the status can have changed since the select (tenant, destination, time and topic never do), and the
  // re-check must not name the time range: SQLite would then update through the destination's time index,
  // reading every delivery in the range, rather than through the ids (20 ms per batch at 100,000 deliveries).
  await db
    .update(d)
    .set({ status: 'pending', manual: true, next_attempt_at: q.now, lease_owner: null, lease_until: null, replay_job: job.id })
    .where(deliveriesInIdOrder(ctx, db, and(inArray(d.id, batch.map((b) => b.id)), inArray(d.status, selectedStates(job)), listedDelivery(ctx)), job.tenant_id))
  await ctx.notifyWork?.(db)
  const [row] = await db
    .update(r)
    .set({ batch_time: last.time, batch_event: last.event, batch_started_at: q.now, lease_until: q.leaseUntil, updated_at: q.now })
    .where(jobKey(ctx, job))
    .returning()
  return row as ReplayJobRecord
}
