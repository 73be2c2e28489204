import { is, sql, type SQL } from 'drizzle-orm'
import { PgDatabase, PgDialect, PgTransaction } from 'drizzle-orm/pg-core'
import { OutflowError } from '../errors.js'
import { insertEventRows, type RowsOf } from './postgres-hot-path.js'
import { mapStorageError } from './postgres-faults.js'
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
  /** The NOTIFY channel workers listen on. */
  channel: string
  /** The engine's own identity (cached; `refresh` reads it again, e.g. after a server restart). */
  serverIdentity(refresh?: boolean): Promise<ServerIdentity>
}

/** The part of a postgres.js connection handle Outflow uses: text queries, rows as arrays. */
interface HostSql {
  unsafe(query: string): { values(): Promise<unknown[][]> }
}

/** When the server started, in microseconds, as text: with current_database(), what tells one database from another. */
export const serverStartedSql = '((extract(epoch from pg_postmaster_start_time()) * 1000000)::bigint)::text'
const started = sql.raw(serverStartedSql)

/**
 * Insert events with their deliveries through the host's transaction `tx`, in one statement. The statement
 * writes nothing unless it runs inside an open transaction block on the engine's own database and server:
 * a handle whose transaction has ended would otherwise run it on its own (committed at once), and one on
 * another database would write where no worker looks.
 */
export async function insertEventsInTransaction(ctx: OutboxContext, tx: unknown, items: NewEventWithDeliveries[]): Promise<InsertEventResult[]> {
  const host = hostSql(tx)
  const rowsOf: RowsOf = (query) => host.unsafe(inlineQuery(query)).values()
  for (let refreshed = false; ; refreshed = true) {
    const identity = await ctx.serverIdentity(refreshed)
    // statement_timestamp() is later than transaction_timestamp() only after an earlier statement of the same
    // transaction (BEGIN at least). Sent as a simple query (no parameters): under the extended protocol an
    // implicit transaction starts at Parse and the statement at Execute, so the two could differ outside a block.
    const guard = sql`statement_timestamp() > transaction_timestamp() and current_database() = ${identity.database} and ${started} = ${identity.started}`
    let seen: unknown[] | undefined
    try {
      const results = await insertEventRows(rowsOf, ctx.tables, items, { guard, notify: ctx.channel })
      if (results) return results
      // Refused: why (a simple query too, for the same reason as the guard).
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

/**
 * The query as one text with its parameters written in as literals, so postgres.js sends it as a simple
 * query. Strings become E'' literals with backslashes and quotes doubled: literal text whatever
 * `standard_conforming_strings` says. Parameters are strings, numbers, booleans, null and text arrays.
 */
export function inlineQuery(query: SQL): string {
  const { sql: text, params } = dialect.sqlToQuery(query)
  return text.replace(/\$(\d+)/g, (_, n: string) => literal(params[Number(n) - 1]))
}

function literal(value: unknown): string {
  if (value === null || value === undefined) return 'NULL'
  if (typeof value === 'number' && Number.isFinite(value)) return String(value)
  if (typeof value === 'boolean') return String(value)
  if (typeof value === 'string') return quote(value)
  if (Array.isArray(value)) return quote(`{${value.map(arrayElement).join(',')}}`)
  throw new TypeError(`outflow: cannot write a ${typeof value} parameter into a query`)
}

function quote(text: string): string {
  // Postgres text cannot hold NUL; the protocol would end the query at it.
  if (text.includes('\u0000')) throw new OutflowError('validation', 'validation error', { data: { '(body)': 'text must not contain the NUL character' } })
  return `E'${text.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`
}

const arrayElement = (value: unknown) => (value === null || value === undefined ? 'NULL' : `"${String(value).replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`)

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
