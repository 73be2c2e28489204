import { sql, type SQL } from 'drizzle-orm'
import { PgDialect, getTableConfig } from 'drizzle-orm/pg-core'
import type { Db, HotPath, Tables } from './sql-context.js'
import { driverOf, iso } from './postgres-prepared.js'
import type { InsertEventResult, NewEventWithDeliveries, PruneBatch, PruneRequest } from './storage.js'

/**
 * Postgres: the event and delivery inserts as one statement, each column sent as one text-array
 * parameter and expanded with `unnest` (attempt results: postgres-queue.ts). Building multi-row inserts
 * with a parameter per value cost most of the publish path's CPU (see bench/); this costs a handful of
 * parameters at any batch size.
 */
export function postgresHotPath(tables: Tables): HotPath {
  return {
    singleStatementInsert: true,
    insertEvents: async (db, items) => (await insertEventRows(arraysOf(db), tables, items))!.results,
    pruneEvents: (db, request) => pruneEvents(db, tables, request),
  }
}

/** The sequence of FIFO publish order, in the schema of Outflow's tables (whatever the session's search_path). */
const orderSequence = (t: Tables) => `"${getTableConfig(t.deliveries).schema ?? 'public'}".delivery_order_seq`
const col = (values: (string | null)[], type: string) => sql`${sql.param(values)}::text[]::${sql.raw(type)}[]`
const unnest = (...columns: SQL[]) => sql`unnest(${sql.join(columns, sql`, `)})`

/** Runs one statement; its rows as arrays, columns in select-list order (whatever names a driver's transform gives them). */
export type RowsOf = (query: SQL) => Promise<unknown[][]>

const dialect = new PgDialect()

/**
 * Rows of a statement on the engine's own connection, run as a prepared statement (see postgres-prepared.ts): the
 * statement's text is the same for every batch (its columns are array parameters), so it is parsed once per connection.
 */
const arraysOf = (db: Db): RowsOf => {
  const driver = driverOf(db)
  return (query) => {
    const { sql: text, params } = dialect.sqlToQuery(query)
    return driver.unsafe(text, params, { prepare: true }).values()
  }
}

export interface InsertEventRowsOptions {
  /** The statement writes nothing unless this holds (the host-transaction check, see postgres-outbox.ts); then the result is null. */
  guard?: SQL
  /** Also answer the id of the transaction when the statement wrote deliveries (to watch for its commit, see postgres-outbox.ts). */
  xact?: boolean
}

export interface InsertedEventRows {
  results: InsertEventResult[]
  /** `pg_current_xact_id()` of the statement's transaction, when asked for and deliveries were written. */
  xact?: string
}

/**
 * One statement (atomic by itself, no BEGIN/COMMIT round trips): the events, then deliveries of the inserted ones.
 * It holds the tenant and destination rows it writes for (`for key share`: a delete waits, an update does not),
 * so a concurrent delete either removes these rows after commit or committed first and they are not written.
 * It takes no other lock on shared rows, so inside a host's long transaction it blocks no other publish or delivery.
 */
