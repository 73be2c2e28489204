import { is, sql, type SQL } from 'drizzle-orm'
import { PgDatabase, PgDialect, PgTransaction } from 'drizzle-orm/pg-core'
import { OutflowError } from '../errors.js'
import { insertEventRows, type RowsOf } from './postgres-hot-path.js'
import { mapStorageError } from './postgres-faults.js'
import { prepared, slot, type Driver } from './postgres-prepared.js'
import type { Tables } from './sql-context.js'
import type { InsertEventResult, NewEventWithDeliveries } from './storage.js'

// Publishing through the host's own Postgres transaction (the outbox): Outflow's rows are written on the
// host's connection, inside its transaction, so they commit or roll back with the host's own rows.

/** The database and server a connection reaches: `current_database()` and when the server started (µs). */
export interface ServerIdentity {
  database: string
  started: string
}

export interface OutboxContext {
  /** Outflow's tables, schema-qualified: the host's session may have another search_path. */
  tables: Tables
  schema: string
  /** The engine's own identity (cached; `refresh` reads it again, e.g. after a server restart). */
  serverIdentity(refresh?: boolean): Promise<ServerIdentity>
  /** Told the id of each host transaction that wrote deliveries: wakes the workers once it commits. */
  commits: CommitWatch
}

/** The part of a postgres.js connection handle Outflow uses: simple queries and prepared statements, rows as arrays. */
interface HostSql {
  unsafe(query: string, parameters?: unknown[], options?: { prepare: boolean }): { values(): Promise<unknown[][]>; execute(): unknown }
}

/** When the server started, in microseconds, as text: with current_database(), what tells one database from another. */
export const serverStartedSql = '((extract(epoch from pg_postmaster_start_time()) * 1000000)::bigint)::text'
const started = sql.raw(serverStartedSql)

/**
 * Marks the transaction the statement after it runs in. A transaction-local setting (set_config's `true`): inside
 * the host's transaction block it lasts until the block ends; outside one, this simple query is a transaction of
 * its own and the setting is gone when the next statement runs.
 */
const markTransaction = "select set_config('outflow.publishing', 'on', true)"

/**
 * Insert events with their deliveries through the host's transaction `tx`, in one statement. The statement
 * writes nothing unless it runs inside an open transaction block on the engine's own database and server:
 * a handle whose transaction has ended would otherwise run it on its own (committed at once), and one on
 * another database would write where no worker looks.
 *
 * It is a prepared statement on the host's connection (parsed once per connection), sent right behind
 * `markTransaction` in one round trip; its guard requires the mark. There is no NOTIFY in it: Postgres commits
 * notifying transactions one at a time (a database-wide lock from the NOTIFY through the commit's WAL flush),
 * which made concurrent host transactions that publish wait for each other. `ctx.commits` announces the
 * deliveries once the host's transaction has committed.
 */
export async function insertEventsInTransaction(ctx: OutboxContext, tx: unknown, items: NewEventWithDeliveries[]): Promise<InsertEventResult[]> {
  const host = hostSql(tx)
  const rowsOf: RowsOf = (query) => {
    const { sql: text, params } = dialect.sqlToQuery(query)
    return host.unsafe(text, params, { prepare: true }).values()
  }
  for (let refreshed = false; ; refreshed = true) {
    const identity = await ctx.serverIdentity(refreshed)
    const guard = sql`coalesce(current_setting('outflow.publishing', true), '') = 'on' and current_database() = ${identity.database} and ${started} = ${identity.started}`
    let seen: unknown[] | undefined
    try {
      // Both on the connection's queue before either is sent: pipelined, and nothing of the host's between them.
      const marked = Promise.resolve(host.unsafe(markTransaction).execute())
      const inserted = insertEventRows(rowsOf, ctx.tables, items, { guard, xact: true })
      // In an aborted transaction both fail: the statement's error is the one to report.
      await Promise.all([marked, inserted]).catch(() => undefined)
      const written = await inserted
      if (written) {
        if (written.xact !== undefined) ctx.commits.watch(written.xact)
        return written.results
      }
      // Refused: why. A simple query: under the extended protocol an implicit transaction starts at Parse or Bind
      // and the statement at Execute, so statement_timestamp() could pass transaction_timestamp() outside a block too.
      seen = (await host.unsafe(`select (statement_timestamp() > transaction_timestamp())::text, current_database(), ${serverStartedSql}`).values())[0]
    } catch (err) {
      throw hostError(err, ctx.schema)
    }
    if (seen?.[0] !== 'true') throw transactionEnded()
    // The server restarted since the identity was read: read it again, once.
    if (!refreshed) continue
    throw otherDatabase(`the transaction is on database "${String(seen[1])}" of ${seen[2] === identity.started ? 'the same' : 'another'} server, Outflow's storage on "${identity.database}"`)
  }
}

