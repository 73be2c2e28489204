import { and, asc, eq, inArray, sql, type SQL, type Column } from 'drizzle-orm'
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core'
import type { KeysetPosition, KeysetRequest } from '../model/pagination.js'
import type { qualifiedPostgresTables } from './schema/postgres.js'
import type { SettledDay } from './listing-days.js'
import type { AttemptWrite, ClaimedDelivery, ClaimRequest, InsertEventResult, NewEventWithDeliveries, PruneBatch, PruneRequest } from './storage.js'

/**
 * Both drivers run the same drizzle queries. The builder API is identical across dialects, so the
 * shared code is typed against the Postgres schema and the SQLite driver passes its own tables,
 * which have the same names, columns and JS value types.
 */
export type Db = PgDatabase<PgQueryResultHKT, Record<string, never>>
export type Tables = ReturnType<typeof qualifiedPostgresTables>

export interface SqlContext {
  dialect: 'sqlite' | 'postgres'
  tables: Tables
  /** Run a read or single statement (SQLite: serialised with every other call on the one connection). */
  run<T>(fn: (db: Db) => Promise<T>): Promise<T>
  /** Tell other processes that deliveries became due (Postgres NOTIFY; a no-op elsewhere). */
  notifyWork?(db: Db): Promise<void>
  /** The per-delivery writes and the pruner's deletes, done the fastest way each driver has (see sqlite-hot-path.ts, postgres-hot-path.ts). */
  hotPath: HotPath
  /**
   * Run `fn` in one transaction. `durable: false` marks writes whose loss on power failure only means
   * a delivery is attempted again (attempt results, leases): SQLite then commits without an fsync.
   */
  transaction<T>(fn: (db: Db) => Promise<T>, options?: { durable?: boolean }): Promise<T>
  /**
   * On Citus (Postgres with the `citus` option): locks the deliveries matching `where` (of any tenants) shard group
   * by shard group, in `db`'s transaction, and returns the condition naming them (see deliveriesLocked).
   */
  deliveryLocks?(db: Db, where: SQL | undefined): Promise<SQL>
  /** On the partitioned layout: the days whose event times are final, which a listing may leave out (listing-days.ts). */
  settledDays?(): Promise<SettledDay[]>
}

/** A batch's change to a destination's failure streak: `failures` more, or `failures` after a success (`reset`). */
export interface StreakChange {
  tenant_id: string
  destination_id: string
  failures: number
  reset: boolean
}

/** The writes every delivery makes; run inside the caller's transaction (`db`). */
export interface HotPath {
  /** insertEvents is one statement, atomic without a transaction (saves BEGIN/COMMIT round trips). */
  singleStatementInsert?: boolean
  /** Insert events and their deliveries; an existing (tenant_id, id) is a duplicate naming its destinations. */
  insertEvents(db: Db, items: NewEventWithDeliveries[]): Promise<InsertEventResult[]> | InsertEventResult[]
  /**
   * Insert the attempt rows and move each delivery to its next state. Absent where the driver writes attempt
   * results with a statement of its own (Postgres: postgres-queue.ts) instead of the shared recordAttempts.
   */
  writeAttempts?(db: Db, writes: AttemptWrite[]): Promise<void> | void
  /** One batch of old events with their deliveries and attempts (see Storage.pruneEvents), in the caller's transaction. */
  pruneEvents(db: Db, request: PruneRequest): Promise<PruneBatch> | PruneBatch
  /**
   * A destination's failure streak after a batch of attempts: `failures` more, or set to `failures` after a
   * success (`reset`). The new value, or null when the destination is gone; 0 for a reset to 0, written only if
   * it was not 0 already. In the caller's transaction; else the query builder's.
   */
  updateStreak?(db: Db, streak: StreakChange): number | null
  /** The worker's claim (see Storage.claimDueDeliveries), in the caller's transaction; else the query builder's. */
  claimDueDeliveries?(db: Db, request: ClaimRequest): ClaimedDelivery[]
  /** See Storage.extendLeases; else the query builder's. */
  extendLeases?(db: Db, owner: string, ids: string[], leaseUntil: Date): number
  /** See Storage.releaseLeases; else the query builder's. */
  releaseLeases?(db: Db, owner: string, ids?: string[]): number
}

/**
 * `(a, b, …) > (x, y, …)`-style keyset condition. Values are encoded through their columns so a
 * Date becomes milliseconds in SQLite and a timestamptz in Postgres.
 */
export function keysetCondition(columns: Column[], position: KeysetPosition, op: '<' | '>'): SQL {
  const values = position.map((v, i) => sql.param(i === 0 ? new Date(v as number) : v, columns[i]))
  return sql`(${sql.join(columns, sql`, `)}) ${sql.raw(op)} (${sql.join(values, sql`, `)})`
}

/**
 * Where-condition and order for one keyset page. Returns rows in query order; `reverse` says the
 * caller must reverse them to get display order (walking backwards with `prev`).
 */
