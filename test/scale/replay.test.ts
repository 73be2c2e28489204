import pg from 'postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import { encryptionKey } from '../support/engines.js'
import { killScaleInstances, startScaleInstance } from '../support/scale-instances.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Replay jobs run by engine processes sharing one Postgres: no job runs on two instances at once, and a
// job whose instance is SIGKILLed is finished by another from where it stood.

/** An API-only engine with the tenant and `count` destinations, each with `events` skipped deliveries (published while disabled). */
async function setUp(url: string, receiverUrl: string, count: number, events: number): Promise<Outflow> {
  const api = await createOutflow({ storage: postgres({ url }), encryptionKey, auth: false, allowPrivateNetworks: true, delivery: { worker: false } })
  await api.upsertTenant('r', {})
  for (let d = 0; d < count; d++) {
    await api.createDestination('r', { id: `d${d}`, type: 'webhook', topics: '*', config: { url: `${receiverUrl}/d${d}` } })
    await api.disableDestination('r', `d${d}`)
  }
  for (let i = 0; i < events; i += 500)
    await api.publishMany(Array.from({ length: Math.min(500, events - i) }, (_, j) => ({ id: `ev-${i + j}`, tenant_id: 'r', topic: 'order.created', data: { n: i + j } })))
  for (let d = 0; d < count; d++) await api.enableDestination('r', `d${d}`)
  return api
}

/** Requests per (destination, webhook-id). */
function perDelivery(received: { path: string; headers: Record<string, unknown> }[]): Map<string, number> {
  const counts = new Map<string, number>()
  for (const r of received) {
    const key = `${r.path} ${String(r.headers['webhook-id'])}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  return counts
}

describe.runIf(postgresAvailable)('replay across engine processes on one Postgres', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('three instances run a tenant-wide replay of three destinations: every skipped delivery sent exactly once', async () => {
    const EVENTS = 1000
    const receiver = await startReceiver()
    cleanups.push(receiver.close)
    const db = await createTestDatabase()
    cleanups.push(db.drop)
    const api = await setUp(db.url, receiver.url, 3, EVENTS)
    cleanups.push(() => api.close())
    const instances = [0, 1, 2].map(() => startScaleInstance(db.url, 30_000))
    cleanups.push(() => killScaleInstances(instances))
    await Promise.all(instances.map((i) => i.ready))
    const jobs = await api.replayTenant('r', { since: '2000-01-01T00:00:00Z', status: 'skipped' })
    expect(jobs.map((j) => [j.destination_id, j.matched]).sort()).toEqual([['d0', EVENTS], ['d1', EVENTS], ['d2', EVENTS]])
    for (const j of jobs)
      await waitFor(async () => (await api.getReplay('r', j.destination_id, j.id)).status === 'completed', 120_000, `replay of ${j.destination_id}`)
    for (const j of jobs) expect(await api.getReplay('r', j.destination_id, j.id)).toMatchObject({ done: EVENTS, failed: 0 })
    // Completed means every delivery was attempted and recorded: nothing is still on its way.
    const counts = perDelivery(receiver.received)
    expect(counts.size).toBe(3 * EVENTS)
    expect([...counts.values()].every((n) => n === 1)).toBe(true)
  }, 180_000)

  it('a replay whose instance is SIGKILLed mid-run is finished by another instance from its cursor', async () => {
    const EVENTS = 3000
    const receiver = await startReceiver(() => ({ delayMs: 2 }))
    cleanups.push(receiver.close)
    const db = await createTestDatabase()
    cleanups.push(db.drop)
    const api = await setUp(db.url, receiver.url, 1, EVENTS)
    cleanups.push(() => api.close())
    const first = startScaleInstance(db.url, 2_000)
    const instances = [first]
    cleanups.push(() => killScaleInstances(instances))
    await first.ready
    const job = await api.replayDestination('r', 'd0', { since: '2000-01-01T00:00:00Z', status: 'skipped' })
    await waitFor(async () => (await api.getReplay('r', 'd0', job.id)).done >= 600, 60_000, 'the replay under way')
    first.proc.kill('SIGKILL')
    await first.exited
    const sql = pg(db.url, { max: 1 })
    cleanups.push(() => sql.end())
    const [stopped] = await sql<{ done: number; lease_owner: string }[]>`select done, lease_owner from replay_jobs where id = ${job.id}`
    expect(stopped!.done).toBeLessThan(EVENTS)
    const second = startScaleInstance(db.url, 2_000)
    instances.push(second)
    await second.ready
    await waitFor(async () => (await api.getReplay('r', 'd0', job.id)).status === 'completed', 120_000, 'the replay finished by the second instance')
    const [ended] = await sql<{ lease_owner: string | null }[]>`select lease_owner from replay_jobs where id = ${job.id}`
    expect(ended!.lease_owner).toBeNull()
    expect(await api.getReplay('r', 'd0', job.id)).toMatchObject({ done: EVENTS, matched: EVENTS, failed: 0 })
    const counts = perDelivery(receiver.received)
    expect(counts.size).toBe(EVENTS)
    // Sent again at most: the batch the killed instance had handed out (its attempts were not all recorded).
    expect(receiver.received.length - EVENTS).toBeLessThanOrEqual(200)
    const [left] = await sql<{ n: number }[]>`select count(*)::int as n from deliveries where status <> 'success'`
    expect(left!.n).toBe(0)
  }, 240_000)
})
