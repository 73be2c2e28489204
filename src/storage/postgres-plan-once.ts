import { createHash } from 'node:crypto'
import type PostgresJs from 'postgres'
import type { Logger } from '../logger.js'
import type { Driver, Prepared } from './postgres-prepared.js'

// The statements every publish and every batch of results runs, planned once per connection.
//
// The engine's connections plan each run of a statement for its values (plan_cache_mode = force_custom_plan, see
// postgres-pooler.ts), so that no statement keeps a plan costed on the empty tables of a new install. For the few
// statements that run for every delivery that planning was most of the server's work: at 500 events/s, 1.4 ms of
// planning for each results write and 0.5 ms for each publish, against 1.3 and 0.3 ms of execution. Each of them
// also lives in a PL/pgSQL function (made by migrate()) that runs it with a generic plan, made once per connection,
// with sequential scans, bitmap scans and merge joins off: a table is read by its indexes whatever a generic plan's
// default estimates say (hash joins stay: the batch's own rows are joined with each other, and a nested loop of
// two of them grows with the square of the batch). On the partitioned layout only the publish and its destinations
// read go through theirs: a generic plan there covers every day's partition, which the publish's insert routes past
// and its duplicate check prunes at its start, while the results write's reads by id did not (3.2–3.5 ms a write
// through its function at 38 days of partitions, against 2.5–3.2 ms planned each run).

/** The planner settings each function runs with (in the function's definition, so only its own statement has them). */
const settings = ['plan_cache_mode = force_generic_plan', 'enable_seqscan = off', 'enable_bitmapscan = off', 'enable_mergejoin = off']

/** Undefined function: the function was dropped while the engine ran. */
const undefinedFunction = '42883'

/** A statement that runs by itself or through its function (see `planOnce`). */
export interface PlanOnce<Name extends string> {
  /** The function's name: the statement's label and a hash of its text and settings, so each version has its own. */
  name: string
  /** The statement's text, the function's body. */
  text: string
  /** Run it, through its function when `viaFunction`; if that function is gone, by itself (and `onMissing`). */
  run(driver: Driver, values: Record<Name, unknown>, viaFunction: boolean, onMissing?: () => void): Promise<unknown[][]>
}

/** `statement` with the function that plans it once per connection, in `schema` (made by createPlanOnceFunctions). */
export function planOnce<Name extends string>(schema: string, label: string, statement: Prepared<Name>): PlanOnce<Name> {
  const hash = createHash('sha256').update(`${statement.text}\n${settings.join('\n')}`).digest('hex').slice(0, 12)
  const name = `outflow_${label}_${hash}`
  const call = `select * from "${schema}"."${name}"(${Array.from({ length: statement.arity }, (_, i) => `$${i + 1}`).join(', ')})`
  return {
    name,
    text: statement.text,
    async run(driver, values, viaFunction, onMissing) {
      if (!viaFunction) return statement(driver, values)
      try {
        return await driver.unsafe(call, statement.bind(values), { prepare: true }).values()
      } catch (err) {
        if ((err as { code?: string }).code !== undefinedFunction) throw err
        onMissing?.()
        return statement(driver, values)
      }
    },
  }
}

/**
 * Make each statement's function in `schema` unless it is there: its arguments and result columns are the types the
 * server describes for the statement's parameters and select list. Run by migrate() under the migration lock.
 * Functions of earlier versions stay (an engine of that version may still run); they are small and unused.
 */
export async function createPlanOnceFunctions(client: PostgresJs.Sql, schema: string, statements: PlanOnce<string>[]): Promise<void> {
  const present = await planOnceFunctions(client, schema, statements.map((s) => s.name))
  for (const statement of statements) {
    if (present.has(statement.name)) continue
    const described = await client.unsafe(statement.text).describe()
    const types = await typeNames(client, [...described.types, ...described.columns.map((c) => c.type)])
    const args = types.slice(0, described.types.length)
    const columns = types.slice(described.types.length).map((type, i) => `outflow_${i + 1} ${type}`)
    await client.unsafe(`
      create or replace function "${schema}"."${statement.name}"(${args.join(', ')})
      returns table (${columns.join(', ')})
      language plpgsql ${settings.map((s) => `set ${s}`).join(' ')}
      as $outflow$ begin return query ${statement.text}; end $outflow$`)
  }
}

/** Which of the functions `names` are in `schema`. */
export async function planOnceFunctions(client: PostgresJs.Sql, schema: string, names: string[]): Promise<Set<string>> {
  const rows = await client<{ name: string }[]>`
    select p.proname as name from pg_proc p join pg_namespace n on n.oid = p.pronamespace
    where n.nspname = ${schema} and p.proname = any(${names}::text[])`
  return new Set(rows.map((r) => r.name))
}

