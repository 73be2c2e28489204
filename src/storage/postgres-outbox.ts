import { is, sql, type SQL } from 'drizzle-orm'
import { PgDatabase, PgTransaction } from 'drizzle-orm/pg-core'
import { OutflowError } from '../errors.js'
import type { CommitWatch } from './postgres-commit-watch.js'
import { insertEventRows, type citusPublish, type EventInserts } from './postgres-hot-path.js'
import { mapStorageError } from './postgres-faults.js'
import { slot, type Driver } from './postgres-prepared.js'
import { targetsUnchanged, type PublishTargetCache } from './postgres-publish-targets.js'
import type { Tables } from './sql-context.js'
import type { InsertEventResult, NewEventWithDeliveries, PublishTarget } from './storage.js'

// Publishing through the host's own Postgres transaction (the outbox): Outflow's rows are written on the
// host's connection, inside its transaction, so they commit or roll back with the host's own rows.

/** The database and server a connection reaches: `current_database()` and when the server started (µs). */
export interface ServerIdentity {
  database: string
  started: string
}

export interface OutboxContext {
  /** The event insert with `outboxChecks` (on Outflow's tables, schema-qualified: the host's session may have another search_path). */
  inserts: EventInserts
  schema: string
  /** The engine's own identity (cached; `refresh` reads it again, e.g. after a server restart). */
  serverIdentity(refresh?: boolean): Promise<ServerIdentity>
  /** Publish targets kept between publishes (each use checked by the statement). */
  targets: PublishTargetCache
  /** Told the id of each host transaction that wrote deliveries: wakes the workers once it commits. */
  commits: CommitWatch
  /** On Citus: the publish's row locks, taken on the host's connection before the insert (`inserts` is then its insert). */
  onShards?: ReturnType<typeof citusPublish>
}

/** The part of a postgres.js connection handle Outflow uses: simple queries and prepared statements, rows as arrays. */
interface HostSql extends Driver {
  unsafe(query: string, parameters?: unknown[], options?: { prepare: boolean }): { values(): Promise<unknown[][]>; execute(): unknown }
}

/** When the server started, in microseconds, as text: with current_database(), what tells one database from another. */
export const serverStartedSql = '((extract(epoch from pg_postmaster_start_time()) * 1000000)::bigint)::text'
const started = sql.raw(serverStartedSql)

/**
 * What the event insert checks in a host's transaction. `host`: it runs right after `markTransaction` in the same
 * transaction block, on the engine's database and server (placeholders `database`, `started`). `stale`: the
 * targets it was planned from are those the transaction sees (placeholders `version_tenant`, `version`).
 */
export const outboxChecks = (t: Tables, byShard = false): Record<Refusal, SQL> => ({
  host: sql`coalesce(current_setting('outflow.publishing', true), '') = 'on'
    and current_database() = ${slot('database')}::text and ${started} = ${slot('started')}::text`,
  stale: targetsUnchanged(t, byShard),
})

type Refusal = 'host' | 'stale'

/**
 * Marks the transaction the statement after it runs in. A transaction-local setting (set_config's `true`): inside
 * the host's transaction block it lasts until the block ends; outside one, this simple query is a transaction of
 * its own and the setting is gone when the next statement runs.
 */
const markTransaction = "select set_config('outflow.publishing', 'on', true)"

/**
 * Plan events from their tenants' publish targets (`plan`) and insert them with their deliveries through the host's
 * transaction `tx`, in one statement. The statement writes nothing unless it runs inside an open transaction block
 * on the engine's own database and server: a handle whose transaction has ended would otherwise run it on its own
 * (committed at once), and one on another database would write where no worker looks.
 *
 * The targets come from `ctx.targets` when kept there; the statement checks they are still those the host's
 * transaction sees, and if not (or if planning from them found no such tenant or destination) the publish is
 * planned again from targets read now, which the statement then takes as they are (as a publish outside a
 * transaction does). A host transaction in READ COMMITTED sees everything committed before the statement began,
 * so no destination created, changed or enabled before the publish started is missed, whichever engine made it.
 *
 * It is a prepared statement on the host's connection (parsed once per connection), sent right behind
 * `markTransaction` in one round trip. It carries no NOTIFY (see postgres-commit-watch.ts): `ctx.commits`
 * announces the deliveries once the host's transaction has committed.
 */
