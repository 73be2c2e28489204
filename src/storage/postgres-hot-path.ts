import { sql, type SQL } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/pg-core'
import type { HotPath, Tables } from './sql-context.js'
import { publishLocks, type ShardGroups } from './postgres-citus.js'
import { pruneOnShards } from './postgres-citus-prune.js'
import { pruneEvents } from './postgres-prune.js'
import { column, driverOf, iso, onShardOf, prepared, slot, type Driver } from './postgres-prepared.js'
import type { PlanOnce, PlanOnceUse } from './postgres-plan-once.js'
import type { InsertEventResult, NewEventWithDeliveries } from './storage.js'

/**
 * Postgres: the event and delivery inserts as one statement, each column sent as one text-array
 * parameter and expanded with `unnest` (attempt results: postgres-queue.ts). Building multi-row inserts
 * with a parameter per value cost most of the publish path's CPU (see bench/); this costs a handful of
 * parameters at any batch size, and the statement is compiled once and prepared (postgres-prepared.ts).
 */
export function postgresHotPath(tables: Tables, shards?: ShardGroups, planned?: { publish: PlanOnce<string>; use: PlanOnceUse }): HotPath {
  if (shards) return { singleStatementInsert: false, insertEvents: citusInsertEvents(tables, shards), pruneEvents: (db, request) => pruneOnShards(db, tables, shards, request) }
  const inserts = eventInserts(tables)
  // Through the statement's plan-once function (postgres-plan-once.ts) when migrate() made it, on either layout.
  if (planned) inserts.insert = async (driver, values) => planned.publish.run(driver, values, await planned.use.viaFunctions(true), () => planned.use.missing())
  return {
    singleStatementInsert: true,
    insertEvents: async (db, items) => (await insertEventRows(driverOf(db), inserts, items) as InsertedEventRows).results,
    pruneEvents: (db, request) => pruneEvents(db, tables, request),
  }
}

/** The sequence of FIFO publish order, in the schema of Outflow's tables (whatever the session's search_path). */
const orderSequence = (t: Tables) => `"${getTableConfig(t.deliveries).schema ?? 'public'}".delivery_order_seq`

/** The text-array parameters of an event insert: one per column of the events, then of their deliveries. */
type InsertColumn =
  | 'e_tenant' | 'e_id' | 'e_topic' | 'e_time' | 'e_data' | 'e_metadata' | 'e_retry' | 'e_created' | 'e_group' | 'e_schema_valid'
  | 'd_id' | 'd_tenant' | 'd_event' | 'd_destination' | 'd_topic' | 'd_event_time' | 'd_next' | 'd_lease_owner' | 'd_lease_until'
  | 'd_status' | 'd_skipped_at' | 'd_order_key' | 'd_event_created' | 'd_order_seq'

/**
 * The event insert, compiled once. With `checks` (conditions with placeholders of their own, by name: see
 * postgres-outbox.ts) it writes nothing unless every one holds, answers the name of each that does not, and
 * answers the id of its transaction when it wrote deliveries.
 */
