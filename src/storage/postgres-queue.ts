import { sql } from 'drizzle-orm'
import type { Tables } from './sql-context.js'
import { asyncCommit, column, iso, prepared, slot, type Driver } from './postgres-prepared.js'
import { onShardOf } from './postgres-prepared.js'
import { partitionedClaimStatement, createdBounds } from './postgres-partitioned-claim.js'
import type { PlanOnce, PlanOnceUse } from './postgres-plan-once.js'
import type { AttemptWrite, ClaimRequest, ClaimedDelivery, DestinationRecord, DestinationStreak, EventRecord } from './storage.js'

// The calls every publish and every batch of deliveries makes on Postgres, each one prepared statement:
// atomic by itself, so no BEGIN/COMMIT round trips, and after a connection's first run a single round
// trip. What they write (leases, attempt results) commits without waiting for the WAL flush (asyncCommit).

/** The calls of the Storage port these statements serve. */
export type PostgresQueue = ReturnType<typeof postgresQueue>

/** The statements of this file with a plan-once function (see postgres-hot-statements.ts): the publish targets' read on either layout, the rest on the plain one. */
export type QueueStatements = Record<'claim' | 'claimWindow' | 'results' | 'targets', PlanOnce<string>>

/**
 * @param driver the engine's pool
 * @param run bounds each call by the storage deadline and maps connection faults (see postgres.ts)
 * @param partitioned whether the tables have the partitioned layout (postgres-partitions.ts): claims go through its function
 * @param hot the statements with a plan-once function, and whether to use those now (postgres-plan-once.ts)
 */
export function postgresQueue(
  t: Tables,
  driver: Driver,
  run: <T>(work: () => Promise<T>) => Promise<T>,
  partitioned: () => Promise<boolean>,
  hot: { statements: QueueStatements; use: PlanOnceUse },
) {
  const { claim, claimWindow, results: record, targets } = hot.statements
  const via = (partitionedToo = false) => hot.use.viaFunctions(partitionedToo)
  const missing = () => hot.use.missing()
  const claimPartitioned = partitionedClaimStatement(t)
  // The partitioned layout: each statement reads only the days its deliveries' ids carry (createdBounds).
  const recordDays = recordStatement(t, { days: true, fifo: false })
  const recordDaysFifo = recordStatement(t, { days: true, fifo: true })
  const extend = extendStatement(t, false)
  const extendDays = extendStatement(t, true)
  return {
    async publishTargets(tenantIds: string[]): Promise<Map<string, DestinationRecord[]>> {
      // Whether to go through the function is read within the caller's bound: a publish waits for nothing longer.
      const rows = await run(async () => targets.run(driver, { ids: tenantIds }, await via(true), missing))
      const result = new Map<string, DestinationRecord[]>()
      for (const [tenant, ...columns] of rows) {
        const list = result.get(tenant as string) ?? []
        result.set(tenant as string, list)
        if (columns[0] !== null) list.push(Object.fromEntries(destinationColumns.map((name, i) => [name, columns[i]])) as unknown as DestinationRecord)
      }
      return result
    },

    async claimDueDeliveries(q: ClaimRequest): Promise<ClaimedDelivery[]> {
      const values = { now: iso(q.now), since: iso(q.dueSince), limit: q.limit, owner: q.owner, until: iso(q.leaseUntil) }
      if (await partitioned()) return (await run(() => claimPartitioned(driver, values))).map(claimedDelivery)
      const rows = await run(async () => (q.dueSince ? claimWindow : claim).run(driver, values, await via(), missing))
      return rows.map(claimedDelivery)
    },

    async recordAttempts(writes: AttemptWrite[]): Promise<DestinationStreak[]> {
      if (writes.length === 0) return []
      const keys = orderKeys(writes)
      const values = { ...attemptColumns(writes), ...keys, ...createdBounds(writes.map((w) => w.delivery.id)), tenants: null }
      if (!(await partitioned())) {
        return (await run(async () => record.run(driver, values, await via(), missing))).map(destinationStreak)
      }
      const statement = keys.key.length ? recordDaysFifo : recordDays
      const rows = await run(() => statement(driver, values))
      return rows.map(destinationStreak)
    },

    async extendLeases(owner: string, ids: string[], leaseUntil: Date): Promise<number> {
      if (ids.length === 0) return 0
      const statement = (await partitioned()) ? extendDays : extend
      const rows = await run(() => statement(driver, { owner, ids, until: iso(leaseUntil), ...createdBounds(ids) }))
      return rows.length
    },
  }
}

