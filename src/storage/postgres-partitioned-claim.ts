import { sql } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/pg-core'
import type PostgresJs from 'postgres'
import type { Tables } from './sql-context.js'
import { prepared, slot } from './postgres-prepared.js'

// The claim on the partitioned layout (postgres-partitions.ts). One statement that updates the picked rows of a
// partitioned table is planned for every partition (several ms at 40 of them, each claim: the connection plans
// each run, see postgres.ts); a function picks first, then updates and reads with the picked rows' days as
// constants, so each of those statements is planned for the one or two partitions that hold them.

const schemaOf = (t: Tables) => getTableConfig(t.deliveries).schema ?? 'public'

/** Create (or replace) the claim function in `schema`: run by migrate() on the partitioned layout. */
export async function createClaimFunction(client: PostgresJs.Sql, schema: string): Promise<void> {
  const s = `"${schema}"`
  await client.unsafe(`
    create or replace function ${s}.outflow_claim(p_now timestamptz, p_since timestamptz, p_limit int, p_owner text, p_until timestamptz)
    returns table (id text, tenant_id text, event_id text, destination_id text, attempt_count int, manual boolean, replay_job text,
      order_key text, topic text, "time" timestamptz, data jsonb, metadata jsonb, eligible_for_retry boolean, created_at timestamptz,
      next_attempt_at timestamptz)
    language plpgsql as $fn$
    #variable_conflict use_column
    declare ids text[]; days timestamptz[];
    begin
      select array_agg(p.id), array_agg(distinct p.event_created_at) into ids, days from (
        select d.id, d.event_created_at from ${s}.deliveries d
        where d.status = 'pending' and d.next_attempt_at <= p_now and (p_since is null or d.next_attempt_at >= p_since)
          and (d.lease_until is null or d.lease_until < p_now)
        order by d.next_attempt_at limit p_limit
        for update skip locked) p;
      if ids is null then return; end if;
      perform set_config('synchronous_commit', 'off', true);
      return query with leased as (
        update ${s}.deliveries d set lease_owner = p_owner, lease_until = p_until
        where d.id = any(ids) and d.event_created_at = any(days)
        returning d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.manual, d.replay_job, d.order_key,
          d.next_attempt_at, d.event_created_at
      )
      select l.id, l.tenant_id, l.event_id, l.destination_id, l.attempt_count, l.manual, l.replay_job, l.order_key,
        e.topic, e.time, e.data, e.metadata, e.eligible_for_retry, e.created_at, l.next_attempt_at
      from leased l join ${s}.events e on e.tenant_id = l.tenant_id and e.id = l.event_id and e.created_at = l.event_created_at
      where e.created_at = any(days);
    end
    $fn$`)
}

/** The claim through the function: the same columns, in the same order, as postgres-queue.ts's claim statement. */
export function partitionedClaimStatement(t: Tables) {
  return prepared<'now' | 'since' | 'limit' | 'owner' | 'until'>(sql`
    select * from ${sql.raw(`"${schemaOf(t)}".outflow_claim`)}(${slot('now')}::timestamptz, ${slot('since')}::timestamptz, ${slot('limit')}::int,
      ${slot('owner')}::text, ${slot('until')}::timestamptz)`)
}
