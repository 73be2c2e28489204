import { sql } from 'drizzle-orm'
import type { Db, Tables } from './sql-context.js'
import type { ShardGroups } from './postgres-citus.js'
import { col, deleteEvents, heldDeliveries, oldEvents, type PruneFound } from './postgres-prune.js'
import type { PruneBatch, PruneRequest } from './storage.js'

/**
 * The pruner's batch on Citus (the `citus` option), in the caller's transaction: the old events found without a
 * lock (a read of every shard), then their deliveries locked with a statement per shard group (Citus locks rows only
 * in a statement on one shard), then the deletes of what was locked, as on plain Postgres (postgres-hot-path.ts).
 */
export async function pruneOnShards(db: Db, t: Tables, shards: ShardGroups, q: PruneRequest): Promise<PruneBatch> {
  const events = (await db.execute(oldEvents(t, q))) as unknown as { tenant_id: string; id: string; time: Date }[]
  const found: PruneFound[] = []
  for (const { tenants, items: mine } of await shards.split(events, (e) => e.tenant_id)) {
    const onShard = sql` and d.tenant_id = any(${col(tenants, 'text')})`
    const rows = await shards.checked(
      async () =>
        (await db.execute(sql`
          with found as (
            select * from unnest(${col(mine.map((e) => e.tenant_id), 'text')}, ${col(mine.map((e) => e.id), 'text')},
              ${col(mine.map((e) => e.time.toISOString()), 'timestamptz')}) as f(tenant_id, id, time)
          ), ${heldDeliveries(t, onShard)}`)) as unknown as PruneFound[],
    )
    found.push(...rows)
  }
  return deleteEvents(db, t, found)
}
