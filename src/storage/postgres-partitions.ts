import type PostgresJs from 'postgres'
import type { DroppedDay } from './storage.js'

// The partitioned layout of the event log on Postgres: events, deliveries and attempts are range-partitioned by
// the event's created_at (deliveries and attempts carry it as event_created_at), one partition per UTC day and
// a DEFAULT partition that takes any row no day partition covers, so an insert never fails. A day's three
// partitions hold whole events with all their deliveries and attempts (an attempt made days later still goes
// to its event's day), so retention drops them together: no DELETE, no dead tuples, almost no WAL.
// Hosts that migrate Outflow's tables with their own drizzle-kit keep the plain tables: the engine detects the
// layout (pg_partitioned_table) and runs on both.

const day = 86_400_000
/** Days made ahead of today, at migrate() and at every pruning pass. */
export const daysAhead = 7

/** The partitioned tables, their partition key, and the unique key each partition keeps (Citus rule: with tenant_id). */
export const partitionedTables = [
  { name: 'events', key: 'created_at', unique: 'tenant_id, id', primary: null },
  { name: 'deliveries', key: 'event_created_at', unique: 'tenant_id, event_id, destination_id', primary: 'id, tenant_id, event_created_at' },
  { name: 'attempts', key: 'event_created_at', unique: null, primary: 'id, tenant_id, event_created_at' },
] as const


/** Whether a statement failed only because it gave way to traffic (55P03: a lock not had in time or NOWAIT; 40P01: a deadlock victim). */
export const givesWay = (err: unknown) => ['55P03', '40P01'].includes((err as { code?: string }).code ?? '')

/**
 * Run `work` (a transaction that takes table locks engines' statements conflict with, without waiting long for
 * them) until it has its locks: tried again 25 ms after each time it gave way (`givesWay`), at most `tries` times,
 * then its last error is thrown. `attempt` counts from 1.
 *
 * @example
 * await untilLocked(40, () => sql.begin(async (tx) => { await tx`set local lock_timeout = '100ms'`; … }))
 */
export async function untilLocked<T>(tries: number, work: (attempt: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await work(attempt)
    } catch (err) {
      if (!givesWay(err) || attempt >= tries) throw err
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  }
}

const dayName = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')
const dayStart = (ms: number) => Math.floor(ms / day) * day
const partitionOf = (schema: string, table: string, suffix: string) => `"${schema}"."${table}_${suffix}"`

/** Whether the schema's events table is partitioned (the layout postgres-partitions.ts makes). */
export async function historyPartitioned(sql: PostgresJs.Sql, schema: string): Promise<boolean> {
  const [row] = await sql<{ partitioned: boolean }[]>`
    select exists (select 1 from pg_partitioned_table where partrelid = to_regclass(${`"${schema}".events`})) as partitioned`
  return row?.partitioned ?? false
}

/**
 * Turn the plain tables `migrate()` made into the partitioned layout, if they hold no event yet (a new install;
 * an existing one keeps its layout until moved). Run inside the migration lock. Indexes other than unique ones
 * are recreated from the plain tables' definitions, so the layout follows the migrations.
 */
export async function partitionEmptyHistory(sql: PostgresJs.Sql, schema: string): Promise<boolean> {
  if (await historyPartitioned(sql, schema)) return false
  const [row] = await sql.unsafe(`select exists (select 1 from "${schema}".events) or exists (select 1 from "${schema}".deliveries) as used`)
  if (row?.used) return false
  await sql.begin(async (tx) => {
    for (const t of partitionedTables) {
      const qualified = `"${schema}".${t.name}`
      const indexes = await tx<{ def: string }[]>`
        select pg_get_indexdef(indexrelid) as def from pg_index where indrelid = ${qualified}::regclass and not indisunique`
      await tx.unsafe(`create table "${schema}".${t.name}__partitioned (like ${qualified} including defaults including storage including comments)
        partition by range (${t.key})`)
      await tx.unsafe(`drop table ${qualified}`)
      await tx.unsafe(`alter table "${schema}".${t.name}__partitioned rename to ${t.name}`)
      for (const { def } of indexes) await tx.unsafe(def)
      if (t.primary) await tx.unsafe(`alter table ${qualified} alter column ${t.key} set not null, add primary key (${t.primary})`)
      await tx.unsafe(`create table ${partitionOf(schema, t.name, 'default')} partition of ${qualified} default`)
      if (t.unique) await tx.unsafe(`create unique index ${t.name}_default_key on ${partitionOf(schema, t.name, 'default')} (${t.unique})`)
    }
  })
  return true
}