const destinationColumns = [
  'tenant_id', 'id', 'type', 'topics', 'filter', 'config', 'credentials', 'delivery_metadata', 'metadata',
  'disabled_at', 'created_at', 'updated_at', 'consecutive_failures', 'delivery',
] as const satisfies readonly (keyof DestinationRecord)[]

/** Each tenant with each of its destinations (once with nulls if it has none), oldest destination first; unknown tenants absent. */
export function targetsStatement(t: Tables) {
  return prepared<'ids'>(sql`
    select tn.id, ${sql.raw(destinationColumns.map((c) => `d.${c}`).join(', '))}
    from ${t.tenants} tn left join ${t.destinations} d on d.tenant_id = tn.id
    where tn.id = any(${slot('ids')}::text[])
    order by d.created_at, d.id`)
}

/**
 * Lease up to `limit` due deliveries nobody holds, skipping rows another instance is claiming right now, and
 * return them with their events. `windowed`: only those due since `since` (the worker's claim window).
 */
export function claimStatement(t: Tables, windowed: boolean) {
  return prepared<'now' | 'since' | 'limit' | 'owner' | 'until'>(sql`
    with picked as materialized (
      select id from ${t.deliveries}
      where status = 'pending' and next_attempt_at <= ${slot('now')}::timestamptz${windowed ? sql` and next_attempt_at >= ${slot('since')}::timestamptz` : sql``}
        and (lease_until is null or lease_until < ${slot('now')}::timestamptz)
      order by next_attempt_at limit ${slot('limit')}::int
      for update skip locked
    ), leased as (
      update ${t.deliveries} d set lease_owner = ${slot('owner')}::text, lease_until = ${slot('until')}::timestamptz
      from picked where d.id = picked.id and ${asyncCommit}
      returning d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.manual, d.replay_job, d.order_key, d.next_attempt_at
    )
    select l.id, l.tenant_id, l.event_id, l.destination_id, l.attempt_count, l.manual, l.replay_job, l.order_key,
      e.topic, e.time, e.data, e.metadata, e.eligible_for_retry, e.created_at, l.next_attempt_at
    from leased l join ${t.events} e on e.tenant_id = l.tenant_id and e.id = l.event_id`)
}

/** A row of a claim statement (its select list, in this order) as the worker takes it. */
export function claimedDelivery(row: unknown[]): ClaimedDelivery {
  const [id, tenant_id, event_id, destination_id, attempt_count, manual, replay_job, order_key, topic, time, data, metadata, eligible_for_retry, created_at, due_at] = row
  const event = { tenant_id, id: event_id, topic, time, data, metadata, eligible_for_retry, created_at } as EventRecord
  return {
    id: id as string,
    tenant_id: tenant_id as string,
    event_id: event_id as string,
    destination_id: destination_id as string,
    attempt_count: attempt_count as number,
    manual: manual as boolean,
    ...(replay_job ? { replay: true } : {}),
    order_key: order_key as string | null,
    due_at: due_at as Date,
    event,
  }
}

/** FIFO destinations: the keys of the batch's finished deliveries, each of which lets the next one of its key go. */
export function orderKeys(writes: AttemptWrite[]) {
  const finished = writes.filter(({ delivery }) => delivery.order_key != null && delivery.status !== 'pending')
  return {
    key_tenant: finished.map((w) => w.attempt.tenant_id),
    key_destination: finished.map((w) => w.attempt.destination_id),
    key: finished.map((w) => w.delivery.order_key!),
    now: iso(writes[0]!.attempt.delivered_at),
  }
}

export const destinationStreak = ([tenant_id, destination_id, consecutive_failures]: unknown[]): DestinationStreak => ({
  tenant_id: tenant_id as string,
  destination_id: destination_id as string,
  consecutive_failures: consecutive_failures as number,
})

