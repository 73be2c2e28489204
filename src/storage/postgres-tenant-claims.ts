import { sql, type SQL } from 'drizzle-orm'
import type PostgresJs from 'postgres'
import type { Tables } from './sql-context.js'
import { asyncCommit, iso, onShardOf, prepared, slot, type Driver } from './postgres-prepared.js'
import { claimedDelivery } from './postgres-queue.js'
import type { ClaimRequest, ClaimedDelivery } from './storage.js'

// Claims per tenant (the `tenantClaims` option; what Citus needs, where `FOR UPDATE SKIP LOCKED` runs only in a
// statement that names its tenants: issue 31 part 5, docs/citus.md › The claim).
//
// `due_tenants` holds each tenant that may have a delivery due, at a time no later than its earliest (early only
// costs an empty claim). A trigger on deliveries keeps it so for every write that makes a delivery due sooner:
// a publish, a retry scheduled, a lease released, a manual retry, a FIFO successor promoted, a replay handed out.
// A claim reads the earliest due tenants (no lock), then leases their due deliveries in one statement that names
// them. A tenant whose due deliveries it all took is "settled": its row moves to its next due time, or goes.
//
// The race a settle must not lose: a publish not yet committed saw the tenant's row due and left it, and the
// settle's snapshot misses the new delivery. So the trigger takes the row `for key share` when it leaves it, and
// the settle takes it `for update skip locked`: a row with a publish in flight is not settled now (it is due anyway),
// and a publish that comes after the settle's lock waits for its commit and then lowers the row it finds.

/** Tenants read per claim round; a random part of the earliest twice as many, so instances spread over them. */
const tenantsPerRound = 32
/** Rounds of (tenants read, claim) one claim makes at most: up to 8 × 32 tenants. */
const roundsPerClaim = 8
/** A settle reads a tenant's first pending deliveries (in due order) to find when the next falls due. */
const settleWindow = 100

/** Made at `migrate()` while the option is on, dropped while it is off: the trigger, its index, the table filled. */
export async function prepareTenantClaims(client: PostgresJs.Sql, schema: string, on: boolean, citus = false): Promise<void> {
  const s = `"${schema}"`
  const [{ triggers } = { triggers: 0 }] = await client<{ triggers: number }[]>`
    select count(*)::int as triggers from pg_trigger
    where tgrelid = ${`${s}.deliveries`}::regclass and tgname in ('outflow_tenant_due_insert', 'outflow_tenant_due_update')`
  // Nothing to change: no DDL, so no lock on deliveries at every engine's start.
  if (triggers === (on ? 2 : 0)) return
  const [{ moved } = { moved: false }] = await client<{ moved: boolean }[]>`select to_regclass(${`${s}.deliveries_unpartitioned`}) is not null as moved`
  await client.begin(async (tx) => {
    // On distributed tables Citus makes the trigger on every shard only when told it is safe (it writes only its own
    // tenant's due_tenants row, on the same shard group), and makes the function after the index only when the
    // transaction's work on the shards went one shard at a time.
    if (citus) await tx.unsafe(`set local citus.enable_unsafe_triggers = on; set local citus.multi_shard_modify_mode = 'sequential'`)
    // A table moved under the partitioned layout (postgres-partition-move.ts) kept its own: the parent's replace them.
    for (const table of moved ? ['deliveries', 'deliveries_unpartitioned'] : ['deliveries']) {
      await tx.unsafe(`drop trigger if exists outflow_tenant_due_insert on ${s}.${table}`)
      await tx.unsafe(`drop trigger if exists outflow_tenant_due_update on ${s}.${table}`)
    }
    if (!on) {
      await tx.unsafe(`delete from ${s}.due_tenants`)
      return
    }
    await tx.unsafe(`create index if not exists deliveries_tenant_due_idx on ${s}.deliveries (tenant_id, next_attempt_at) where status = 'pending'`)
    // A row already due at or before this delivery is held (key share) until the write commits; else it is made
    // or lowered. A delivery leased is due when its lease ends.
    await tx.unsafe(`
      create or replace function ${s}.outflow_mark_tenant_due() returns trigger language plpgsql as $$
      declare due timestamptz := greatest(new.next_attempt_at, new.lease_until);
      begin
        perform 1 from ${s}.due_tenants where tenant_id = new.tenant_id and due_at <= due for key share;
        if not found then
          insert into ${s}.due_tenants as u (tenant_id, due_at) values (new.tenant_id, due)
          on conflict (tenant_id) do update set due_at = excluded.due_at where u.due_at > excluded.due_at;
        end if;
        return null;
      end $$`)
    const pending = `new.status = 'pending' and new.next_attempt_at is not null`
    await tx.unsafe(`create trigger outflow_tenant_due_insert after insert on ${s}.deliveries for each row when (${pending}) execute function ${s}.outflow_mark_tenant_due()`)
    // Only writes that make a delivery due sooner than it was: not a claim (a lease set), not a lease extended.
    await tx.unsafe(`
      create trigger outflow_tenant_due_update after update of status, next_attempt_at, lease_until on ${s}.deliveries for each row
      when (${pending} and (old.status <> 'pending' or old.next_attempt_at is null
        or greatest(new.next_attempt_at, new.lease_until) < greatest(old.next_attempt_at, old.lease_until)))
      execute function ${s}.outflow_mark_tenant_due()`)
    await tx.unsafe(`
      insert into ${s}.due_tenants as u (tenant_id, due_at)
      select tenant_id, min(greatest(next_attempt_at, lease_until)) from ${s}.deliveries
      where status = 'pending' and next_attempt_at is not null group by tenant_id
      on conflict (tenant_id) do update set due_at = least(u.due_at, excluded.due_at)`)
  })
}

