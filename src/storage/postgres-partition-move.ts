import type PostgresJs from 'postgres'
import { createPartitionsAhead, daysAhead, historyPartitioned, partitionedTables, untilLocked } from './postgres-partitions.js'

// Moving an existing install's plain event log to the partitioned layout (postgres-partitions.ts) online, while
// engines publish and deliver. Nothing is copied: each plain table becomes the partition of everything created
// before a cutover (the start of a UTC day at least a day ahead), under the new partitioned table of its name,
// and the days from the cutover on get partitions of their own, which retention drops whole; the history from
// before it goes by retention's batched DELETE as it ages out. Every step but the last runs beside live traffic
// (batched updates, CHECK constraints added NOT VALID then validated, indexes built CONCURRENTLY); the last is
// one short transaction that renames and attaches (no row is read: the validated CHECKs prove the ranges). Each
// step finds what an interrupted run did, so running it again resumes.

const day = 86_400_000
/** Rows per batch of the event_created_at backfill. */
const backfillBatch = 5_000
/**
 * A step that needs a table lock engines' statements conflict with (adding a CHECK, the swap) waits for it at most
 * this long, then gives way and tries again 25 ms later: a lock request waiting in the queue holds up every
 * statement behind it, and one waiting past Postgres's deadlock_timeout (1 s) gets engines' statements caught in
 * its cycles chosen as deadlock victims. So engines' statements are held up at most this long, and never fail.
 */
const lockWaitMs = 100
const lockTries = 2_000
/** The swap first takes the three tables' locks without waiting at all (NOWAIT), this many times. */
const swapNowaitTries = 400

/** What a move reports as it goes: a message and its figures, for the operator's log. */
export type MoveProgress = (message: string, fields: Record<string, unknown>) => void

export interface MoveReport {
  /** False when the history was already partitioned (nothing was done). */
  moved: boolean
  /** The first day with partitions of its own (ISO date); older rows stay in the `<table>_unpartitioned` partitions. */
  cutover?: string
  /** Rows whose event_created_at was filled in (written before it existed). */
  backfilled?: number
}

const legacyName = (table: string) => `${table}_unpartitioned`
const cutoverName = (table: string, cutover: Date) => `${table}_before_${cutover.toISOString().slice(0, 10).replaceAll('-', '')}`

/**
 * Move the plain tables of `schema` to the partitioned layout, online and resumably. Run under the migration lock
 * by a storage that has migrated (see postgres.ts › partitionHistory). `now` decides the cutover: the start of the
 * UTC day after the next, so that rows inserted until the swap (a minute later, or a resumed run's hours later)
 * are before it; a resumed run whose cutover is less than 12 hours away picks a new one.
 */
export async function movePlainHistory(sql: PostgresJs.Sql, schema: string, progress: MoveProgress, now = () => new Date()): Promise<MoveReport> {
  if (await historyPartitioned(sql, schema)) return { moved: false }
  const s = `"${schema}"`
  const backfilled = (await backfill(sql, s, 'deliveries', progress)) + (await backfill(sql, s, 'attempts', progress))
  const cutover = await rangeChecks(sql, schema, now(), progress)
  for (const t of partitionedTables) {
    if (!t.primary) continue
    const index = `${t.name}_partition_key_idx`
    const [found] = await sql<{ valid: boolean }[]>`
      select i.indisvalid as valid from pg_index i where i.indexrelid = to_regclass(${`${s}.${index}`})`
    if (found?.valid) continue
    // An index an interrupted CREATE INDEX CONCURRENTLY left is invalid: made again.
    if (found) await sql.unsafe(`drop index concurrently ${s}.${index}`)
    progress('partition history: building the new primary key index beside traffic', { table: t.name, index })
    await sql.unsafe(`create unique index concurrently ${index} on ${s}.${t.name} (${t.primary})`)
  }
  await swap(sql, schema, cutover, progress)
  const made = await createPartitionsAhead(sql, schema, now(), daysAhead)
  progress('partition history: moved', { cutover: cutover.toISOString().slice(0, 10), backfilled, days_made: made })
  return { moved: true, cutover: cutover.toISOString().slice(0, 10), backfilled }
}

/**
 * Fill in event_created_at of the rows written before it existed (migration 0010), a batch of ids at a time in id
 * order: from the event (deliveries), the delivery (attempts), else the row's own time.
 */
async function backfill(sql: PostgresJs.Sql, s: string, table: 'deliveries' | 'attempts', progress: MoveProgress): Promise<number> {
  const [missing] = await sql.unsafe<{ any: boolean }[]>(`select exists (select 1 from ${s}.${table} where event_created_at is null) as any`)
  if (!missing?.any) return 0
  const source =
    table === 'deliveries'
      ? `coalesce((select e.created_at from ${s}.events e where e.tenant_id = r.tenant_id and e.id = r.event_id), r.event_time)`
      : `coalesce((select d.event_created_at from ${s}.deliveries d where d.id = r.delivery_id),
          (select e.created_at from ${s}.events e where e.tenant_id = r.tenant_id and e.id = r.event_id), r.delivered_at)`
  let after = ''
  let filled = 0
  for (;;) {
    const [batch] = await briefly<{ last: string | null; filled: number }>(
      sql,
      `with ids as (select id from ${s}.${table} where id > $1 order by id limit ${backfillBatch}),
        done as (update ${s}.${table} r set event_created_at = ${source} from ids where r.id = ids.id and r.event_created_at is null returning 1)
       select (select max(id) from ids) as last, (select count(*) from done)::int as filled`,
      [after],
    )
    if (!batch?.last) break
    after = batch.last
    filled += batch.filled
    if (batch.filled) progress('partition history: filling in event_created_at', { table, filled, after })
  }
  return filled
}

