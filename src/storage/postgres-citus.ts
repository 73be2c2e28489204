import { and, inArray, sql, type SQL } from 'drizzle-orm'
import type PostgresJs from 'postgres'
import type { Db, Tables } from './sql-context.js'
import { column, prepared, slot, type Driver } from './postgres-prepared.js'

// Outflow on Citus (the `citus` option; issue 31 part 5, docs/citus.md). The tables are distributed by tenant,
// co-located, so each tenant's rows live on one shard group. Citus runs a statement that locks rows only when every
// table in it is read on one shard, so what locks rows for a batch of several tenants runs once per shard group,
// naming the group's tenants on every table (`onShardOf`).

/** Tables distributed by tenant_id, co-located with `tenants` (distributed by its id, the tenant). */
const byTenant = ['destinations', 'events', 'deliveries', 'attempts', 'rate_buckets', 'replay_jobs', 'expunge_jobs', 'due_tenants']
/** Tables without a tenant, or read by a key without one: a copy on every node. */
const reference = ['signing_keys', 'portal_codes']

/**
 * Distributes a migrated schema's tables: each tenant's rows on one shard group. Idempotent: a table already
 * distributed is left alone, one not made yet is skipped (an install distributed before the migration that makes
 * it). The migrations record and `delivery_order_seq` stay on the coordinator. Runs before the trigger of claims per
 * tenant is made (prepareTenantClaims), which writes only its own tenant's due_tenants row (co-located).
 */
export async function distributeTables(client: PostgresJs.Sql, schema: string): Promise<void> {
  const tables = await client<{ name: string; distributed: boolean }[]>`
    select c.relname as name, exists (select 1 from pg_dist_partition p where p.logicalrelid = c.oid) as distributed
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where n.nspname = ${schema} and c.relkind in ('r', 'p')`
  // A table a later migration makes (an install distributed before it) is distributed once it exists.
  const undistributed = (table: string) => tables.some((t) => t.name === table && !t.distributed)
  const q = (table: string) => `"${schema}".${table}`
  await client`set citus.enable_unsafe_triggers = on`
  if (undistributed('tenants')) await client`select create_distributed_table(${q('tenants')}, 'id')`
  for (const table of byTenant) {
    if (undistributed(table)) await client`select create_distributed_table(${q(table)}, 'tenant_id', colocate_with => ${q('tenants')})`
  }
  for (const table of reference) if (undistributed(table)) await client`select create_reference_table(${q(table)})`
}

/** Tenants remembered with their shard; past this many the memory starts over. */
const rememberedTenants = 100_000

/**
 * Groups tenants by the shard that holds them (`get_shard_id_for_distribution_column`, asked once per tenant and
 * remembered: a tenant moves to another shard only when its shard is split). Groups come in order of shard, so
 * writes that lock rows group by group take them in one order.
 */
export function shardGroups(driver: Driver, schema: string) {
  const shards = new Map<string, string>()
  const lookup = prepared<'tenants'>(sql`
    select t, get_shard_id_for_distribution_column(${`"${schema}".tenants`}::regclass, t)::text from unnest(${slot('tenants')}::text[]) as t`)
  return {
    async of(tenants: string[]): Promise<string[][]> {
      const unknown = [...new Set(tenants.filter((tenant) => !shards.has(tenant)))]
      if (unknown.length) {
        if (shards.size + unknown.length > rememberedTenants) shards.clear()
        for (const [tenant, shard] of await lookup(driver, { tenants: unknown })) shards.set(tenant as string, shard as string)
      }
      const groups = new Map<string, Set<string>>()
      for (const tenant of tenants) {
        const shard = shards.get(tenant)!
        groups.set(shard, (groups.get(shard) ?? new Set()).add(tenant))
      }
      return [...groups.entries()].sort(([a], [b]) => Number(a) - Number(b)).map(([, group]) => [...group])
    },
    /** `items` in groups of one shard each (by `tenantOf`), with the group's tenants, in order of shard. */
    async split<T>(items: T[], tenantOf: (item: T) => string): Promise<{ tenants: string[]; items: T[] }[]> {
      return (await this.of(items.map(tenantOf))).map((tenants) => {
        const members = new Set(tenants)
        return { tenants, items: items.filter((item) => members.has(tenantOf(item))) }
      })
    },
    /**
     * Runs a statement of one group; if Citus refuses it as not on one shard (a shard was split since its
     * tenants were looked up), every tenant's shard is looked up again from the next call on.
     */
    async checked<T>(statement: () => Promise<T>): Promise<T> {
      try {
        return await statement()
      } catch (err) {
        if (err instanceof Error && err.message.startsWith('could not run distributed query with FOR UPDATE')) shards.clear()
        throw err
      }
    },
  }
}

export type ShardGroups = ReturnType<typeof shardGroups>

/**
 * A publish's row locks on one shard group, in the order deleteTenant takes them: the tenants (`tenants`), then
 * the destinations written for (`d_tenant`, `d_destination`), `for key share` (a delete waits, an update does not).
 */
export function publishLocks(t: Tables) {
  return prepared<'tenants' | 'd_tenant' | 'd_destination'>(sql`
    with owner as (select id from ${t.tenants} tn where tn.id = any(${slot('tenants')}::text[]) for key share)
    -- A condition without columns: evaluated (the tenants locked) before the first destination is.
    select d.id from ${t.destinations} d
    where (select count(*) from owner) >= 0 and d.tenant_id = any(${slot('tenants')}::text[])
      and (d.tenant_id, d.id) in (select * from unnest(${column('d_tenant', 'text')}, ${column('d_destination', 'text')}))
    for key share of d`)
}

/**
 * SqlContext.deliveryLocks on Citus: the deliveries matching `where` are found without a lock (a read of every shard
 * Citus runs), then locked in id order with a statement per shard group of their tenants (in order of shard), in
 * `db`'s transaction. The condition returned names them by tenant and id; a write with it runs on their shards.
 */
export function deliveryLocks(t: Tables, shards: ShardGroups) {
  const d = t.deliveries
  return async (db: Db, where: SQL | undefined): Promise<SQL> => {
    const found = await db.select({ tenant: d.tenant_id }).from(d).where(where).groupBy(d.tenant_id)
    const ids: string[] = []
    for (const group of await shards.of(found.map((row) => row.tenant).sort())) {
      const rows = await shards.checked(() => db.select({ id: d.id }).from(d).where(and(where, inArray(d.tenant_id, group))).orderBy(d.id).for('update'))
      ids.push(...rows.map((row) => row.id))
    }
    return ids.length ? and(inArray(d.tenant_id, found.map((row) => row.tenant)), inArray(d.id, ids))! : sql`false`
  }
}
