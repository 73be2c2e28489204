import { sql } from 'drizzle-orm'
import type PostgresJs from 'postgres'
import type { Tables } from './sql-context.js'
import type { ShardGroups } from './postgres-citus.js'
import { column, iso, onShardOf, prepared, type Driver } from './postgres-prepared.js'
import { attemptColumns, destinationStreak, orderKeys, resultLocks, resultsInput, resultWrites, streakWrites } from './postgres-queue.js'
import type { AttemptWrite, DestinationStreak } from './storage.js'

/**
 * The write of attempt results on Citus (the `citus` option): a transaction per shard group of the batch's tenants,
 * in parallel. In it, three statements, each on the group's shard (every table read by its tenants):
 * - the row locks of the plain write (postgres-queue.ts › resultLocks);
 * - the write without them and without the log: the deliveries' new states, the FIFO heads made due, the streaks,
 *   answering the streaks and the attempts written;
 * - the log rows of the attempts written.
 * Citus runs a statement with an insert from a set-returning function in steps through the coordinator, and refuses
 * row locks in such steps (with the locks in its steps, it lost the rows between them: `missing data for column
 * "id"`); with the log in the same statement, its steps saw the log rows just written and counted no streak.
 */
export function citusRecordAttempts(t: Tables, shards: ShardGroups, transactions: PostgresJs.Sql, run: <T>(work: () => Promise<T>) => Promise<T>) {
  const variant = { days: false, fifo: true, shard: true }
  const lock = prepared<string>(sql`
    with ${resultsInput()}, ${resultLocks(t, { ...variant, locks: true })}
    select (select count(*) from held)::int, (select count(*) from locked)::int`)
  const write = prepared<string>(sql`
    with ${resultsInput()}, ${resultLocks(t, { ...variant, locks: false })}, ${resultWrites(t, { ...variant, logs: false })}, ${streakWrites(t, true)}
    select 'streak' as kind, tenant_id, id, consecutive_failures, null::text as delivery_now, null::timestamptz as event_created_at from counted
    union all
    select 'streak', d.tenant_id, d.id, d.consecutive_failures, null, null from ${t.destinations} d
    where (d.tenant_id, d.id) in (select tenant_id, destination_id from v) and (d.tenant_id, d.id) not in (select tenant_id, id from counted)${onShardOf(true)('d')}
    union all
    select 'written', tenant_id, id, null, delivery_now, event_created_at from written`)
  // An attempt of an event erased while it was in flight keeps no response body (as the plain write's log).
  const log = prepared<string>(sql`
    with ${resultsInput()}
    insert into ${t.attempts} (id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status,
      response_status_code, response_body, response_headers, error, error_kind, duration_ms, delivered_at, topic, destination_type, event_created_at)
    select v.id, v.tenant_id, v.event_id, v.destination_id, v.delivery_id, v.attempt_number, v.manual, v.status, v.response_status_code,
      case when w.delivery_now = 'expunged' then null else v.response_body end, v.response_headers, v.error, v.error_kind, v.duration_ms,
      v.delivered_at, v.topic, v.destination_type, w.event_created_at
    from v join unnest(${column('written_id', 'text')}, ${column('written_now', 'text')}, ${column('written_created', 'timestamptz')})
      as w(id, delivery_now, event_created_at) on w.id = v.id`)
  const writeGroup = async (tx: PostgresJs.TransactionSql, values: Record<string, unknown>) => {
    const driver = tx as unknown as Driver
    await shards.checked(() => lock(driver, values))
    const rows = await write(driver, values)
    const written = rows.filter(([kind]) => kind === 'written')
    if (written.length)
      await log(driver, {
        ...values,
        written_id: written.map((row) => row[2]),
        written_now: written.map((row) => row[4]),
        written_created: written.map((row) => iso(row[5] as Date | null)),
      })
    return rows.filter(([kind]) => kind === 'streak').map(([, ...streak]) => streak)
  }
  return async (writes: AttemptWrite[]): Promise<DestinationStreak[]> => {
    const groups = await run(() => shards.split(writes, (w) => w.attempt.tenant_id))
    const streaks = await Promise.all(
      groups.map(({ tenants, items }) => {
        const values = { ...attemptColumns(items), ...orderKeys(items), tenants }
        return run(() => transactions.begin((tx) => writeGroup(tx, values)))
      }),
    )
    return streaks.flat().map(destinationStreak)
  }
}