export async function insertEventRows(
  rowsOf: RowsOf,
  t: Tables,
  items: NewEventWithDeliveries[],
  { guard, xact }: InsertEventRowsOptions = {},
): Promise<InsertedEventRows | null> {
  const events = items.map((i) => i.event)
  const groups = items.map((item, index) => (item.group === undefined ? `item ${index}` : `group ${item.group}`))
  // The same id twice in one batch: only the first occurrence may bring deliveries.
  const firsts = new Set<string>()
  const rows: { e: (typeof events)[number]; d: NewEventWithDeliveries['deliveries'][number] }[] = []
  for (const { event: e, deliveries } of items) {
    const key = `${e.tenant_id}\u0000${e.id}`
    if (firsts.has(key)) continue
    firsts.add(key)
    for (const d of deliveries) rows.push({ e, d })
  }
  const written = (await rowsOf(sql`
    with input as (
      select * from ${unnest(
        col(events.map((e) => e.tenant_id), 'text'),
        col(events.map((e) => e.id), 'text'),
        col(events.map((e) => e.topic), 'text'),
        col(events.map((e) => iso(e.time)), 'timestamptz'),
        col(events.map((e) => JSON.stringify(e.data)), 'jsonb'),
        col(events.map((e) => JSON.stringify(e.metadata)), 'jsonb'),
        col(events.map((e) => (e.eligible_for_retry ? 't' : 'f')), 'bool'),
        col(events.map((e) => iso(e.created_at)), 'timestamptz'),
        col(groups, 'text'),
      )} as i(tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at, grp)${guard ? sql` where ${guard}` : sql``}
    ), owner as (
      select id from ${t.tenants} where id in (select tenant_id from input) for key share
    ), orphaned as (
      select grp, min(tenant_id) as tenant_id from input where tenant_id not in (select id from owner) group by grp
    ), ev as (
      insert into ${t.events} (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at)
      select tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at from input
      where grp not in (select grp from orphaned)
      on conflict do nothing
      returning tenant_id, id
    ), target as (
      -- Joined to the held tenants, so a destination is held only after its tenant (deleteTenant's order).
      select d.tenant_id, d.id from ${t.destinations} d join owner on owner.id = d.tenant_id
      where (d.tenant_id, d.id) in (select * from ${unnest(col(rows.map((r) => r.e.tenant_id), 'text'), col(rows.map((r) => r.d.destination_id), 'text'))})
      for key share of d
    ), dl as (
      insert into ${t.deliveries} (id, tenant_id, event_id, destination_id, topic, event_time, next_attempt_at, lease_owner, lease_until, status, skipped_at, order_key,
        attempt_count, manual, order_seq, order_state)
      select d.*, 0, false, case when d.order_key is null then null else nextval(${orderSequence(t)}) end,
        case when d.order_key is null then null else 'waiting' end from ${unnest(
        col(rows.map((r) => r.d.id), 'text'),
        col(rows.map((r) => r.e.tenant_id), 'text'),
        col(rows.map((r) => r.e.id), 'text'),
        col(rows.map((r) => r.d.destination_id), 'text'),
        col(rows.map((r) => r.e.topic), 'text'),
        col(rows.map((r) => iso(r.e.time)), 'timestamptz'),
        col(rows.map((r) => (r.d.skipped || r.d.order_key !== undefined ? null : iso(r.d.next_attempt_at))), 'timestamptz'),
        col(rows.map((r) => r.d.lease_owner ?? null), 'text'),
        col(rows.map((r) => iso(r.d.lease_until)), 'timestamptz'),
        col(rows.map((r) => (r.d.skipped ? 'skipped' : 'pending')), 'text'),
        col(rows.map((r) => (r.d.skipped ? iso(r.e.created_at) : null)), 'timestamptz'),
        col(rows.map((r) => (r.d.skipped ? null : (r.d.order_key ?? null))), 'text'),
      )} as d(id, tenant_id, event_id, destination_id, topic, event_time, next_attempt_at, lease_owner, lease_until, status, skipped_at, order_key)
      join ev on ev.tenant_id = d.tenant_id and ev.id = d.event_id
      join target on target.tenant_id = d.tenant_id and target.id = d.destination_id
      returning tenant_id, event_id, destination_id, status
    )
    select 'event' as kind, tenant_id, id as ref, null as destination_id from ev
    union all select 'delivery', tenant_id, event_id, destination_id from dl where status <> 'skipped'
    union all select 'orphaned', tenant_id, grp, null from orphaned${xact ? sql`
    union all select 'xact', pg_current_xact_id()::text, null, null where exists (select 1 from dl)` : sql``}${guard ? sql`
    union all select 'refused', null, null, null where not (${guard})` : sql``}`)) as [kind: string, tenant_id: string, ref: string, destination_id: string | null][]
  const fresh = new Set<string>()
  const delivered = new Set<string>()
  const missing = new Map<string, string>()
  let transaction: string | undefined
  for (const [kind, tenantId, ref, destinationId] of written) {
    if (kind === 'event') fresh.add(`${tenantId}\u0000${ref}`)
    else if (kind === 'delivery') delivered.add(`${tenantId}\u0000${ref}\u0000${destinationId}`)
    else if (kind === 'orphaned') missing.set(ref, tenantId)
    else if (kind === 'xact') transaction = tenantId
    else if (kind === 'refused') return null
  }
  const results: InsertEventResult[] = items.map(({ event: e, deliveries }, index) => {
    const missingTenant = missing.get(groups[index]!)
    if (missingTenant !== undefined) return { duplicate: false, destination_ids: [], missing_tenant: missingTenant }
    if (!fresh.delete(`${e.tenant_id}\u0000${e.id}`)) return { duplicate: true, destination_ids: [] }
    return { duplicate: false, destination_ids: deliveries.map((d) => d.destination_id).filter((id) => delivered.has(`${e.tenant_id}\u0000${e.id}\u0000${id}`)) }
  })
  for (const [index, r] of results.entries()) {
    if (!r.duplicate) continue
    const { tenant_id, id } = items[index]!.event
    const existing = await rowsOf(sql`select destination_id from ${t.deliveries} where tenant_id = ${tenant_id} and event_id = ${id} and status <> 'skipped'`)
    r.destination_ids = existing.map(([destinationId]) => destinationId as string)
  }
  return { results, xact: transaction }
}

