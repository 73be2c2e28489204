import { afterEach, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { type Outflow } from '../../src/engine.js'
import pg from 'postgres'
import { postgres } from '../../src/storage/postgres.js'
import { encryptionKey } from '../support/engines.js'
import { killScaleInstances, startScaleInstance } from '../support/scale-instances.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { startReceiver, waitFor, waitForProgress } from '../support/receiver.js'

const EVENTS = 5000
const DESTINATIONS = 5

/** A publish-only engine (like an API server) on the shared database, with the tenant and 5 destinations. */
async function setUp(url: string, receiverUrl: string): Promise<Outflow> {
  const publisher = await createOutflow({ storage: postgres({ url }), encryptionKey, auth: false, allowPrivateNetworks: true, delivery: { worker: false } })
  await publisher.upsertTenant('scale', {})
  for (let d = 0; d < DESTINATIONS; d++)
    await publisher.createDestination('scale', { id: `d${d}`, type: 'webhook', topics: '*', config: { url: `${receiverUrl}/d${d}` } })
  return publisher
}

async function publishAll(publisher: Outflow) {
  for (let i = 0; i < EVENTS; i += 100)
    await publisher.publishMany(Array.from({ length: 100 }, (_, j) => ({ id: `ev-${i + j}`, tenant_id: 'scale', topic: 'order.created', data: { n: i + j } })))
}

/** How many deliveries are recorded as a success. */
const successes = (sql: pg.Sql) => async () => {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from deliveries where status = 'success'`
  return row!.n
}

/** Distinct (destination, webhook-id) pairs received, and the total number of requests. */
function tally(received: { path: string; headers: Record<string, unknown> }[]) {
  const pairs = new Set(received.map((r) => `${r.path} ${String(r.headers['webhook-id'])}`))
  return { distinct: pairs.size, total: received.length }
}

describe.runIf(postgresAvailable)('many engines on one Postgres', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('three instances share 5,000 events × 5 destinations: every delivery arrives, duplicates stay under 0.1 %', async () => {
    const receiver = await startReceiver()
    cleanups.push(receiver.close)
    const db = await createTestDatabase()
    cleanups.push(db.drop)
    const publisher = await setUp(db.url, receiver.url)
    cleanups.push(() => publisher.close())
    const instances = [0, 1, 2].map(() => startScaleInstance(db.url, 30_000))
    cleanups.push(() => killScaleInstances(instances))
    await Promise.all(instances.map((i) => i.ready))
    await publishAll(publisher)
    await waitForProgress(() => tally(receiver.received).distinct, EVENTS * DESTINATIONS, 'all 25,000 deliveries')
    // Before counting duplicates, wait until nothing can still arrive: every delivery is recorded as a
    // success (none can be claimed again), and every request the receiver got is an attempt an instance
    // has finished and reported (none is still on its way).
    const sql = pg(db.url, { max: 1 })
    cleanups.push(() => sql.end())
    await waitForProgress(successes(sql), EVENTS * DESTINATIONS, 'every delivery recorded as a success')
    await waitFor(() => instances.reduce((n, i) => n + i.delivered, 0) >= receiver.received.length, 10_000, 'every received request reported by its instance')
    const { distinct, total } = tally(receiver.received)
    expect(distinct).toBe(EVENTS * DESTINATIONS)
    expect(total - distinct).toBeLessThan(EVENTS * DESTINATIONS * 0.001)
    // Every instance took a share of the work.
    for (const i of instances) expect(i.delivered).toBeGreaterThan(0)
  }, 900_000)

  it('when one instance is killed mid-run, the others complete its leased deliveries once the lease expires', async () => {
    const receiver = await startReceiver(() => ({ delayMs: 10 }))
    cleanups.push(receiver.close)
    const db = await createTestDatabase()
    cleanups.push(db.drop)
    const publisher = await setUp(db.url, receiver.url)
    cleanups.push(() => publisher.close())
    const instances = [0, 1, 2].map(() => startScaleInstance(db.url, 2_000))
    cleanups.push(() => killScaleInstances(instances))
    await Promise.all(instances.map((i) => i.ready))
    await publishAll(publisher)
    await waitFor(() => instances[0]!.delivered >= 200, 60_000, 'the first instance to be busy')
    instances[0]!.proc.kill('SIGKILL')
    await instances[0]!.exited
    // The killed instance's leases expire after 2 s: a stall longer than the default 60 s is a lost delivery.
    await waitForProgress(() => tally(receiver.received).distinct, EVENTS * DESTINATIONS, 'all deliveries after the kill')
    const { distinct } = tally(receiver.received)
    expect(distinct).toBe(EVENTS * DESTINATIONS)
    // Every delivery ends recorded as a success (attempts the killed instance made but never
    // recorded are made again by the others once its leases expire).
    const sql = pg(db.url, { max: 1 })
    cleanups.push(() => sql.end())
    await waitForProgress(successes(sql), EVENTS * DESTINATIONS, 'every delivery recorded as a success')
  }, 900_000)
})
