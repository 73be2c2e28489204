import type BetterSqlite3 from 'better-sqlite3'
import type { HotPath, StreakChange } from './sql-context.js'
import { sqliteLeases } from './sqlite-leases.js'
import type { AttemptWrite, InsertEventResult, NewEventWithDeliveries, PruneBatch, PruneRequest } from './storage.js'

const ms = (d: Date | null | undefined) => (d ? d.getTime() : null)

/**
 * The writes every delivery makes, and the pruner's deletes, as statements prepared once. Building
 * these through the query builder for each row cost more CPU than the HTTP request of the delivery
 * (see bench/); the SQL is the same the builder emits for schema/sqlite.ts: times in ms, JSON as
 * text, booleans as 0/1. Runs inside the caller's transaction (better-sqlite3 has one connection).
 */
export function sqliteHotPath(client: BetterSqlite3.Database): HotPath {
  const insertEvents = sqliteEventInserts(client)
  const writeAttempts = attemptWriter(client)
  const updateStreak = streakWriter(client)
  const pruneEvents = eventPruner(client)
  return {
    ...sqliteLeases(client),
    updateStreak: (_db, streak) => updateStreak(streak),
    insertEvents: (_db, items) => insertEvents(items),
    writeAttempts: (_db, writes) => writeAttempts(writes),
    pruneEvents: (_db, request) => pruneEvents(request),
  }
}

