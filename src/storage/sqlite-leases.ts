import type BetterSqlite3 from 'better-sqlite3'
import type { HotPath } from './sql-context.js'
import type { ClaimedDelivery, ClaimRequest } from './storage.js'
import { eventWithStoredData } from './stored-json.js'

/**
 * The worker's per-batch queue statements on SQLite (claim, lease renewal and release), prepared once.
 * Built through the query builder they cost more CPU than the claimed deliveries' own result writes
 * (see bench/). The conditions are those of sql-queue.ts; ids go in as one JSON array (`json_each`),
 * so one statement serves any batch size. Runs inside the caller's transaction or run() (one connection).
 */
export function sqliteLeases(client: BetterSqlite3.Database): Required<Pick<HotPath, 'claimDueDeliveries' | 'extendLeases' | 'releaseLeases'>> {
  const ids = 'in (select value from json_each(?))'
  const due = (since: string) => `status = 'pending' and next_attempt_at <= @now${since} and (lease_until is null or lease_until < @now)`
  const pick = (since: string) => client.prepare(`select id from deliveries where ${due(since)} order by next_attempt_at limit @limit`).pluck()
  const pickAll = pick('')
  // The claim window (ClaimWindow): only deliveries due since the last point the queue was caught up.
  const pickWindow = pick(' and next_attempt_at >= @since')
  const lease = client.prepare(`update deliveries set lease_owner = ?, lease_until = ? where id ${ids}`)
  // Rows as arrays (as the query builder reads them): better-sqlite3 builds a row object far slower than claimedDelivery does.
  const load = client
    .prepare(
      `select d.id, d.tenant_id, d.event_id, d.destination_id, d.attempt_count, d.manual, d.replay_job, d.order_key,
         d.next_attempt_at, e.topic, e.time, e.data, e.metadata, e.eligible_for_retry, e.created_at
       from deliveries d inner join events e on e.tenant_id = d.tenant_id and e.id = d.event_id
       where d.id ${ids}`,
    )
    .raw()
  const extend = client.prepare(`update deliveries set lease_until = ? where lease_owner = ? and status = 'pending' and id ${ids}`)
  const releaseAll = client.prepare(`update deliveries set lease_owner = null, lease_until = null where lease_owner = ? and status = 'pending'`)
  const releaseSome = client.prepare(`update deliveries set lease_owner = null, lease_until = null where lease_owner = ? and status = 'pending' and id ${ids}`)

  return {
    claimDueDeliveries(_db, q: ClaimRequest): ClaimedDelivery[] {
      const now = q.now.getTime()
      const picked = (q.dueSince ? pickWindow.all({ now, since: q.dueSince.getTime(), limit: q.limit }) : pickAll.all({ now, limit: q.limit })) as string[]
      if (picked.length === 0) return []
      const list = JSON.stringify(picked)
      lease.run(q.owner, q.leaseUntil.getTime(), list)
      return (load.all(list) as ClaimedRow[]).map(claimedDelivery)
    },
    extendLeases: (_db, owner, list, leaseUntil) => (list.length === 0 ? 0 : extend.run(leaseUntil.getTime(), owner, JSON.stringify(list)).changes),
    releaseLeases: (_db, owner, list) => (list ? releaseSome.run(owner, JSON.stringify(list)) : releaseAll.run(owner)).changes,
  }
}

/** A row of `load`, columns in its select-list order. */
type ClaimedRow = [
  id: string,
  tenant_id: string,
  event_id: string,
  destination_id: string,
  attempt_count: number,
  manual: number,
  replay_job: string | null,
  order_key: string | null,
  next_attempt_at: number,
  topic: string,
  time: number,
  data: string,
  metadata: string,
  eligible_for_retry: number,
  created_at: number,
]

/**
 * A row as the query builder reads it (schema/sqlite.ts): times from ms, JSON from text, booleans from 0/1.
 * The data is parsed only when something reads it: an attempt sends the stored text as it is.
 */
function claimedDelivery([id, tenantId, eventId, destinationId, attemptCount, manual, replayJob, orderKey, dueAt, topic, time, data, metadata, eligible, createdAt]: ClaimedRow): ClaimedDelivery {
  return {
    id,
    tenant_id: tenantId,
    event_id: eventId,
    destination_id: destinationId,
    attempt_count: attemptCount,
    manual: manual === 1,
    ...(replayJob ? { replay: true } : {}),
    order_key: orderKey,
    due_at: new Date(dueAt),
    event: eventWithStoredData(
      {
        tenant_id: tenantId,
        id: eventId,
        topic,
        time: new Date(time),
        metadata: JSON.parse(metadata) as Record<string, string>,
        eligible_for_retry: eligible === 1,
        created_at: new Date(createdAt),
      },
      data,
    ),
  }
}