/**
 * Two statements. The first lists the oldest old events without a pending delivery and locks their
 * deliveries, skipping rows another transaction holds; a delivery made pending since the statement's
 * snapshot (a manual retry) fails the lock's re-check of `status` and is not locked either. The second
 * deletes the events whose every delivery is locked here, with those deliveries and their attempts.
 */
async function pruneEvents(db: Db, t: Tables, q: PruneRequest): Promise<PruneBatch> {
  // A batch touches `limit` rows: always index lookups. Misjudging the size of the CTEs, the planner
  // would otherwise hash whole tables for each batch.
  await db.execute(sql`select set_config('enable_hashjoin', 'off', true), set_config('enable_mergejoin', 'off', true), set_config('enable_seqscan', 'off', true)`)
  const found = (await db.execute(sql`
    with found as (
      select e.tenant_id, e.id, e.time from ${t.events} e
      where e.time < ${iso(q.before)}::timestamptz and e.time >= ${iso(q.from) ?? '-infinity'}::timestamptz
        and not exists (select 1 from ${t.deliveries} d where d.tenant_id = e.tenant_id and d.event_id = e.id and d.status = 'pending')
      order by e.time limit ${q.limit}
    ), locked as (
      select d.id from ${t.deliveries} d join found f on d.tenant_id = f.tenant_id and d.event_id = f.id
      where d.status <> 'pending' for update of d skip locked
    )
    select f.tenant_id, f.id, (extract(epoch from f.time) * 1000)::float8 as time,
      exists (select 1 from ${t.deliveries} d where d.tenant_id = f.tenant_id and d.event_id = f.id and d.id not in (select id from locked)) as held
    from found f`)) as unknown as { tenant_id: string; id: string; time: number; held: boolean }[]
  const last = found.length ? new Date(Math.max(...found.map((r) => r.time))) : null
  const gone = found.filter((r) => !r.held)
  if (gone.length === 0) return { events: 0, deliveries: 0, attempts: 0, found: found.length, last }
  const [row] = (await db.execute(sql`
    with gone as (select * from ${unnest(col(gone.map((r) => r.tenant_id), 'text'), col(gone.map((r) => r.id), 'text'))} as g(tenant_id, id)),
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
