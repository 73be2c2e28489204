import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Delivering reads the deliveries it works on by their keys, never the whole table: a log of delivered events
// grows without bound, and a statement that scans it on every write of results costs O(log) per attempt
// (the results write did, through an OR of two IN subqueries: 5 ms a call at 20,000 stored deliveries).
// Counted with Postgres's own table statistics while a second round of events is delivered.
describe.runIf(postgresAvailable)('delivery on postgres: no sequential scans of the deliveries', () => {
  const stored = 3_000
  const fresh = 300
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

  const rowsScanned = async () => {
    await sql`select pg_stat_force_next_flush()`
    const [row] = await sql<{ n: string }[]>`select coalesce(seq_tup_read, 0)::text as n from pg_stat_user_tables where relname = 'deliveries'`
    return Number(row!.n)
  }

  it('writes attempt results without reading the stored log', async () => {
    await outflow.createDestination('t', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/r` } })
    for (let i = 0; i < stored; i += 500) {
      await outflow.publishMany(Array.from({ length: 500 }, (_, n) => ({ tenant_id: 't', topic: 'x', data: { n: i + n } })))
    }
    await waitFor(() => receiver.on('/r').length >= stored, 60_000, 'the stored log delivered')
    // Plans as a real deployment has them: the table analysed with its log in it.
    await sql`analyze deliveries`
    await sql`select pg_stat_reset_single_table_counters('deliveries'::regclass)`
    expect(await rowsScanned()).toBe(0)

    // One at a time, so the results are written in many small batches, as under steady traffic.
    for (let i = 0; i < fresh; i++) await outflow.publish({ tenant_id: 't', topic: 'x', data: { fresh: i } })
    await waitFor(() => receiver.on('/r').length >= stored + fresh, 60_000, 'the fresh events delivered')
    await waitFor(async () => (await outflow.listEvents('t', { status: 'success', limit: 1 })).models.length === 1, 10_000, 'results written')
    await new Promise((resolve) => setTimeout(resolve, 300))
    // A scan per write of results read the whole table each time: hundreds of thousands of rows here.
    expect(await rowsScanned()).toBeLessThan(stored)
  }, 120_000)
})
