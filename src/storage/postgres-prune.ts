import { sql, type SQL } from 'drizzle-orm'
import type { Db, Tables } from './sql-context.js'
import { iso } from './postgres-prepared.js'
import type { PruneBatch, PruneRequest } from './storage.js'

// The pruner's batches on Postgres (the `retention` option on the plain layout; the partitioned one drops days).

/** A text-array parameter as a column of `type` (what postgres.js serializes for any type, through drizzle). */
export const col = (values: (string | null)[], type: string) => sql`${sql.param(values)}::text[]::${sql.raw(type)}[]`

/**
 * Two statements. The first lists the oldest old events without a pending delivery and locks their
 * deliveries, skipping rows another transaction holds; a delivery made pending since the statement's
 * snapshot (a manual retry) fails the lock's re-check of `status` and is not locked either. The second
 * deletes the events whose every delivery is locked here, with those deliveries and their attempts.
 */
export async function pruneEvents(db: Db, t: Tables, q: PruneRequest): Promise<PruneBatch> {
  // A batch touches `limit` rows: always index lookups. Misjudging the size of the CTEs, the planner
  // would otherwise hash whole tables for each batch.
  await db.execute(sql`select set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true), set_config('enable_seqscan', 'off', true)`)
  const found = (await db.execute(sql`
    with found as (${oldEvents(t, q)}), ${heldDeliveries(t, sql``)}`)) as unknown as PruneFound[]
  return deleteEvents(db, t, found)
}

/** An old event found to prune, `held` when a delivery of it could not be locked. */
export type PruneFound = { tenant_id: string; id: string; time: number; held: boolean }

/** The oldest events of the request's range without a pending delivery (tenant_id, id, time). */
export function oldEvents(t: Tables, q: PruneRequest): SQL {
  return sql`select e.tenant_id, e.id, e.time from ${t.events} e
      where e.time < ${iso(q.before)}::timestamptz and e.time >= ${iso(q.from) ?? '-infinity'}::timestamptz
        and not exists (select 1 from ${t.deliveries} d where d.tenant_id = e.tenant_id and d.event_id = e.id and d.status = 'pending')
      order by e.time limit ${q.limit}`
}

/** After a `found` CTE: each event found, `held` unless every delivery of it is locked here (`onShard`: a condition on `d`). */
export function heldDeliveries(t: Tables, onShard: SQL): SQL {
  return sql`locked as (
      select d.id from ${t.deliveries} d join found f on d.tenant_id = f.tenant_id and d.event_id = f.id
      where d.status <> 'pending'${onShard} for update of d skip locked
    )
    select f.tenant_id, f.id, (extract(epoch from f.time) * 1000)::float8 as time,
      exists (select 1 from ${t.deliveries} d where d.tenant_id = f.tenant_id and d.event_id = f.id${onShard} and d.id not in (select id from locked)) as held
    from found f`
}

/** Deletes the events found that no delivery holds, with their deliveries and attempts. */
export async function deleteEvents(db: Db, t: Tables, found: PruneFound[]): Promise<PruneBatch> {
  const last = found.length ? new Date(Math.max(...found.map((r) => r.time))) : null
  const gone = found.filter((r) => !r.held)
  if (gone.length === 0) return { events: 0, deliveries: 0, attempts: 0, found: found.length, last }
  const [row] = (await db.execute(sql`
    with gone as (select * from unnest(${col(gone.map((r) => r.tenant_id), 'text')}, ${col(gone.map((r) => r.id), 'text')}) as g(tenant_id, id)),
    attempts as (delete from ${t.attempts} a using gone g where a.tenant_id = g.tenant_id and a.event_id = g.id returning 1),
    deliveries as (delete from ${t.deliveries} d using gone g where d.tenant_id = g.tenant_id and d.event_id = g.id returning 1),
    events as (delete from ${t.events} e using gone g where e.tenant_id = g.tenant_id and e.id = g.id returning 1)
    select (select count(*) from events)::int as events, (select count(*) from deliveries)::int as deliveries, (select count(*) from attempts)::int as attempts`)) as unknown as {
    events: number
    deliveries: number
    attempts: number
  }[]
  return { ...row!, found: found.length, last }
}