export function keysetPlan(columns: Column[], req: KeysetRequest): { where?: SQL; orderBy: SQL[]; reverse: boolean } {
  const desc = req.dir === 'desc'
  if (req.before) {
    // Walk backwards: rows before the cursor in display order, fetched in the opposite order.
    const where = keysetCondition(columns, req.before, desc ? '>' : '<')
    return { where, orderBy: columns.map((c) => (desc ? sql`${c} asc` : sql`${c} desc`)), reverse: true }
  }
  const where = req.after ? keysetCondition(columns, req.after, desc ? '<' : '>') : undefined
  return { where, orderBy: columns.map((c) => (desc ? sql`${c} desc` : sql`${c} asc`)), reverse: false }
}

/**
 * The deliveries matching `where`, locked in id order (Postgres): every statement that writes many
 * deliveries takes their row locks in this one order, so two of them (a result write and a lease
 * renewal, a tenant delete) cannot deadlock. SQLite has one writer and needs no locks. With `tenantId`, both the lock
 * and the outer statement name it, so on Citus the whole write runs on the tenant's shard (docs/citus.md, problem 5).
 */
export function deliveriesInIdOrder(ctx: SqlContext, db: Db, where: SQL | undefined, tenantId?: string): SQL | undefined {
  const { deliveries } = ctx.tables
  if (ctx.dialect !== 'postgres') return where
  const ofTenant = tenantId === undefined ? undefined : eq(deliveries.tenant_id, tenantId)
  const locked = inArray(deliveries.id, db.select({ id: deliveries.id }).from(deliveries).where(and(ofTenant, where)).orderBy(deliveries.id).for('update'))
  return and(ofTenant, locked)
}

/**
 * `column = tenantId` on Postgres, where Citus finds a row only by its tenant (the `citus` option); nothing on
 * SQLite, whose planner could then read a tenant's index instead of the one the rest of the condition uses.
 */
export function sameTenant(ctx: SqlContext, column: Column, tenantId: string): SQL | undefined {
  return ctx.dialect === 'postgres' ? eq(column, tenantId) : undefined
}

/**
 * The oldest job (replay or erasure) matching `free`, locked for its lease: two instances never take the same job,
 * one skips the row the other is claiming (Postgres: `for update skip locked`; SQLite has one writer). On Citus,
 * which locks rows only in a statement on one shard, the oldest few are read without a lock, then locked one at a
 * time by tenant and id. In `db`'s transaction.
 */
export async function lockOldestJob(ctx: SqlContext, db: Db, table: Tables['replay_jobs'] | Tables['expunge_jobs'], free: SQL): Promise<{ id: string; tenant_id: string } | undefined> {
  const jobs = table as Tables['replay_jobs']
  const pick = (where: SQL | undefined, limit: number) =>
    db.select({ id: jobs.id, tenant_id: jobs.tenant_id }).from(jobs).where(where).orderBy(asc(jobs.created_at), asc(jobs.id)).limit(limit)
  if (ctx.dialect !== 'postgres') return (await pick(free, 1))[0]
  if (!ctx.deliveryLocks) return (await pick(free, 1).for('update', { skipLocked: true }))[0]
  for (const job of await pick(free, jobsTriedPerClaim)) {
    const [locked] = await pick(and(eq(jobs.tenant_id, job.tenant_id), eq(jobs.id, job.id), free), 1).for('update', { skipLocked: true })
    if (locked) return locked
  }
  return undefined
}

/**
 * The tenant of the job `id` as given, or on Citus (where its row is locked only by tenant and id) read without a
 * lock when not given; elsewhere undefined (the job is found by id).
 */
export async function jobTenant(ctx: SqlContext, db: Db, table: Tables['replay_jobs'] | Tables['expunge_jobs'], q: { id: string; tenant_id?: string }): Promise<string | undefined> {
  if (q.tenant_id !== undefined || !ctx.deliveryLocks) return q.tenant_id
  const jobs = table as Tables['replay_jobs']
  const [row] = await db.select({ tenant_id: jobs.tenant_id }).from(jobs).where(eq(jobs.id, q.id)).limit(1)
  return row?.tenant_id
}

/** On Citus: how many of the oldest free jobs one claim tries to lock (another instance may hold each). */
const jobsTriedPerClaim = 8

/**
 * deliveriesInIdOrder for a write that may name several tenants' deliveries. On Citus, which takes row locks only in
 * a statement on one shard, the rows are locked first, a statement per shard group, in `db`'s transaction (run the
 * write with runLocking); elsewhere, and for one tenant's, it is deliveriesInIdOrder.
 */
export async function deliveriesLocked(ctx: SqlContext, db: Db, where: SQL | undefined, tenantId?: string): Promise<SQL | undefined> {
  return ctx.deliveryLocks && tenantId === undefined ? ctx.deliveryLocks(db, where) : deliveriesInIdOrder(ctx, db, where, tenantId)
}

/** Runs a write that uses deliveriesLocked: in a transaction where its locks need one (Citus), else as one statement. */
export function runLocking<T>(ctx: SqlContext, fn: (db: Db) => Promise<T>, options?: { durable?: boolean }): Promise<T> {
  return ctx.deliveryLocks ? ctx.transaction(fn, options) : ctx.run(fn)
}

/**
 * The pairs the event log shows: attempted at least once, or skipped (its destination was disabled). The
 * same condition as the deliveries' partial indexes (schema/*.ts), so listings read them.
 */
export function listedDelivery(ctx: SqlContext): SQL {
  const { deliveries: d } = ctx.tables
  return sql`(${d.attempt_count} > 0 or ${d.skipped_at} is not null)`
}
