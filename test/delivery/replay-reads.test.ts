import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// A replay's hand-out reaches its batch by the ids it selected: it must not read the destination's whole
// time range again for every batch (which made each hand-out cost O(deliveries in range), a whole replay
// O(n²), and held the database's writer long enough to triple live latency). Counted with Postgres's own
// index statistics: the index tuples read while the replay runs.
describe.runIf(postgresAvailable)('replay on postgres: index reads', () => {
  const events = 2_000
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
    await outflow.upsertTenant('t', {})
  })
  afterAll(async () => {
    await outflow?.close()
    await sql?.end()
    await receiver?.close()
    await database?.drop()
  })

  /** Index tuples read from the deliveries' time indexes since the counters were last reset. */
  const timeIndexReads = async () => {
    await sql`select pg_stat_force_next_flush()`
    const rows = await sql<{ n: string }[]>`
      select coalesce(sum(idx_tup_read), 0)::text as n from pg_stat_user_indexes
      where relname = 'deliveries' and indexrelname in ('deliveries_destination_time_idx', 'deliveries_tenant_time_idx', 'deliveries_time_idx')`
    return Number(rows[0]!.n)
  }

  it('reads each batch by its ids, so the index tuples read grow with the events replayed, not with their square', async () => {
    const { id: destinationId } = await outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/r` } })
    for (let i = 0; i < events; i += 500) {
      await outflow.publishMany(Array.from({ length: 500 }, (_, n) => ({ tenant_id: 't', topic: 'x', data: { n: i + n } })))
    }
    await waitFor(() => receiver.on('/r').length >= events, 60_000, 'the first deliveries')
    await sql`select pg_stat_reset_single_table_counters('deliveries'::regclass)`
    // The counters are per index too: reset each of them.
    for (const { oid } of await sql<{ oid: number }[]>`select indexrelid::int as oid from pg_index where indrelid = 'deliveries'::regclass`) {
      await sql`select pg_stat_reset_single_table_counters(${oid})`
    }
    expect(await timeIndexReads()).toBe(0)

    const job = await outflow.replayDestination('t', destinationId, { since: '2000-01-01T00:00:00Z', status: 'success' })
    const done = await waitFor(async () => {
      const read = await outflow.getReplay('t', destinationId, job.id)
      return read.status !== 'running' && read
    }, 60_000, 'the replay')
    expect(done).toMatchObject({ status: 'completed', done: events })
    expect(receiver.on('/r').length).toBe(2 * events)
    // 10 batches of 200: each reads its 200 (and the selects a few more). Reading the range again for each
    // batch read about 11 × 2,000.
    const reads = await timeIndexReads()
    expect(reads).toBeGreaterThanOrEqual(events)
    expect(reads).toBeLessThan(3 * events)
  }, 120_000)
})