/** Each attempt's log row and its delivery's next state (see HotPath.writeAttempts). */
function attemptWriter(client: BetterSqlite3.Database): (writes: AttemptWrite[]) => void {
  const insertAttempt = client.prepare(
    `insert into attempts (id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status, response_status_code,
       response_body, response_headers, error, error_kind, duration_ms, delivered_at, topic, destination_type)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  )
  const attemptExists = client.prepare(`select 1 from attempts where id = ?`).pluck()
  // A delivery cancelled meanwhile (its destination was deleted) stays cancelled; one whose event was erased
  // meanwhile (attempted with the payload claimed before) stays expunged, and its attempt keeps no response body.
  const updateDelivery = client
    .prepare(
      `update deliveries set status = case when status in ('cancelled', 'expunged') then status else ? end, attempt_count = attempt_count + 1, manual = 0,
         next_attempt_at = case when status in ('cancelled', 'expunged') then null else ? end, lease_owner = null,
         lease_until = null, last_attempt_at = ?, successful_at = coalesce(successful_at, ?), skipped_at = null
       where id = ? returning status`,
    )
    .pluck()
  return (writes) => {
    for (const { attempt: a, delivery: d } of writes) {
      // Written already (the worker writes results again after a failed write): nothing to do.
      if (attemptExists.get(a.id)) continue
      // No attempt is logged for a delivery that is gone (its tenant was deleted).
      const status = updateDelivery.get(d.status, ms(d.next_attempt_at), ms(a.delivered_at), ms(d.successful_at), d.id) as string | undefined
      if (status === undefined) continue
      insertAttempt.run(
        a.id,
        a.tenant_id,
        a.event_id,
        a.destination_id,
        a.delivery_id,
        a.attempt_number,
        a.manual ? 1 : 0,
        a.status,
        a.response_status_code,
        status === 'expunged' ? null : a.response_body,
        a.response_headers === null ? null : JSON.stringify(a.response_headers),
        a.error,
        a.error_kind,
        a.duration_ms,
        ms(a.delivered_at),
        a.topic,
        a.destination_type,
      )
    }
  }
}

/**
 * Failure streaks (recordAttempts; see HotPath.updateStreak): a success on a healthy destination writes nothing,
 * so it locks no hot row.
 */
function streakWriter(client: BetterSqlite3.Database): (streak: StreakChange) => number | null {
  const resetStreak = client.prepare(`update destinations set consecutive_failures = 0 where tenant_id = ? and id = ? and consecutive_failures <> 0`)
  const setStreak = client.prepare(`update destinations set consecutive_failures = ? where tenant_id = ? and id = ? returning consecutive_failures`).pluck()
  const addStreak = client
    .prepare(`update destinations set consecutive_failures = consecutive_failures + ? where tenant_id = ? and id = ? returning consecutive_failures`)
    .pluck()
  return (s) => {
    if (s.reset && s.failures === 0) {
      resetStreak.run(s.tenant_id, s.destination_id)
      return 0
    }
    const n = (s.reset ? setStreak : addStreak).get(s.failures, s.tenant_id, s.destination_id) as number | undefined
    return n ?? null
  }
}

/**
 * The pruner's batch: the old events it takes are listed once in a temporary table (this connection
 * only), then their attempts, deliveries and rows are deleted by key. One writer, one transaction:
 * nothing can make a delivery pending between the listing and the deletes.
 */
function eventPruner(client: BetterSqlite3.Database): (request: PruneRequest) => PruneBatch {
  client.exec('create temp table if not exists prune_batch (tenant_id text not null, event_id text not null, time integer not null)')
  const clearBatch = client.prepare('delete from temp.prune_batch')
  const listOld = client.prepare(
    `insert into temp.prune_batch
     select tenant_id, id, time from events e
     where time < @before and time >= @from
       and not exists (select 1 from deliveries d where d.tenant_id = e.tenant_id and d.event_id = e.id and d.status = 'pending')
     order by time limit @limit`,
  )
  const batchStats = client.prepare('select count(*) as found, max(time) as last from temp.prune_batch')
  const inBatch = 'in (select tenant_id, event_id from temp.prune_batch)'
  const deleteAttempts = client.prepare(`delete from attempts where (tenant_id, event_id) ${inBatch}`)
  const deleteDeliveries = client.prepare(`delete from deliveries where (tenant_id, event_id) ${inBatch}`)
  const deleteEvents = client.prepare(`delete from events where (tenant_id, id) ${inBatch}`)
  return (q) => {
    clearBatch.run()
    listOld.run({ before: q.before.getTime(), from: q.from?.getTime() ?? Number.MIN_SAFE_INTEGER, limit: q.limit })
    const { found, last } = batchStats.get() as { found: number; last: number | null }
    if (found === 0) return { events: 0, deliveries: 0, attempts: 0, found, last: null }
    const attempts = deleteAttempts.run().changes
    const deliveries = deleteDeliveries.run().changes
    const events = deleteEvents.run().changes
    clearBatch.run()
    return { events, deliveries, attempts, found, last: last === null ? null : new Date(last) }
  }
}

/**
 * Insert events and their deliveries, with statements prepared on `client` (the engine's connection, or a
 * host's connection to the same file for publishing inside its transaction). Runs inside the caller's
 * transaction (one writer): owners are checked where the rows are written.
 */
export function sqliteEventInserts(client: BetterSqlite3.Database): (items: NewEventWithDeliveries[]) => InsertEventResult[] {
  const insertEvent = client.prepare(
    `insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at, schema_valid)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict do nothing`,
  )
  const insertDelivery = client.prepare(
    `insert into deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, lease_owner, lease_until, skipped_at)
     values (?, ?, ?, ?, ?, ?, ?, 0, 0, ?, ?, ?, ?)`,
  )
  // FIFO destinations: inserted waiting, after every unfinished delivery of the key. The place is taken from the
  // rows themselves (one writer at a time, whichever connection: the engine's or a host's in publishSync).
  const insertOrdered = client.prepare(
    `insert into deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, order_key, order_state, order_seq)
     values (@id, @tenant_id, @event_id, @destination_id, @topic, @event_time, 'pending', 0, 0, @key, 'waiting',
       (select coalesce(max(order_seq), 0) + 1 from deliveries where tenant_id = @tenant_id and destination_id = @destination_id
          and order_key = @key and status = 'pending'))`,
  )
  const existingDestinations = client.prepare(`select destination_id from deliveries where tenant_id = ? and event_id = ? and status <> 'skipped'`).pluck()
  const tenantExists = client.prepare(`select 1 from tenants where id = ?`).pluck()
  const destinationExists = client.prepare(`select 1 from destinations where tenant_id = ? and id = ?`).pluck()
  return (items) => {
    const missing = new Map<number | string, string>()
    items.forEach(({ event: e, group }, index) => {
      if (!tenantExists.get(e.tenant_id)) missing.set(group ?? `item ${index}`, e.tenant_id)
    })
    return items.map(({ event: e, deliveries, group }, index) => {
      const missingTenant = missing.get(group ?? `item ${index}`)
      if (missingTenant !== undefined) return { duplicate: false, destination_ids: [], missing_tenant: missingTenant }
      const data = JSON.stringify(e.data)
      const inserted = insertEvent.run(e.tenant_id, e.id, e.topic, ms(e.time), data, JSON.stringify(e.metadata), e.eligible_for_retry ? 1 : 0, ms(e.created_at), e.schema_valid === undefined ? null : e.schema_valid ? 1 : 0)
      // The worker attempts a local publish's deliveries with this event in memory: it sends the text stored.
      if (inserted.changes !== 0) e.data_json = data
      if (inserted.changes === 0) return { duplicate: true, destination_ids: existingDestinations.all(e.tenant_id, e.id) as string[] }
      const destinationIds: string[] = []
      for (const d of deliveries) {
        if (!destinationExists.get(e.tenant_id, d.destination_id)) continue
        if (d.skipped) {
          insertDelivery.run(d.id, e.tenant_id, e.id, d.destination_id, e.topic, ms(e.time), 'skipped', null, null, null, ms(e.created_at))
          continue
        }
        if (d.order_key !== undefined) {
          // Waiting, not due: the insert's caller makes it due when nothing of its key precedes it.
          insertOrdered.run({ id: d.id, tenant_id: e.tenant_id, event_id: e.id, destination_id: d.destination_id, topic: e.topic, event_time: ms(e.time), key: d.order_key })
        } else insertDelivery.run(d.id, e.tenant_id, e.id, d.destination_id, e.topic, ms(e.time), 'pending', ms(d.next_attempt_at), d.lease_owner ?? null, ms(d.lease_until), null)
        destinationIds.push(d.destination_id)
      }
      return { duplicate: false, destination_ids: destinationIds }
    })
  }
}