export function eventInsertStatement(t: Tables, checks?: Record<string, SQL>, { byShard = false } = {}) {
  const c = (name: InsertColumn, type: string) => column(name, type)
  // On Citus: every table read by the batch's tenants too (their shards only), and no row lock (see citusPublish).
  const of = onShardOf(byShard)
  const hold = (lock: string) => (byShard ? sql`` : sql.raw(` ${lock}`))
  // On Citus the FIFO order numbers come as a column (see citusPublish): Citus fails the statement when it
  // draws them itself while joining the held destinations.
  const seqGiven = (given: string, drawn = '') => sql.raw(byShard ? given : drawn)
  const named = Object.entries(checks ?? {})
  const guard = named.length ? sql.join(named.map(([, holds]) => sql`(${holds})`), sql` and `) : undefined
  return prepared<string>(sql`
    with input as (
      select * from unnest(${c('e_tenant', 'text')}, ${c('e_id', 'text')}, ${c('e_topic', 'text')}, ${c('e_time', 'timestamptz')}, ${c('e_data', 'jsonb')},
        ${c('e_metadata', 'jsonb')}, ${c('e_retry', 'bool')}, ${c('e_created', 'timestamptz')}, ${c('e_group', 'text')}, ${c('e_schema_valid', 'bool')})
        as i(tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at, grp, schema_valid)${guard ? sql` where ${guard}` : sql``}
    ), owner as (
      select id from ${t.tenants} tn where id in (select tenant_id from input)${of('tn', 'id')}${hold('for key share')}
    ), orphaned as (
      select grp, min(tenant_id) as tenant_id from input where tenant_id not in (select id from owner) group by grp
    ), ev as (
      insert into ${t.events} (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at, schema_valid)
      select tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at, schema_valid from input
      where grp not in (select grp from orphaned)${byShard ? sql`` : earlierDuplicate(t)}
      on conflict do nothing
      returning tenant_id, id
    ), target as ${sql.raw(byShard ? 'materialized ' : '')}(
      -- Joined to the held tenants, so a destination is held only after its tenant (deleteTenant's order). On Citus
      -- materialized: inlined into the deliveries' insert, Citus mistyped the rows it sent to several shards.
      select d.tenant_id, d.id from ${t.destinations} d join owner on owner.id = d.tenant_id
      where (d.tenant_id, d.id) in (select * from unnest(${c('d_tenant', 'text')}, ${c('d_destination', 'text')}))${of('d')}${hold('for key share of d')}
    ), dl as (
      insert into ${t.deliveries} (id, tenant_id, event_id, destination_id, topic, event_time, next_attempt_at, lease_owner, lease_until, status, skipped_at, order_key,
        event_created_at${seqGiven(', order_seq')}, attempt_count, manual${seqGiven('', ', order_seq')}, order_state)
      select d.*, 0, false,${seqGiven('', ` case when d.order_key is null then null else nextval('${orderSequence(t)}') end,`)}
        case when d.order_key is null then null else 'waiting' end
      from unnest(${c('d_id', 'text')}, ${c('d_tenant', 'text')}, ${c('d_event', 'text')}, ${c('d_destination', 'text')}, ${c('d_topic', 'text')},
        ${c('d_event_time', 'timestamptz')}, ${c('d_next', 'timestamptz')}, ${c('d_lease_owner', 'text')}, ${c('d_lease_until', 'timestamptz')},
        ${c('d_status', 'text')}, ${c('d_skipped_at', 'timestamptz')}, ${c('d_order_key', 'text')}, ${c('d_event_created', 'timestamptz')}${byShard ? sql`, ${c('d_order_seq', 'int8')}` : sql``})
        as d(id, tenant_id, event_id, destination_id, topic, event_time, next_attempt_at, lease_owner, lease_until, status, skipped_at, order_key, event_created_at${seqGiven(', order_seq')})
      join ev on ev.tenant_id = d.tenant_id and ev.id = d.event_id
      join target on target.tenant_id = d.tenant_id and target.id = d.destination_id
      returning tenant_id, event_id, destination_id, status
    )
    select 'event' as kind, tenant_id, id as ref, null as destination_id from ev
    union all select 'delivery', tenant_id, event_id, destination_id from dl where status <> 'skipped'
    union all select 'orphaned', tenant_id, grp, null from orphaned${guard ? sql`
    union all select 'xact', pg_current_xact_id()::text, null, null where exists (select 1 from dl)` : sql``}${sql.join(
      named.map(([name, holds]) => sql`
    union all select 'refused', ${sql.raw(`'${name}'`)}, null, null where not (${holds})`),
    )}`)
}

/**
 * The partitioned layout's unique key is per day partition: a duplicate of an earlier day's event is found here,
 * within the idempotency window (only the partitions from dedup_since to the start of the batch's last day are read:
 * that day's own unique key finds the rest, on conflict). Plain tables (Citus's) find every duplicate on conflict.
 */
const earlierDuplicate = (t: Tables) => sql`
        and not exists (select 1 from ${t.events} x where x.tenant_id = input.tenant_id and x.id = input.id
          and x.created_at >= ${slot('dedup_since')}::timestamptz and x.created_at < ${slot('dedup_until')}::timestamptz)`

/** The statements of an event insert: the insert (see eventInsertStatement) and the read of a duplicate's destinations. */
export interface EventInserts {
  insert: (driver: Driver, values: Record<string, unknown>) => Promise<unknown[][]>
  existing: ReturnType<typeof prepared<'tenant' | 'event'>>
}

/** The statements of an event insert, with the checks of eventInsertStatement if given. */
export function eventInserts(t: Tables, checks?: Record<string, SQL>): EventInserts {
  return {
    insert: eventInsertStatement(t, checks),
    existing: prepared<'tenant' | 'event'>(
      sql`select destination_id from ${t.deliveries} where tenant_id = ${slot('tenant')}::text and event_id = ${slot('event')}::text and status <> 'skipped'`,
    ),
  }
}