/**
 * The claim of the `tenantClaims` option: see the top of this file. On Citus (due_tenants distributed) the tenants
 * of a round are claimed in groups of one shard each: a statement with row locks must stay on one shard.
 */
export function tenantClaims(t: Tables, driver: Driver, transactions: PostgresJs.Sql, run: <T>(work: () => Promise<T>) => Promise<T>, schema: string) {
  const pickOf = (shard: SQL) =>
    prepared<'now' | 'count' | 'tried'>(sql`
      select tenant_id, ${shard} from ${t.due_tenants} where due_at <= ${slot('now')}::timestamptz and tenant_id <> all(${slot('tried')}::text[])
      order by due_at, tenant_id limit ${slot('count')}::int`)
  const plain = { pick: pickOf(sql`0::bigint`), claim: claimStatement(t, false), settle: settleStatement(t, false) }
  const citus = { pick: pickOf(sql`get_shard_id_for_distribution_column(${`"${schema}".due_tenants`}::regclass, tenant_id)`), claim: claimStatement(t, true), settle: settleStatement(t, true) }
  let distributed: Promise<boolean> | undefined
  /** One group's claim, settled when it got fewer than it asked for (each tenant gave all it had claimable). */
  const claimGroup = async ({ claim, settle }: typeof plain, tenants: string[], q: ClaimRequest, limit: number): Promise<ClaimedDelivery[]> => {
    const rows = await run(() => claim(driver, { tenants, now: iso(q.now), limit, owner: q.owner, until: iso(q.leaseUntil) }))
    if (rows.length < limit) await run(() => settle(transactions, tenants))
    // Without its due time, so the worker's window stays off (see ClaimWindow).
    return rows.map((row) => ({ ...claimedDelivery(row), due_at: undefined }))
  }
  // The worker's claim window (`dueSince`) is left aside: it bounds the scan of the one global due index in due
  // order, while these claims go tenant by tenant, each from its earliest (a window taken from their due times hid
  // every earlier tenant's work until the next full claim: 319 deliveries/s instead of 2,900 over 1,000 tenants).
  // A claim goes on to more tenants until it has `limit` or no due tenant is left, so a short claim means caught up.
  return async function claimDueDeliveries(q: ClaimRequest): Promise<ClaimedDelivery[]> {
    distributed ??= run(() => onCitus(transactions, schema)).catch((err: unknown) => {
      distributed = undefined
      throw err
    })
    const statements = (await distributed) ? citus : plain
    const { pick } = statements
    const claimed: ClaimedDelivery[] = []
    const tried: string[] = []
    for (let round = 0; round < roundsPerClaim && claimed.length < q.limit; round++) {
      const due = (await run(() => pick(driver, { now: iso(q.now), count: tenantsPerRound * 2, tried }))).map(([tenant, shard]) => ({ tenant: tenant as string, shard: String(shard) }))
      if (due.length === 0) break
      const chosen = spread(due, tenantsPerRound)
      tried.push(...chosen.map((c) => c.tenant))
      const groups = new Map<string, string[]>()
      for (const { tenant, shard } of chosen) groups.set(shard, [...(groups.get(shard) ?? []), tenant])
      for (const tenants of groups.values()) {
        if (claimed.length >= q.limit) break
        claimed.push(...(await claimGroup(statements, tenants, q, q.limit - claimed.length)))
      }
      if (due.length < tenantsPerRound * 2 && chosen.length === due.length) break
    }
    return claimed
  }
}

/** Whether due_tenants is a Citus distributed table (the Citus extension is there and distributed it). */
async function onCitus(sql: PostgresJs.Sql, schema: string): Promise<boolean> {
  const [{ citus } = { citus: false }] = await sql<{ citus: boolean }[]>`select exists (select 1 from pg_extension where extname = 'citus') as citus`
  if (!citus) return false
  const [{ found } = { found: false }] = await sql<{ found: boolean }[]>`
    select exists (select 1 from pg_dist_partition where logicalrelid = ${`"${schema}".due_tenants`}::regclass) as found`
  return found
}