export async function insertEventsInTransaction(
  ctx: OutboxContext,
  tx: unknown,
  tenantIds: string[],
  plan: (targets: Map<string, PublishTarget[]>) => NewEventWithDeliveries[],
): Promise<{ planned: NewEventWithDeliveries[]; results: InsertEventResult[] }> {
  const host = hostSql(tx)
  let fresh = false
  let refreshed = false
  for (;;) {
    const known = fresh ? await ctx.targets.read(tenantIds) : await ctx.targets.get(tenantIds)
    let items: NewEventWithDeliveries[]
    try {
      items = plan(new Map([...known].map(([id, kept]) => [id, kept.targets])))
    } catch (err) {
      // A tenant or destination_id that kept targets lack may have been created since they were read.
      if (!fresh && err instanceof OutflowError && err.code === 'not_found') {
        fresh = true
        continue
      }
      throw err
    }
    const identity = await ctx.serverIdentity(refreshed)
    // Freshly read targets are taken as they are: no versions to check.
    const checked = fresh ? [] : [...known]
    const values = {
      database: identity.database,
      started: identity.started,
      version_tenant: checked.map(([id]) => id),
      version: checked.map(([, kept]) => kept.version),
    }
    let seen: unknown[] | undefined
    try {
      const written = await writeMarked(ctx, host, items, values)
      if ('results' in written) {
        if (written.xact !== undefined) ctx.commits.watch(written.xact)
        return { planned: items, results: written.results }
      }
      if (!written.refused.includes('host')) {
        fresh = true
        continue
      }
      // Refused: why. A simple query: under the extended protocol an implicit transaction starts at Parse or Bind
      // and the statement at Execute, so statement_timestamp() could pass transaction_timestamp() outside a block too.
      seen = (await host.unsafe(`select (statement_timestamp() > transaction_timestamp())::text, current_database(), ${serverStartedSql}`).values())[0]
    } catch (err) {
      throw hostError(err, ctx.schema)
    }
    if (seen?.[0] !== 'true') throw transactionEnded()
    // The server restarted since the identity was read: read it again, once.
    if (refreshed)
      throw otherDatabase(`the transaction is on database "${String(seen[1])}" of ${seen[2] === identity.started ? 'the same' : 'another'} server, Outflow's storage on "${identity.database}"`)
    refreshed = true
  }
}

/**
 * `markTransaction` and the insert on the host's connection. Both on the connection's queue before either is sent:
 * pipelined, and nothing of the host's between them (on Citus, the row locks come between them).
 */
async function writeMarked(ctx: OutboxContext, host: HostSql, items: NewEventWithDeliveries[], values: Record<string, unknown>) {
  const marked = Promise.resolve(host.unsafe(markTransaction).execute())
  const held = ctx.onShards && (await ctx.onShards.hold(host, items).catch(async (err: unknown) => {
    await marked.catch(() => undefined)
    throw err
  }))
  const inserted = insertEventRows(host, ctx.inserts, items, { ...values, ...held?.values }, held?.orderNumbers)
  // In an aborted transaction both fail: the statement's error is the one to report.
  await Promise.all([marked, inserted]).catch(() => undefined)
  return inserted
}

/**
 * The postgres.js handle of a host's transaction: `tx` of `sql.begin((tx) => …)`, a connection from
 * `sql.reserve()` on which the host ran BEGIN, or the driver's transaction under a drizzle transaction.
 */
function hostSql(tx: unknown): HostSql {
  if (is(tx, PgDatabase) && !is(tx, PgTransaction)) throw notTransaction('a drizzle database, not a transaction: pass the `tx` of db.transaction(async (tx) => …)')
  // drizzle keeps the driver's transaction in its session (drizzle-orm/postgres-js); other drivers have none.
  const handle = is(tx, PgTransaction) ? (tx as unknown as { session?: { client?: unknown } }).session?.client : tx
  if (typeof handle !== 'function' || typeof (handle as { unsafe?: unknown }).unsafe !== 'function')
    throw notTransaction(is(tx, PgTransaction) ? 'a drizzle transaction over another driver than postgres.js' : 'not a postgres.js transaction')
  // The pool itself runs each statement on any connection, outside every transaction.
  if (typeof (handle as { begin?: unknown }).begin === 'function') throw notTransaction('the postgres.js pool, not a transaction: pass the `tx` of sql.begin(async (tx) => …)')
  return handle as unknown as HostSql
}

const sqlState = (err: unknown): string | undefined => {
  let error = err
  // drizzle's DrizzleQueryError carries the driver's error as its cause.
  for (let depth = 0; depth < 5 && error instanceof Error && !('code' in error) && error.cause !== undefined; depth++) error = error.cause
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** A failure of the statement on the host's connection, named for the host. */
function hostError(err: unknown, schema: string): unknown {
  const code = sqlState(err)
  // undefined_table, invalid_schema_name: Outflow's tables are not in the transaction's database.
  if (code === '42P01' || code === '3F000')
    return otherDatabase(`its database has no Outflow tables in schema "${schema}" (the failed statement aborted the transaction)`, err)
  if (code === '25P02')
    return new OutflowError('conflict', 'the transaction is aborted (a statement in it failed before the publish): roll it back', { data: { tx: 'aborted' }, cause: err })
  return mapStorageError(err)
}

function notTransaction(what: string): OutflowError {
  return new OutflowError('validation', `publish { tx }: ${what}`, { data: { tx: what } })
}

function transactionEnded(): OutflowError {
  return new OutflowError('conflict', 'publish { tx }: the transaction has already ended; publish inside it (await the publish before the transaction callback returns)', {
    data: { tx: 'already ended' },
  })
}

function otherDatabase(detail: string, cause?: unknown): OutflowError {
  return new OutflowError('validation', `publish { tx }: the transaction is not on Outflow's database: ${detail}`, { data: { tx: 'on another database' }, cause })
}