/**
 * Create the day partitions from `now`'s day to `daysAhead` days after it that are missing (each day's three
 * in one transaction, with their unique keys). A day the DEFAULT partition already holds rows of cannot be
 * created (Postgres refuses): it is skipped, and its rows stay in DEFAULT until retention deletes them.
 */
export async function createPartitionsAhead(sql: PostgresJs.Sql, schema: string, now: Date, daysAhead: number): Promise<string[]> {
  const existing = new Set(await partitionDays(sql, schema))
  const created: string[] = []
  for (let i = 0; i <= daysAhead; i++) {
    const from = dayStart(now.getTime()) + i * day
    const name = dayName(from)
    if (existing.has(name)) continue
    // Each day waits at most 100 ms for the tables' locks, tried 40 times 25 ms apart: a lock request queued longer
    // holds up every statement behind it, and one queued past deadlock_timeout (1 s) makes claims (which hold
    // deliveries and want events) deadlock victims.
    try {
      await untilLocked(40, () =>
        sql.begin(async (tx) => {
          await tx`set local lock_timeout = '100ms'`
          for (const t of partitionedTables) {
            const partition = partitionOf(schema, t.name, `p${name}`)
            await tx.unsafe(`create table if not exists ${partition} partition of "${schema}".${t.name}
              for values from ('${new Date(from).toISOString()}') to ('${new Date(from + day).toISOString()}')`)
            if (t.unique) await tx.unsafe(`create unique index if not exists ${t.name}_p${name}_key on ${partition} (${t.unique})`)
          }
        }),
      )
      created.push(name)
    } catch (err) {
      // 23514: the DEFAULT partition has rows of that day; 42P07/23505: another instance created it meanwhile;
      // 42P17: the day is before the cutover of a moved install (its `_unpartitioned` partitions hold it);
      // the tables stayed busy (givesWay): the next pass makes it.
      if (!givesWay(err) && !['23514', '42P07', '23505', '42P17'].includes((err as { code?: string }).code ?? '')) throw err
    }
  }
  return created
}