/** `count` of `due` (in due order), a random part of them when there are more. */
function spread<T>(due: T[], count: number): T[] {
  if (due.length <= count) return due
  const kept = new Set<number>()
  while (kept.size < count) kept.add(Math.floor(Math.random() * due.length))
  return due.filter((_, i) => kept.has(i))
}

/**
 * Lease up to `limit` due deliveries of the named tenants (the earliest due tenant first, each tenant's earliest
 * first), skipping rows another instance is claiming, and return them with their events.
 *
 * `shard` (Citus): every table also read by the named tenants (`= any(…)`), so the statement runs on the one shard
 * they share. Without Citus that filter stays out: as an index condition beside `tenant_id = n.tenant_id` it made
 * the tenant index look 32 times as costly, and on a table whose statistics lagged a burst of publishes the planner
 * read the global due index instead, all of it for each tenant (a claim of 200 over 1,000 tenants took 65 ms
 * instead of 5, and the drain went at half the global claim's rate).
 */
function claimStatement(t: Tables, shard: boolean) {
  return prepared<'tenants' | 'now' | 'limit' | 'owner' | 'until'>(sql`
    with picked as materialized (
      select d.tenant_id, d.id from unnest(${slot('tenants')}::text[]) as n(tenant_id)
      cross join lateral (
        select tenant_id, id from ${t.deliveries} d
        where d.tenant_id = n.tenant_id ${onShardOf(shard)('d')} and d.status = 'pending'
          and d.next_attempt_at <= ${slot('now')}::timestamptz and (d.lease_until is null or d.lease_until < ${slot('now')}::timestamptz)
        order by d.next_attempt_at limit ${slot('limit')}::int
        for update skip locked
      ) d
      limit ${slot('limit')}::int
    ), leased as (
      update ${t.deliveries} d set lease_owner = ${slot('owner')}::text, lease_until = ${slot('until')}::timestamptz
      from picked where d.tenant_id = picked.tenant_id and d.id = picked.id ${onShardOf(shard)('d')} and ${asyncCommit}
      returning d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.manual, d.replay_job, d.order_key, d.next_attempt_at
    )
    select l.id, l.tenant_id, l.event_id, l.destination_id, l.attempt_count, l.manual, l.replay_job, l.order_key,
      e.topic, e.time, e.data, e.metadata, e.eligible_for_retry, e.created_at, l.next_attempt_at
    from leased l join ${t.events} e on e.tenant_id = l.tenant_id and e.id = l.event_id ${onShardOf(shard)('e')}`)
}

/**
 * Each named tenant's row moves to when its next pending delivery falls due (a leased one when its lease ends),
 * or goes when it has none. Rows with a publish in flight (key share) are skipped. Read in a second statement
 * of the transaction, after the locks: it sees every write committed before them.
 */
function settleStatement(t: Tables, shard: boolean) {
  const lock = prepared<'tenants'>(sql`
    select tenant_id from ${t.due_tenants} where tenant_id = any(${slot('tenants')}::text[]) order by tenant_id for update skip locked`)
  const move = prepared<'tenants'>(sql`
    with next as (
      select n.tenant_id, f.due from unnest(${slot('tenants')}::text[]) as n(tenant_id)
      cross join lateral (
        -- The first deliveries in due order: past them, the earliest any other can be is the last one's due time.
        select case when count(*) = ${sql.raw(String(settleWindow))} then least(min(greatest(w.next_attempt_at, w.lease_until)), max(w.next_attempt_at))
          else min(greatest(w.next_attempt_at, w.lease_until)) end as due
        from (
          select next_attempt_at, lease_until from ${t.deliveries} d
          where d.tenant_id = n.tenant_id ${onShardOf(shard)('d')} and d.status = 'pending' and d.next_attempt_at is not null
          order by d.next_attempt_at limit ${sql.raw(String(settleWindow))}
        ) w
      ) f
    ), moved as (
      update ${t.due_tenants} u set due_at = next.due from next
      where u.tenant_id = next.tenant_id and u.tenant_id = any(${slot('tenants')}::text[]) and next.due is not null and u.due_at < next.due
    )
    delete from ${t.due_tenants} u using next
    where u.tenant_id = next.tenant_id and u.tenant_id = any(${slot('tenants')}::text[]) and next.due is null`)
  return (transactions: PostgresJs.Sql, tenants: string[]) =>
    transactions.begin(async (tx) => {
      const driver = tx as unknown as Driver
      const locked = (await lock(driver, { tenants })).map(([tenant]) => tenant as string)
      if (locked.length > 0) await move(driver, { tenants: locked })
    })
}