/**
 * Wakes the workers once host transactions that wrote deliveries commit: `check` asks Postgres for the status of
 * the watched transactions (`pg_xact_status`) and sends a NOTIFY on the work channel, from the engine's own pool,
 * when one has committed. A rolled-back one is dropped without a wake-up. The first look comes `firstLookMs` after
 * the publish, then ever less often (doubling up to a second) for as long as the transaction stays open, up to
 * `giveUpMs`; one look at a time covers every watched transaction. Past that, or if a look fails, the workers'
 * poll finds the deliveries.
 */
export class CommitWatch {
  readonly #check: (xacts: string[]) => Promise<Map<string, string | null>>
  readonly #watched = new Map<string, { since: number; due: number; step: number }>()
  #timer?: NodeJS.Timeout
  #looking = false
  #closed = false

  /** `check` answers each transaction's status (`committed`, `aborted`, `in progress`; null if unknown) and notifies for committed ones. */
  constructor(check: (xacts: string[]) => Promise<Map<string, string | null>>) {
    this.#check = check
  }

  watch(xact: string): void {
    if (this.#closed || this.#watched.has(xact)) return
    const now = Date.now()
    this.#watched.set(xact, { since: now, due: now + firstLookMs, step: firstLookMs })
    this.#schedule()
  }

  #schedule(): void {
    if (this.#looking || this.#timer || this.#watched.size === 0 || this.#closed) return
    let due = Infinity
    for (const w of this.#watched.values()) due = Math.min(due, w.due)
    this.#timer = setTimeout(() => void this.#look(), Math.max(0, due - Date.now()))
    this.#timer.unref()
  }

  async #look(): Promise<void> {
    this.#timer = undefined
    this.#looking = true
    const xacts = [...this.#watched.keys()]
    let statuses: Map<string, string | null> | undefined
    try {
      statuses = await this.#check(xacts)
    } catch {
      // Storage unavailable: look again later (each transaction's next look backs off as usual).
    }
    const now = Date.now()
    for (const xact of xacts) {
      const w = this.#watched.get(xact)!
      const status = statuses?.get(xact)
      if (statuses && status !== 'in progress') this.#watched.delete(xact)
      else if (now - w.since >= giveUpMs) this.#watched.delete(xact)
      else {
        w.step = Math.min(w.step * 2, maxStepMs)
        w.due = now + w.step
      }
    }
    this.#looking = false
    this.#schedule()
  }

  /** Stop looking (storage closed). */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#watched.clear()
  }
}

const lookAtCommits = prepared<'xacts' | 'channel'>(sql`
  with s as (select x, pg_xact_status(x::xid8)::text as status from unnest(${slot('xacts')}::text[]) x),
  wake as (select pg_notify(${slot('channel')}::text, '') from (select 1) one where exists (select 1 from s where status = 'committed'))
  select x, status from s
  union all select null, null from wake`)

/**
 * CommitWatch's look: the status of each transaction, and one NOTIFY on `channel` (from `driver`, the engine's pool)
 * if any has committed.
 */
export function commitStatuses(driver: Driver, channel: string): (xacts: string[]) => Promise<Map<string, string | null>> {
  return async (xacts) => {
    const rows = await lookAtCommits(driver, { xacts, channel })
    return new Map(rows.filter(([x]) => x !== null).map(([x, status]) => [x as string, status as string | null]))
  }
}

/** How soon after a publish the first look is: a host typically commits right after it. */
const firstLookMs = 2
/** The longest pause between two looks at a transaction still open. */
const maxStepMs = 1_000
/** How long an open host transaction is watched; after that the poll finds its deliveries. */
const giveUpMs = 10 * 60_000

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

const dialect = new PgDialect()

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