/**
 * The CHECK on each plain table that proves every row is before the cutover (and, for deliveries and attempts,
 * has its event_created_at), added NOT VALID and validated beside traffic. Answers the cutover, reusing a
 * previous run's while it is at least 12 hours away.
 */
async function rangeChecks(sql: PostgresJs.Sql, schema: string, now: Date, progress: MoveProgress): Promise<Date> {
  const existing = await sql<{ name: string; table: string; valid: boolean }[]>`
    select c.conname as name, t.relname as table, c.convalidated as valid from pg_constraint c join pg_class t on t.oid = c.conrelid
    where t.relnamespace = to_regnamespace(${`"${schema}"`}) and c.contype = 'c' and c.conname ~ '_before_[0-9]{8}$'`
  const days = existing.map((c) => c.name.slice(-8))
  const kept = days.length ? Date.parse(`${days[0]!.slice(0, 4)}-${days[0]!.slice(4, 6)}-${days[0]!.slice(6)}T00:00:00Z`) : NaN
  const cutover = kept - now.getTime() >= day / 2 ? new Date(kept) : new Date((Math.floor(now.getTime() / day) + 2) * day)
  for (const c of existing) {
    if (c.name === cutoverName(c.table, cutover)) continue
    await briefly(sql, `alter table "${schema}".${c.table} drop constraint ${c.name}`)
  }
  for (const t of partitionedTables) {
    const name = cutoverName(t.name, cutover)
    const found = existing.find((c) => c.name === name)
    if (found?.valid) continue
    const notNull = t.name === 'events' ? '' : `${t.key} is not null and `
    if (!found) await briefly(sql, `alter table "${schema}".${t.name} add constraint ${name} check (${notNull}${t.key} < '${cutover.toISOString()}') not valid`)
    progress('partition history: checking every row is before the cutover, beside traffic', { table: t.name, cutover: cutover.toISOString() })
    await sql.unsafe(`alter table "${schema}".${t.name} validate constraint ${name}`)
  }
  return cutover
}

/**
 * The one short transaction: each plain table is renamed `<name>_unpartitioned` (its indexes too), a partitioned
 * table takes its name (the same columns and defaults, the same indexes by the same names, the layout's primary
 * key) and attaches it as the range before the cutover, and gets its DEFAULT partition. See swapNowaitTries for
 * how it takes the tables' locks.
 */
async function swap(sql: PostgresJs.Sql, schema: string, cutover: Date, progress: MoveProgress): Promise<void> {
  const s = `"${schema}"`
  await untilLocked(lockTries, async (attempt) => {
    if (attempt % 100 === 0) progress('partition history: the tables were busy; trying the swap again', { attempt })
    await sql.begin(async (tx) => {
      const nowait = attempt <= swapNowaitTries
      await tx.unsafe(`set local lock_timeout = '${lockWaitMs}ms'`)
      await tx.unsafe(`lock table ${partitionedTables.map((t) => `${s}.${t.name}`).join(', ')} in access exclusive mode${nowait ? ' nowait' : ''}`)
      if (await historyPartitioned(tx as unknown as PostgresJs.Sql, schema)) return
      for (const t of partitionedTables) {
        const legacy = legacyName(t.name)
        const indexes = await tx<{ name: string; def: string; primary: boolean; unique: boolean }[]>`
          select c.relname as name, pg_get_indexdef(i.indexrelid) as def, i.indisprimary as primary, i.indisunique as unique
          from pg_index i join pg_class c on c.oid = i.indexrelid where i.indrelid = ${`${s}.${t.name}`}::regclass`
        await tx.unsafe(`alter table ${s}.${t.name} rename to ${legacy}`)
        for (const index of indexes) if (!index.unique) await tx.unsafe(`alter index ${s}.${index.name} rename to ${index.name}_unpartitioned`)
        await tx.unsafe(`create table ${s}.${t.name} (like ${s}.${legacy} including defaults including storage including comments) partition by range (${t.key})`)
        for (const index of indexes) if (!index.unique) await tx.unsafe(index.def)
        if (t.primary) {
          const primary = indexes.find((index) => index.primary)
          // Proven by the validated CHECK: no row is read.
          await tx.unsafe(`alter table ${s}.${legacy} alter column ${t.key} set not null`)
          if (primary) await tx.unsafe(`alter table ${s}.${legacy} drop constraint ${primary.name}`)
          await tx.unsafe(`alter table ${s}.${legacy} add constraint ${legacy}_pkey primary key using index ${t.name}_partition_key_idx`)
          await tx.unsafe(`alter table ${s}.${t.name} alter column ${t.key} set not null, add primary key (${t.primary})`)
        }
        await tx.unsafe(`alter table ${s}.${t.name} attach partition ${s}.${legacy} for values from (minvalue) to ('${cutover.toISOString()}')`)
        await tx.unsafe(`create table ${s}.${t.name}_default partition of ${s}.${t.name} default`)
        if (t.unique) await tx.unsafe(`create unique index ${t.name}_default_key on ${s}.${t.name}_default (${t.unique})`)
      }
    })
  })
}

/** One statement in a transaction that waits at most lockWaitMs for its locks, tried again until it has them. */
function briefly<T extends object = object>(sql: PostgresJs.Sql, statement: string, parameters: string[] = []): Promise<T[]> {
  return untilLocked(lockTries, () =>
    sql.begin(async (tx) => {
      await tx.unsafe(`set local lock_timeout = '${lockWaitMs}ms'`)
      return tx.unsafe(statement, parameters)
    }),
  ) as unknown as Promise<T[]>
}
