import { sql } from 'drizzle-orm'
import { getTableConfig } from 'drizzle-orm/pg-core'
import type PostgresJs from 'postgres'
import type { Tables } from './sql-context.js'
import { prepared, slot } from './postgres-prepared.js'
import { idTime } from '../ids.js'

// The claim on the partitioned layout (postgres-partitions.ts). One statement that updates the picked rows of a
// partitioned table is planned for every partition (several ms at 40 of them, each claim: the connection plans
// each run, see postgres.ts); a function picks first, then updates and reads with the picked rows' days as
// constants, so each of those statements is planned for the one or two partitions that hold them.

const schemaOf = (t: Tables) => getTableConfig(t.deliveries).schema ?? 'public'

/** Ids minted before deliveries carried their event's created_at were made at most this long after it. */
const mintedAfterCreatedMs = 3_600_000

/**
 * The range of event_created_at the deliveries `ids` can have, from the time their ids carry (a delivery id is
 * minted with its event's created_at: see event-writer.ts), so a statement by id reads one day's partitions.
 * Ids that carry no time (written by hand, as tests do) give no bound.
 */
export function createdBounds(ids: string[]): { lo: string; hi: string } {
  let lo = Infinity
  let hi = -Infinity
  for (const id of ids) {
    const ms = idTime(id)
    if (ms === null || ms < minIdTime || ms > maxIdTime) return { lo: '-infinity', hi: 'infinity' }
    lo = Math.min(lo, ms)
    hi = Math.max(hi, ms)
  }
  if (lo > hi) return { lo: '-infinity', hi: 'infinity' }
  return { lo: new Date(lo - mintedAfterCreatedMs).toISOString(), hi: new Date(hi).toISOString() }
}

/** Times an id of ours can carry (2020 to 2200): past them, a hand-written id that happens to decode. */
const minIdTime = Date.parse('2020-01-01T00:00:00Z')
const maxIdTime = Date.parse('2200-01-01T00:00:00Z')

/** Create (or replace) the claim function in `schema`: run by migrate() on the partitioned layout. */
export async function createClaimFunction(client: PostgresJs.Sql, schema: string): Promise<void> {
  const s = `"${schema}"`
  // The pick is planned once per connection (a generic plan: the same ordered walk of each partition's partial
  // index whatever the values; a custom plan would cost ~3 ms of planning at 40 partitions, each claim).
  await client.unsafe(`
    create or replace function ${s}.outflow_claim_pick(p_now timestamptz, p_since timestamptz, p_limit int)
    returns table (id text, event_created_at timestamptz)
    language plpgsql set plan_cache_mode = force_generic_plan set enable_seqscan = off set enable_bitmapscan = off set enable_sort = off
    as $fn$
    #variable_conflict use_column
    begin
      return query select d.id, d.event_created_at from ${s}.deliveries d
        where d.status = 'pending' and d.next_attempt_at <= p_now and (p_since is null or d.next_attempt_at >= p_since)
          and (d.lease_until is null or d.lease_until < p_now)
        order by d.next_attempt_at limit p_limit
        for update of d skip locked;
    end
    $fn$`)
  // Then the lease and the events' read, planned for each run with the picked rows' days as constants: the one
  // or two partitions that hold them, by key (whatever the statistics of a young partition say).
  await client.unsafe(`
    create or replace function ${s}.outflow_claim(p_now timestamptz, p_since timestamptz, p_limit int, p_owner text, p_until timestamptz)
    returns table (id text, tenant_id text, event_id text, destination_id text, attempt_count int, manual boolean, replay_job text,
      order_key text, topic text, "time" timestamptz, data jsonb, metadata jsonb, eligible_for_retry boolean, created_at timestamptz,
      next_attempt_at timestamptz)
    language plpgsql set enable_seqscan = off set enable_bitmapscan = off set enable_hashjoin = off set enable_mergejoin = off
    as $fn$
    #variable_conflict use_column
    declare ids text[]; days timestamptz[];
    begin
      select array_agg(p.id), array_agg(distinct p.event_created_at) into ids, days from ${s}.outflow_claim_pick(p_now, p_since, p_limit) p;
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