/** The batch as one text array per column, in batch order. */
export function attemptColumns(writes: AttemptWrite[]) {
  const of = <T>(pick: (w: AttemptWrite) => T) => writes.map(pick)
  const text = (n: number | null) => (n === null ? null : String(n))
  return {
    delivery_id: of((w) => w.delivery.id),
    delivery_status: of((w) => w.delivery.status),
    next_at: of((w) => iso(w.delivery.next_attempt_at)),
    successful_at: of((w) => iso(w.delivery.successful_at)),
    id: of((w) => w.attempt.id),
    tenant_id: of((w) => w.attempt.tenant_id),
    event_id: of((w) => w.attempt.event_id),
    destination_id: of((w) => w.attempt.destination_id),
    attempt_number: of((w) => String(w.attempt.attempt_number)),
    manual: of((w) => (w.attempt.manual ? 't' : 'f')),
    status: of((w) => w.attempt.status),
    response_status_code: of((w) => text(w.attempt.response_status_code)),
    response_body: of((w) => w.attempt.response_body),
    response_headers: of((w) => (w.attempt.response_headers === null ? null : JSON.stringify(w.attempt.response_headers))),
    error: of((w) => w.attempt.error),
    error_kind: of((w) => w.attempt.error_kind),
    duration_ms: of((w) => text(w.attempt.duration_ms)),
    delivered_at: of((w) => iso(w.attempt.delivered_at)),
    topic: of((w) => w.attempt.topic),
    destination_type: of((w) => w.attempt.destination_type),
  }
}

type AttemptColumn = keyof ReturnType<typeof attemptColumns>

/**
 * One statement for a batch of attempt results: each delivery moves to its next state, its attempt is logged,
 * and each destination's failure streak counts the batch's failures after its last success (a success resets
 * it). Attempts already logged are skipped with their delivery and their streak: the worker writes results
 * again after a write failed on a lost connection or its deadline, and such a write may have committed after
 * all, so writing a batch twice changes nothing. A delivery cancelled or erased meanwhile stays so.
 * Returns each destination of the batch that exists with its streak.
 */
export function recordStatement(t: Tables, variant: Variant) {
  return prepared<AttemptColumn | 'key_tenant' | 'key_destination' | 'key' | 'now' | 'lo' | 'hi' | 'tenants'>(sql`
    with ${resultsInput()}, ${resultLocks(t, variant)}, ${resultWrites(t, variant)}, ${streakWrites(t, variant.shard ?? false)}
    select tenant_id, id, consecutive_failures from counted
    union all
    select d.tenant_id, d.id, d.consecutive_failures from ${t.destinations} d
    where (d.tenant_id, d.id) in (select tenant_id, destination_id from v) and (d.tenant_id, d.id) not in (select tenant_id, id from counted)${onShardOf(variant.shard ?? false)('d')}`)
}

/**
 * `days`: the rows of the batch are looked for only in the days its delivery ids carry (partitioned layout),
 * `fifo`: the batch finished deliveries of ordering keys, whose next deliveries (in any day) it makes due.
 */
export interface Variant {
  days: boolean
  fifo: boolean
  /** On Citus: the batch is one shard's, every table is read by its tenants (`tenants`) too. */
  shard?: boolean
  /** Whether the statement takes its row locks (default true; on Citus a statement of its own takes them first). */
  locks?: boolean
  /** Whether the statement logs the attempts it wrote (default true; on Citus a statement of its own does). */
  logs?: boolean
}

/** The condition that keeps `alias`'s rows to the batch's days (see createdBounds), on the partitioned layout. */
const within = (alias: string, days: boolean) =>
  days ? sql` and ${sql.raw(alias)}.event_created_at between ${slot('lo')}::timestamptz and ${slot('hi')}::timestamptz` : sql``