/** The days (`YYYYMMDD`) that have an attached events partition, oldest first. */
export async function partitionDays(sql: PostgresJs.Sql, schema: string): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
    where i.inhparent = to_regclass(${`"${schema}".events`}) and c.relname ~ '^events_p[0-9]{8}$' order by 1`
  return rows.map((r) => r.name.slice('events_p'.length))
}

/**
 * Drop each day whose partitions hold only events older than `before` (by `time`) and no pending delivery:
 * the three partitions are detached in one short transaction (see detachDay: it never waits in the tables' lock
 * queue; when they stay busy the day waits for the next pass), then counted and dropped. Partitions left detached by a crash
 * between the two steps are dropped first.
 */
export async function dropPartitionsBefore(sql: PostgresJs.Sql, schema: string, before: Date, lockTimeoutMs = 50): Promise<DroppedDay[]> {
  const dropped: DroppedDay[] = []
  for (const name of await detachedDays(sql, schema)) dropped.push(await countAndDrop(sql, schema, name))
  for (const name of await partitionDays(sql, schema)) {
    const end = Date.parse(`${name.slice(0, 4)}-${name.slice(4, 6)}-${name.slice(6)}T00:00:00Z`) + day
    if (end > before.getTime()) break
    if (!(await droppable(sql, schema, name, before))) continue
    const detached = await detachDay(sql, schema, name, before, lockTimeoutMs)
    if (detached) dropped.push(await countAndDrop(sql, schema, name))
  }
  return dropped
}

class KeptDay extends Error {}

/**
 * Detach a day's three partitions in one transaction, if the day is still droppable under the locks. The parents'
 * locks are taken all at once without waiting (NOWAIT), tried 20 times 25 ms apart: a detach waiting in the lock
 * queue would hold up every claim, publish and result behind it for as long as it waits. Answers whether the day
 * was detached (false: kept, or the tables stayed busy until the next pass).
 */
async function detachDay(sql: PostgresJs.Sql, schema: string, name: string, before: Date, lockTimeoutMs: number): Promise<boolean> {
  const parents = [...partitionedTables].reverse().map((t) => `"${schema}".${t.name}`)
  try {
    return await untilLocked(20, () =>
      sql.begin(async (tx) => {
        await tx.unsafe(`set local lock_timeout = '${lockTimeoutMs}ms'`)
        await tx.unsafe(`lock table ${parents.join(', ')} in access exclusive mode nowait`)
        for (const t of [...partitionedTables].reverse()) await tx.unsafe(`alter table "${schema}".${t.name} detach partition ${partitionOf(schema, t.name, `p${name}`)}`)
        // Under the locks: a delivery made pending again (a manual retry) since the check keeps the day.
        if (!(await droppable(tx, schema, name, before))) throw new KeptDay()
        return true
      }),
    )
  } catch (err) {
    if (err instanceof KeptDay || givesWay(err)) return false
    throw err
  }
}

/** Whether a day's events are all older than `before` and none of its deliveries is pending. */
async function droppable(sql: PostgresJs.Sql | PostgresJs.TransactionSql, schema: string, name: string, before: Date): Promise<boolean> {
  const [row] = await sql.unsafe(
    `select coalesce((select max(time) from ${partitionOf(schema, 'events', `p${name}`)}) < $1::timestamptz, true)
      and not exists (select 1 from ${partitionOf(schema, 'deliveries', `p${name}`)} where status = 'pending') as ok`,
    [before.toISOString()],
  )
  return row?.ok === true
}

/** Days whose partitions exist but are attached to nothing (detached by a pass that stopped before dropping them). */
async function detachedDays(sql: PostgresJs.Sql, schema: string): Promise<string[]> {
  const rows = await sql<{ name: string }[]>`
    select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
    where n.nspname = ${schema} and c.relkind = 'r' and c.relname ~ '^(events|deliveries|attempts)_p[0-9]{8}$'
      and not exists (select 1 from pg_inherits i where i.inhrelid = c.oid)`
  return [...new Set(rows.map((r) => r.name.slice(-8)))]
}

/**
 * A detached partition this size or larger is not scanned to count its rows before the drop: its count is the
 * planner's estimate. Scanning a day of 260,000 events took 20–43 ms a table, half of a pass's time, while live
 * traffic waited for the same 2 cores. Below it (8 MB), counting takes a few ms and is exact.
 */
const countedBelowPages = 1024

/** Count a detached day's rows (estimated when big, see `rowsOf`) and drop its partitions (nobody else reads a detached table). */
async function countAndDrop(sql: PostgresJs.Sql, schema: string, name: string): Promise<DroppedDay> {
  const result: DroppedDay = { day: name, events: 0, deliveries: 0, attempts: 0, estimated: false }
  for (const t of partitionedTables) {
    const partition = partitionOf(schema, t.name, `p${name}`)
    const rows = await rowsOf(sql, partition)
    if (!rows) continue
    result[t.name] = rows.n
    result.estimated ||= rows.estimated
    await sql.unsafe(`drop table ${partition}`)
  }
  return result
}

/**
 * The rows of a partition, or undefined when it does not exist. A big one's count is estimated as the planner
 * does: the rows per page of its last VACUUM or ANALYZE times its pages now, else the statistics' live rows.
 * It is counted when small, or when it has neither (never analyzed, statistics reset by a crash).
 */
async function rowsOf(sql: PostgresJs.Sql, partition: string): Promise<{ n: number; estimated: boolean } | undefined> {
  const [row] = await sql<{ tuples: number; analyzedPages: number; live: number | null; pages: number }[]>`
    select c.reltuples::float8 as tuples, c.relpages as "analyzedPages", s.n_live_tup::float8 as live,
        (pg_relation_size(c.oid) / current_setting('block_size')::int)::float8 as pages
      from pg_class c left join pg_stat_user_tables s on s.relid = c.oid where c.oid = to_regclass(${partition})`
  if (!row) return undefined
  const { tuples, analyzedPages, live, pages } = row
  if (pages >= countedBelowPages) {
    if (tuples >= 0 && analyzedPages > 0) return { n: Math.round((tuples / analyzedPages) * pages), estimated: true }
    if (live && live > 0) return { n: live, estimated: true }
  }
  const [count] = await sql.unsafe(`select count(*)::int as n from ${partition}`)
  return { n: count?.n as number, estimated: false }
}