/**
 * The event insert on Citus, in the storage's transaction (see citusPublish). Citus runs the insert through the
 * coordinator; one statement keeps a group of events all or nothing.
 */
function citusInsertEvents(t: Tables, shards: ShardGroups): HotPath['insertEvents'] {
  const publish = citusPublish(t, shards)
  return async (db, items) => {
    const driver = driverOf(db)
    const { values, orderNumbers } = await publish.hold(driver, items)
    return ((await insertEventRows(driver, publish.inserts, items, values, orderNumbers)) as InsertedEventRows).results
  }
}

/**
 * A publish on Citus (the `citus` option), in a transaction: the row locks first, a statement per shard group (see
 * publishLocks), then the insert without locks (`inserts`, with `checks` if given) for the whole batch, its tables
 * read by the batch's tenants (`values`), with FIFO numbers drawn before it (`orderNumbers`: see eventInsertStatement).
 */
export function citusPublish(t: Tables, shards: ShardGroups, checks?: Record<string, SQL>) {
  const lock = publishLocks(t)
  const draw = prepared<'count'>(sql`select nextval(${orderSequence(t)})::text from generate_series(1, ${slot('count')}::int)`)
  return {
    inserts: { ...eventInserts(t), insert: eventInsertStatement(t, checks, { byShard: true }) },
    async hold(driver: Driver, items: NewEventWithDeliveries[]) {
      const tenants = [...new Set(items.map((i) => i.event.tenant_id))]
      for (const group of await shards.split(items, (item) => item.event.tenant_id)) {
        const targets = group.items.flatMap(({ event, deliveries }) => deliveries.map((d) => [event.tenant_id, d.destination_id]))
        await shards.checked(() => lock(driver, { tenants: group.tenants, d_tenant: targets.map(([tenant]) => tenant), d_destination: targets.map(([, id]) => id) }))
      }
      const orderNumbers = async (count: number) => (count === 0 ? [] : (await draw(driver, { count })).map(([n]) => n as string))
      return { values: { tenants }, orderNumbers }
    },
  }
}

/**
 * How far back a publish looks for an earlier event with its id on the partitioned layout (see eventInsertStatement):
 * a duplicate published later than this after the first is stored as a new event. Plain tables find every duplicate.
 */
export const idempotencyWindowMs = 86_400_000
const dayMs = 86_400_000

export interface InsertedEventRows {
  results: InsertEventResult[]
  /** `pg_current_xact_id()` of the statement's transaction, when it has checks and wrote deliveries. */
  xact?: string
}

/** The statement wrote nothing: these checks did not hold. */
export interface RefusedEventRows {
  refused: string[]
}

/**
 * One statement (atomic by itself, no BEGIN/COMMIT round trips): the events, then deliveries of the inserted ones.
 * It holds the tenant and destination rows it writes for (`for key share`: a delete waits, an update does not),
 * so a concurrent delete either removes these rows after commit or committed first and they are not written.
 * It takes no other lock on shared rows, so inside a host's long transaction it blocks no other publish or delivery.
 * `checkValues`: the values of the checks' placeholders.
 */
export async function insertEventRows(
  driver: Driver,
  statements: EventInserts,
  items: NewEventWithDeliveries[],
  checkValues: Record<string, unknown> = {},
  orderNumbers?: (count: number) => Promise<string[]>,
): Promise<InsertedEventRows | RefusedEventRows> {
  const groups = items.map((item, index) => (item.group === undefined ? `item ${index}` : `group ${item.group}`))
  const columns = insertColumns(items, groups)
  if (orderNumbers) {
    // One number for each delivery of an ordering key, in batch order.
    const numbers = await orderNumbers(columns.d_order_key.filter((key) => key !== null).length)
    columns.d_order_seq = columns.d_order_key.map((key) => (key === null ? null : numbers.shift()!))
  }
  const created = items.map((i) => i.event.created_at.getTime())
  const dedup = { dedup_since: iso(new Date(Math.min(...created) - idempotencyWindowMs)), dedup_until: iso(new Date(Math.floor(Math.max(...created) / dayMs) * dayMs)) }
  const written = (await statements.insert(driver, { ...columns, ...dedup, ...checkValues })) as InsertAnswerRow[]
  const answer = readInsertAnswer(written)
  if (answer.refused.length) return { refused: answer.refused }
  const results: InsertEventResult[] = items.map(({ event: e, deliveries }, index) => {
    const missingTenant = answer.missing.get(groups[index]!)
    if (missingTenant !== undefined) return { duplicate: false, destination_ids: [], missing_tenant: missingTenant }
    if (!answer.fresh.delete(`${e.tenant_id}\u0000${e.id}`)) return { duplicate: true, destination_ids: [] }
    return { duplicate: false, destination_ids: deliveries.map((d) => d.destination_id).filter((id) => answer.delivered.has(`${e.tenant_id}\u0000${e.id}\u0000${id}`)) }
  })
  for (const [index, r] of results.entries()) {
    if (!r.duplicate) continue
    const { tenant_id, id } = items[index]!.event
    const existing = await statements.existing(driver, { tenant: tenant_id, event: id })
    r.destination_ids = existing.map(([destinationId]) => destinationId as string)
  }
  return { results, xact: answer.xact }
}

