import { fillPlaceholders, sql, type SQL } from 'drizzle-orm'
import { PgDialect } from 'drizzle-orm/pg-core'

// Statements of the per-delivery path sent the cheapest way postgres.js has: named prepared statements.
//
// drizzle runs its statements unnamed. postgres.js then sends an unnamed statement with parameters in two
// round trips (Parse/Describe to learn the parameter types, then Bind/Execute) and cannot pipeline it
// behind another; the server parses and plans it every time. A named statement is described once per
// connection; after that each run is one Bind/Execute, pipelined with the connection's other queries.

/** A postgres.js handle (the pool, a transaction's `sql`, a reserved connection): what a statement runs on. */
export interface Driver {
  unsafe(query: string, parameters: unknown[], options: { prepare: boolean }): { values(): Promise<unknown[][]> }
}

/** The postgres.js handle under a drizzle database or transaction (drizzle-orm/postgres-js keeps it in its session). */
export function driverOf(db: unknown): Driver {
  return (db as { session: { client: Driver } }).session.client
}

const dialect = new PgDialect()

/** A placeholder for a value given at each run (see `prepared`). */
export const slot = (name: string) => sql.placeholder(name)

/** A text-array placeholder expanded to a column of `type` (with `unnest`): one parameter whatever the batch size. */
export const column = (name: string, type: string) => sql`${sql.placeholder(name)}::text[]::${sql.raw(type)}[]`

/**
 * Makes the transaction this statement runs in commit without waiting for the WAL flush (leases, attempt
 * results: losing them on a crash means an attempt is made again). A condition with no column in it, so
 * the planner evaluates it once, before the statement's first row; `set_config(…, true)` lasts until the
 * end of the statement's own (implicit) transaction, whose commit reads it.
 */
export const asyncCommit = sql`(select set_config('synchronous_commit', 'off', true)) = 'off'`

/**
 * A statement written with drizzle's `sql` (tables by reference) and `slot`/`column` placeholders, compiled
 * to text once. Each run binds the placeholders and runs it as a named prepared statement; rows come back as
 * arrays in select-list order. Values are strings, numbers, booleans, null or arrays of strings or nulls
 * (timestamps as ISO text: drizzle turned the driver's timestamp serializer off).
 *
 * @example
 * const due = prepared<'now'>(sql`select id from ${t.deliveries} where next_attempt_at <= ${slot('now')}::timestamptz`)
 * const rows = await due(driver, { now: new Date().toISOString() })
 */
export function prepared<Name extends string>(query: SQL): Prepared<Name> {
  const { sql: text, params } = dialect.sqlToQuery(query)
  const run = (driver: Driver, values: Record<Name, unknown>) => driver.unsafe(text, fillPlaceholders(params, values), { prepare: true }).values()
  return Object.assign(run, { text, arity: params.length, bind: (values: Record<Name, unknown>) => fillPlaceholders(params, values) })
}

/** A compiled statement (see `prepared`): run it, or take its text and its values in parameter order ($1 … $n). */
export interface Prepared<Name extends string> {
  (driver: Driver, values: Record<Name, unknown>): Promise<unknown[][]>
  text: string
  /** How many parameters the text has. */
  arity: number
  bind(values: Record<Name, unknown>): unknown[]
}

/** Timestamps as ISO text, the form every prepared statement takes them in. */
export const iso = (d: Date | null | undefined) => (d ? d.toISOString() : null)

/**
 * The condition that keeps a table's rows to the statement's tenants (the `tenants` text-array placeholder) when
 * `on`: on Citus, a statement that locks rows runs only if every table in it is read on one shard.
 */
export const onShardOf =
  (on: boolean) =>
  (alias: string, key = 'tenant_id'): SQL =>
    on ? sql` and ${sql.raw(`${alias}.${key}`)} = any(${slot('tenants')}::text[])` : sql``