/** The batch (`v`), one row per attempt in batch order (`ord`), from its text-array columns. */
export function resultsInput() {
  const c = (name: AttemptColumn, type: string) => column(name, type)
  return sql`v as (
      select * from unnest(${c('delivery_id', 'text')}, ${c('delivery_status', 'text')}, ${c('next_at', 'timestamptz')}, ${c('successful_at', 'timestamptz')},
        ${c('id', 'text')}, ${c('tenant_id', 'text')}, ${c('event_id', 'text')}, ${c('destination_id', 'text')}, ${c('attempt_number', 'int')},
        ${c('manual', 'bool')}, ${c('status', 'text')}, ${c('response_status_code', 'int')}, ${c('response_body', 'text')}, ${c('response_headers', 'jsonb')},
        ${c('error', 'text')}, ${c('error_kind', 'text')}, ${c('duration_ms', 'int')}, ${c('delivered_at', 'timestamptz')}, ${c('topic', 'text')},
        ${c('destination_type', 'text')})
        with ordinality as v(delivery_id, delivery_status, next_at, successful_at, id, tenant_id, event_id, destination_id, attempt_number, manual, status,
          response_status_code, response_body, response_headers, error, error_kind, duration_ms, delivered_at, topic, destination_type, ord)
    )`
}

/**
 * Locks, in the order deleteTenant and deleteDestination take them (no deadlock): the destinations whose streak
 * may change (`held`), by key (not the healthy ones with only successes: a hot row is not written), then the
 * deliveries (the batch's and the heads it promotes) by id. Streak updates take `for no key update`, which lets
 * publishes (`for key share`) through.
 *
 * FIFO destinations: for each key of a delivery the batch finished (`key_*`), the first delivery still pending
 * (the batch's finished ones are still pending in the statement's snapshot: left out) is the key's head.
 */
export function resultLocks(t: Tables, { days, fifo, shard = false, locks = true }: Variant) {
  const of = onShardOf(shard)
  const hold = (lock: string) => sql.raw(locks ? `\n      ${lock}` : '')
  return sql`held as materialized (
      select d.tenant_id, d.id from ${t.destinations} d
      where (d.tenant_id, d.id) in (select tenant_id, destination_id from v)${of('d')}
        and (d.consecutive_failures <> 0 or (d.tenant_id, d.id) in (select tenant_id, destination_id from v where status <> 'success'))
      order by d.tenant_id collate "C", d.id collate "C"${hold('for no key update of d')}
    ), ${fifo ? heads(t, shard) : sql`heads as (select null::text as tenant_id, null::text as id where false)`}, locked as materialized (
      -- After the destinations: a condition without columns is evaluated before the first row is locked.
      -- Arrays of ids and of their tenants, so the rows are found by the primary key (id, tenant_id) even in a plan
      -- made before the table had statistics: an OR of two IN subqueries, or the ids alone, was a sequential scan
      -- of the whole table for every write of results.
      select id from ${t.deliveries} d where id = any(array(select delivery_id from v union select id from heads where id is not null))
        and tenant_id = any(array(select tenant_id from v union select tenant_id from heads where id is not null))
        and (select count(*) from held) >= 0${within('d', days && !fifo)}${of('d')}
      order by id${sql.raw(locks ? ' for update' : '')}
    )`
}

/** The first pending delivery of each key whose delivery the batch finished (see resultLocks). */
function heads(t: Tables, shard: boolean) {
  // On Citus a lateral join: it refuses a correlated subquery over a set-returning function.
  if (shard)
    return sql`heads as (
      select k.tenant_id, h.id from (select distinct * from unnest(${column('key_tenant', 'text')}, ${column('key_destination', 'text')}, ${column('key', 'text')})) as k(tenant_id, destination_id, order_key)
      cross join lateral (
        select h.id from ${t.deliveries} h where h.tenant_id = k.tenant_id and h.destination_id = k.destination_id and h.order_key = k.order_key
          and h.status = 'pending' and h.id not in (select delivery_id from v where delivery_status <> 'pending')${onShardOf(true)('h')} order by h.order_seq limit 1
      ) h
    )`
  return sql`heads as (
      select k.tenant_id, (select h.id from ${t.deliveries} h where h.tenant_id = k.tenant_id and h.destination_id = k.destination_id and h.order_key = k.order_key
          and h.status = 'pending' and h.id not in (select delivery_id from v where delivery_status <> 'pending') order by h.order_seq limit 1) as id
      from (select distinct * from unnest(${column('key_tenant', 'text')}, ${column('key_destination', 'text')}, ${column('key', 'text')})) as k(tenant_id, destination_id, order_key)
    )`
}

