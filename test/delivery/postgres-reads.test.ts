import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { startReceiver, waitFor, waitForProgress } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Delivering and replaying read the deliveries they work on by their keys, never a whole table or range again:
// a log of delivered events grows without bound. Counted with Postgres's own statistics, reset before the
// part measured. Each test has its own tenant and receiver path. On the partitioned layout (the default) the
// counters are summed over the day partitions.
const deliveriesTables = '^deliveries(_p[0-9]{8}|_default)?$'
describe.runIf(postgresAvailable)('postgres: what delivery reads of the stored log', () => {
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  let outflow: Outflow
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let sql: ReturnType<typeof postgresClient>

  beforeAll(async () => {
    database = await createTestDatabase()
    sql = postgresClient(database.url, { max: 1, onnotice: () => {} })
    receiver = await startReceiver(() => ({}))
    outflow = await createOutflow({
      apiKey,
      jwtSecret,
      encryptionKey,
      allowPrivateNetworks: true,
      storage: postgres({ url: database.url }),
      delivery: { pollIntervalMs: 50 },
    })
  })
  afterAll(async () => {
    await outflow?.close()
    await sql?.end()
    await receiver?.close()
    await database?.drop()
  })

  /** A tenant with one webhook destination for every topic, and `count` events delivered to it. */
  const deliveredLog = async (tenant: string, path: string, count: number) => {
    await outflow.upsertTenant(tenant, {})
    const destination = await outflow.createDestination(tenant, { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}${path}` } })
    for (let i = 0; i < count; i += 500) {
      await outflow.publishMany(Array.from({ length: 500 }, (_, n) => ({ tenant_id: tenant, topic: 'x', data: { n: i + n } })))
    }
    await waitForProgress(() => receiver.on(path).length, count, `${tenant}: the stored log delivered`)
    return destination
  }

  /** Zero the deliveries table's counters and each of its indexes' (every day partition's on the partitioned layout). */
  const resetCounters = async (on = sql) => {
    for (const { oid } of await on<{ oid: number }[]>`
      select t.oid::int as oid from pg_class t where t.relname ~ ${deliveriesTables}
      union all select i.indexrelid::int from pg_index i join pg_class t on t.oid = i.indrelid where t.relname ~ ${deliveriesTables}`) {
      await on`select pg_stat_reset_single_table_counters(${oid})`
    }
  }

  /** Rows read by sequential scans of the deliveries (of all their partitions). */
  const rowsScanned = async (on = sql) => {
    await on`select pg_stat_force_next_flush()`
    const [row] = await on<{ n: string }[]>`select coalesce(sum(seq_tup_read), 0)::text as n from pg_stat_user_tables where relname ~ ${deliveriesTables}`
    return Number(row!.n)
  }

  /** Index tuples read from the deliveries' time indexes. */
  const timeIndexReads = async () => {
    await sql`select pg_stat_force_next_flush()`
    const rows = await sql<{ n: string }[]>`
      with named as (select oid from pg_class where relname in ('deliveries_destination_time_idx', 'deliveries_tenant_time_idx', 'deliveries_time_idx'))
      select coalesce(sum(idx_tup_read), 0)::text as n from pg_stat_user_indexes
      where indexrelid in (select oid from named union select inhrelid from pg_inherits where inhparent in (select oid from named))`
    return Number(rows[0]!.n)
  }

  // The results write used to lock its rows through an OR of two IN subqueries: a sequential scan of the whole
  // table on every write (5 ms a call at 20,000 stored deliveries).
  it('writes attempt results without reading the stored log', async () => {
    const stored = 3_000
    const fresh = 300
    await deliveredLog('scans', '/scans', stored)
    // Plans as a real deployment has them: the table analysed with its log in it.
    await sql`analyze deliveries`
    await resetCounters()
    expect(await rowsScanned()).toBe(0)

    // One at a time, so the results are written in many small batches, as under steady traffic.
    for (let i = 0; i < fresh; i++) await outflow.publish({ tenant_id: 'scans', topic: 'x', data: { fresh: i } })
    await waitForProgress(() => receiver.on('/scans').length, stored + fresh, 'the fresh events delivered')
    await waitFor(async () => (await outflow.listEvents('scans', { status: 'success', limit: 1 })).models.length === 1, 10_000, 'results written')
    await new Promise((resolve) => setTimeout(resolve, 300))
    // A scan per write of results read the whole table each time: hundreds of thousands of rows here.
    expect(await rowsScanned()).toBeLessThan(stored)
  }, 900_000)

  // The statements are prepared once per connection. A generic plan kept from the engine's first minutes, costed
  // on empty tables, scanned the whole table on every results write once the log had grown (half the end-to-end
  // rate at 30,000 stored deliveries), until an ANALYZE replanned it.
  it('keeps reading by key when the log grows after the engine started on empty tables', async () => {
    const stored = 3_000
    const fresh = 300
    const database2 = await createTestDatabase()
    const sql2 = postgresClient(database2.url, { max: 1, onnotice: () => {} })
    // One connection, so the statements planned on the empty tables are the ones that write the fresh results.
    const engine = await createOutflow({
      apiKey,
      jwtSecret,
      encryptionKey,
      allowPrivateNetworks: true,
      storage: postgres({ url: database2.url, max: 1 }),
      delivery: { pollIntervalMs: 50 },
    })
    try {
      await engine.upsertTenant('early', {})
      await engine.createDestination('early', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/early` } })
      // More than five runs of each statement while the tables are nearly empty: a generic plan is chosen now.
      for (let i = 0; i < 12; i++) {
        await engine.publish({ tenant_id: 'early', topic: 'x', data: { warm: i } })
        await waitFor(() => receiver.on('/early').length > i, 10_000, 'a warm-up event delivered')
      }
      for (let i = 0; i < stored; i += 500)
        await engine.publishMany(Array.from({ length: 500 }, (_, n) => ({ tenant_id: 'early', topic: 'x', data: { n: i + n } })))
      await waitForProgress(() => receiver.on('/early').length, 12 + stored, 'the stored log delivered')
      await resetCounters(sql2)

      for (let i = 0; i < fresh; i++) await engine.publish({ tenant_id: 'early', topic: 'x', data: { fresh: i } })
      await waitForProgress(() => receiver.on('/early').length, 12 + stored + fresh, 'the fresh events delivered')
      await waitFor(async () => (await engine.listEvents('early', { status: 'success', limit: 1 })).models.length === 1, 10_000, 'results written')
      await new Promise((resolve) => setTimeout(resolve, 300))
      // A kept generic plan scans the whole table per write of results: about a million rows here.
      expect(await rowsScanned(sql2)).toBeLessThan(stored)
    } finally {
      await engine.close()
      await sql2.end()
      await database2.drop()
    }
  }, 900_000)

  // A replay's hand-out used to update its batch through the whole selection, time range included: every batch
  // read the destination's whole range again (O(n²) for a replay).
  it('replays each batch by its ids, so the index tuples read grow with the events replayed, not with their square', async () => {
    const events = 2_000
    const destination = await deliveredLog('replays', '/replays', events)
    await resetCounters()
    expect(await timeIndexReads()).toBe(0)

    const job = await outflow.replayDestination('replays', destination.id, { since: '2000-01-01T00:00:00Z', status: 'success' })
    // Finished (or failed) counts as the whole target: the status is asserted next.
    await waitForProgress(async () => {
      const read = await outflow.getReplay('replays', destination.id, job.id)
      return read.status === 'running' ? read.done : events
    }, events, 'the replay')
    expect(await outflow.getReplay('replays', destination.id, job.id)).toMatchObject({ status: 'completed', done: events })
    expect(receiver.on('/replays').length).toBe(2 * events)
    // 10 batches of 200: each reads its 200 (and the selects a few more). Reading the range again for each
    // batch read about 11 × 2,000.
    const reads = await timeIndexReads()
    expect(reads).toBeGreaterThanOrEqual(events)
    expect(reads).toBeLessThan(3 * events)
  }, 900_000)
})
