import pg from 'postgres'
import { afterEach, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { encryptionKey } from '../support/engines.js'
import { killScaleInstances, startScaleInstance } from '../support/scale-instances.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Ordered (FIFO) delivery across engine processes sharing one Postgres, through random failures and a SIGKILL.

const EVENTS = 10_000
const KEYS = 20

describe.runIf(postgresAvailable)('ordered delivery across engine processes: postgres', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c()
  })

  it('10,000 events over 20 keys, a sink failing 20 % at random, 3 instances, one SIGKILLed: every key first succeeds in publish order, nothing lost', async () => {
    /** First successful receipt of each event, in arrival order: [key, n]. */
    const firsts: [string, number][] = []
    const succeeded = new Set<number>()
    let requests = 0
    const receiver = await startReceiver((r) => {
      requests++
      if (Math.random() < 0.2) return { status: 500 }
      const { key, n } = JSON.parse(r.body) as { key: string; n: number }
      if (!succeeded.has(n)) {
        succeeded.add(n)
        firsts.push([key, n])
      }
      return {}
    })
    cleanups.push(receiver.close)
    const db = await createTestDatabase()
    cleanups.push(db.drop)
    const api = await createOutflow({ storage: postgres({ url: db.url }), encryptionKey, auth: false, allowPrivateNetworks: true, delivery: { worker: false } })
    cleanups.push(() => api.close())
    await api.upsertTenant('o', {})
    await api.createDestination('o', {
      id: 'fifo',
      type: 'webhook',
      topics: '*',
      config: { url: `${receiver.url}/fifo` },
      delivery: { ordering: 'fifo', ordering_key: 'data.key', schedule: [20], max_attempts: 100 },
    })
    const instances = [0, 1, 2].map(() => startScaleInstance(db.url, 2_000))
    cleanups.push(() => killScaleInstances(instances))
    await Promise.all(instances.map((i) => i.ready))
    for (let i = 0; i < EVENTS; i += 500)
      await api.publishMany(Array.from({ length: 500 }, (_, j) => ({ tenant_id: 'o', topic: 'order.created', data: { key: `k${(i + j) % KEYS}`, n: i + j } })))
    await waitFor(() => succeeded.size >= EVENTS / 5, 120_000, 'a fifth of the events delivered')
    instances[0]!.proc.kill('SIGKILL')
    await instances[0]!.exited
    await waitFor(() => succeeded.size === EVENTS, 240_000, 'every event delivered after the kill')
    process.stdout.write(`ordering: ${EVENTS} events over ${KEYS} keys delivered with ${requests} requests (${requests - EVENTS} failed or repeated)\n`)
    for (let k = 0; k < KEYS; k++) {
      const order = firsts.filter(([key]) => key === `k${k}`).map(([, n]) => n)
      expect(order).toHaveLength(EVENTS / KEYS)
      expect(order).toEqual([...order].sort((a, b) => a - b))
    }
    const sql = pg(db.url, { max: 1 })
    cleanups.push(() => sql.end())
    await waitFor(async () => {
      const [row] = await sql<{ n: number }[]>`select count(*)::int as n from deliveries where status <> 'success'`
      return row!.n === 0
    }, 30_000, 'every delivery recorded as a success')
  }, 420_000)
})