/** The SQL names of type oids, in order. */
async function typeNames(client: PostgresJs.Sql, oids: number[]): Promise<string[]> {
  const rows = await client<{ name: string }[]>`select format_type(o, null) as name from unnest(${oids}::oid[]) with ordinality as t(o, n) order by n`
  return rows.map((r) => r.name)
}

/** The tables' layout, as far as the functions go: Citus (`other`) runs none. */
export type PlanOnceLayout = 'plain' | 'partitioned' | 'other'

/**
 * Whether the engine runs its statements through their functions: read once (and again after migrate()), on the
 * plain layout, on the partitioned one for the statements that go through theirs there (see the file's header), and
 * never when one of the functions is missing (an install migrated by an earlier release; a function dropped while
 * the engine ran, see `missing`). While they are used, the young tables they read get statistics (`analyzeGrown`).
 */
export function planOnceUse(
  client: PostgresJs.Sql,
  schema: string,
  names: string[],
  layout: () => Promise<PlanOnceLayout>,
  bound: <T>(work: () => Promise<T>) => Promise<T>,
  logger?: Logger,
) {
  let present: Promise<boolean> | undefined
  const read = (): Promise<boolean> => {
    if (!present) {
      const reading = bound(() => planOnceFunctions(client, schema, names)).then((found) => found.size === names.length)
      present = reading
      reading.catch(() => {
        if (present === reading) present = undefined
      })
    }
    return present
  }
  let timer: NodeJS.Timeout | undefined
  const watch = () => {
    if (timer) return
    timer = setInterval(() => void bound(() => analyzeGrown(client, schema)).catch(() => {}), growthCheckMs)
    timer.unref()
  }
  return {
    /** Whether to run a statement through its function now; `partitionedToo`: also on the partitioned layout. */
    async viaFunctions(partitionedToo = false): Promise<boolean> {
      const now = await layout()
      const via = (now === 'plain' || (now === 'partitioned' && partitionedToo)) && (await read())
      if (via) watch()
      return via
    },
    /** After migrate(): look again. */
    async migrated(): Promise<void> {
      present = undefined
      await read()
    },
    /** A function was not found: the statements run by themselves until the next migrate(). */
    missing(): void {
      if (!present) return
      present = Promise.resolve(false)
      logger?.warn({ schema }, 'postgres: a plan-once function of the hot statements is missing: they run by themselves (each run planned) until the next migrate()')
    },
    close(): void {
      clearInterval(timer)
    },
  }
}

export type PlanOnceUse = ReturnType<typeof planOnceUse>

/** How often the engine looks for a table without statistics, or grown tenfold since they were taken. */
const growthCheckMs = 5_000

/** The tables the hot statements read, and the size from which their statistics matter. */
const watchedTables = ['deliveries', 'attempts', 'events', 'destinations', 'tenants']
const minimumRows = 500
const growth = 10

/**
 * ANALYZE each watched table of at least 500 rows that was never analyzed, or has grown tenfold since its statistics
 * were taken.
 *
 * A function's plan lasts until a table it reads gets new statistics. Planned on a young table without any, it may
 * pick an index that only a small table suits: without statistics a tenant is taken to hold 1/200 of the rows, and an
 * attempts check went by tenant, then by id (every attempt of the tenant read for each attempt written: a results
 * write of 286 took 588 ms). Autovacuum analyzes a table once 10 % of it changed, but looks once a minute by default,
 * and a new install fills its tables faster than that; after the first statistics it is there first. Each ANALYZE
 * has every connection plan the functions again, so not more often. SKIP_LOCKED: an ANALYZE another instance runs is
 * enough. A role that does not own the tables gets a warning from the server instead (not shown), and its plans wait
 * for autovacuum.
 */
export async function analyzeGrown(client: PostgresJs.Sql, schema: string): Promise<string[]> {
  const rows = await client<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    join pg_stat_user_tables s on s.relid = c.oid
    where n.nspname = ${schema} and c.relname = any(${watchedTables}::text[]) and c.relkind = 'r'
      and s.n_live_tup >= ${minimumRows}
      and (coalesce(s.last_analyze, s.last_autoanalyze) is null or s.n_live_tup >= ${growth} * greatest(c.reltuples, 1))`
  for (const { name } of rows) await client.unsafe(`analyze (skip_locked) "${schema}"."${name}"`)
  return rows.map((r) => r.name)
}