/** The insert's text-array parameters: a column of the events, then of their deliveries (`groups`: each item's group). */
function insertColumns(items: NewEventWithDeliveries[], groups: string[]): Record<Exclude<InsertColumn, 'd_order_seq'>, (string | null)[]> & { d_order_seq?: (string | null)[] } {
  const events = items.map((i) => i.event)
  // The same id twice in one batch: only the first occurrence may bring deliveries.
  const firsts = new Set<string>()
  const rows: { e: (typeof events)[number]; d: NewEventWithDeliveries['deliveries'][number] }[] = []
  for (const { event: e, deliveries } of items) {
    const key = `${e.tenant_id}\u0000${e.id}`
    if (firsts.has(key)) continue
    firsts.add(key)
    for (const d of deliveries) rows.push({ e, d })
  }
  return {
    e_tenant: events.map((e) => e.tenant_id),
    e_id: events.map((e) => e.id),
    e_topic: events.map((e) => e.topic),
    e_time: events.map((e) => iso(e.time)),
    e_data: events.map((e) => {
      // The worker attempts a local publish's deliveries with this event in memory: it sends the text stored.
      const text = JSON.stringify(e.data)
      e.data_json = text
      return text
    }),
    e_metadata: events.map((e) => JSON.stringify(e.metadata)),
    e_retry: events.map((e) => (e.eligible_for_retry ? 't' : 'f')),
    e_created: events.map((e) => iso(e.created_at)),
    e_group: groups,
    e_schema_valid: events.map((e) => (e.schema_valid === undefined ? null : e.schema_valid ? 't' : 'f')),
    d_id: rows.map((r) => r.d.id),
    d_tenant: rows.map((r) => r.e.tenant_id),
    d_event: rows.map((r) => r.e.id),
    d_destination: rows.map((r) => r.d.destination_id),
    d_topic: rows.map((r) => r.e.topic),
    d_event_time: rows.map((r) => iso(r.e.time)),
    d_next: rows.map((r) => (r.d.skipped || r.d.order_key !== undefined ? null : iso(r.d.next_attempt_at))),
    d_lease_owner: rows.map((r) => r.d.lease_owner ?? null),
    d_lease_until: rows.map((r) => iso(r.d.lease_until)),
    d_status: rows.map((r) => (r.d.skipped ? 'skipped' : 'pending')),
    d_skipped_at: rows.map((r) => (r.d.skipped ? iso(r.e.created_at) : null)),
    d_order_key: rows.map((r) => (r.d.skipped ? null : (r.d.order_key ?? null))),
    d_event_created: rows.map((r) => iso(r.e.created_at)),
  }
}

/** A row of the insert's answer (see the final select of eventInsertStatement). */
type InsertAnswerRow = [kind: string, tenant_id: string, ref: string, destination_id: string | null]

/** The insert's answer, by kind: events and deliveries written, groups of a missing tenant, the transaction, checks refused. */
function readInsertAnswer(written: InsertAnswerRow[]) {
  const fresh = new Set<string>()
  const delivered = new Set<string>()
  const missing = new Map<string, string>()
  let xact: string | undefined
  const refused: string[] = []
  for (const [kind, tenantId, ref, destinationId] of written) {
    if (kind === 'event') fresh.add(`${tenantId}\u0000${ref}`)
    else if (kind === 'delivery') delivered.add(`${tenantId}\u0000${ref}\u0000${destinationId}`)
    else if (kind === 'orphaned') missing.set(ref, tenantId)
    else if (kind === 'xact') xact = tenantId
    else if (kind === 'refused') refused.push(tenantId)
  }
  return { fresh, delivered, missing, xact, refused }
}