/**
 * The writes: each FIFO head that is waiting is made due (see sql-ordering.ts), in the same statement, so the
 * next delivery of a key is due once the result that lets it go is visible, and no sooner. No NOTIFY: the
 * worker that wrote the result claims right after it. (A wake-up sent at the commit can start a claim before the
 * write's answer is handled, while the worker still holds the batch: a retry of the batch due by then is
 * claimed, skipped as held, and waits for its lease.) Then the deliveries' new states and the attempts' log rows.
 */
export function resultWrites(t: Tables, { days, fifo, shard = false, logs = true }: Variant) {
  const of = onShardOf(shard)
  const promoted = sql`promoted as (
      update ${t.deliveries} d set order_state = null, next_attempt_at = ${slot('now')}::timestamptz
      where d.id in (select id from heads) and d.id in (select id from locked) and d.order_state = 'waiting'${of('d')}
      returning d.id
    ), `
  return sql`${fifo ? promoted : sql``}updated as (
      update ${t.deliveries} d set
        status = case when d.status in ('cancelled', 'expunged') then d.status else v.delivery_status end,
        attempt_count = d.attempt_count + 1,
        manual = false,
        next_attempt_at = case when d.status in ('cancelled', 'expunged') then null else v.next_at end,
        lease_owner = null,
        lease_until = null,
        last_attempt_at = v.delivered_at,
        successful_at = coalesce(d.successful_at, v.successful_at),
        skipped_at = null
      from v
      where d.id = v.delivery_id and d.tenant_id = v.tenant_id and d.id in (select id from locked) and ${asyncCommit}${within('d', days)}${of('d')}
        and not exists (select 1 from ${t.attempts} done where done.id = v.id and done.tenant_id = v.tenant_id${within('done', days)}${of('done')})
      returning d.id, d.event_created_at, d.status as delivery_now
    ), written as (
      select v.*, u.event_created_at, u.delivery_now from v join updated u on u.id = v.delivery_id
      where not exists (select 1 from ${t.attempts} done where done.id = v.id and done.tenant_id = v.tenant_id${within('done', days)}${of('done')})
    )${logs ? attemptLog(t) : sql``}`
}

/** The attempts `written` goes into the log. */
function attemptLog(t: Tables) {
  return sql`, logged as (
      -- event_created_at: the attempt goes to its event's day partition on the partitioned layout. An attempt of an
      -- event erased while it was in flight keeps no response body.
      insert into ${t.attempts} (id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status,
        response_status_code, response_body, response_headers, error, error_kind, duration_ms, delivered_at, topic, destination_type, event_created_at)
      select id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status,
        response_status_code, case when delivery_now = 'expunged' then null else response_body end, response_headers, error, error_kind, duration_ms, delivered_at, topic, destination_type, event_created_at
      from written
    )`
}

/** Each destination's streak after the batch (`counted`), written only to the destinations `held`. */
export function streakWrites(t: Tables, shard: boolean) {
  return sql`streak as (
      select w.tenant_id, w.destination_id, ok.last is not null as reset,
        count(*) filter (where w.status <> 'success' and w.ord > coalesce(ok.last, 0)) as failures
      from written w left join (select tenant_id, destination_id, max(ord) as last from written where status = 'success' group by 1, 2) ok
        on ok.tenant_id = w.tenant_id and ok.destination_id = w.destination_id
      group by 1, 2, 3
    ), counted as (
      update ${t.destinations} d set consecutive_failures = case when s.reset then s.failures else d.consecutive_failures + s.failures end
      from streak s
      where d.tenant_id = s.tenant_id and d.id = s.destination_id and (d.tenant_id, d.id) in (select tenant_id, id from held)${onShardOf(shard)('d')}
      returning d.tenant_id, d.id, d.consecutive_failures
    )`
}

/** Renew this owner's leases of the given pending deliveries; returns the ids renewed. Rows locked in id order. */
function extendStatement(t: Tables, days: boolean) {
  return prepared<'owner' | 'ids' | 'until' | 'lo' | 'hi'>(sql`
    update ${t.deliveries} d set lease_until = ${slot('until')}::timestamptz
    where id in (
      select id from ${t.deliveries} d where id = any(${slot('ids')}::text[]) and lease_owner = ${slot('owner')}::text and status = 'pending'${within('d', days)}
      order by id for update
    ) and ${asyncCommit}${within('d', days)}
    returning id`)
}
