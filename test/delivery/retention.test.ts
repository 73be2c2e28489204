import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import type { Storage } from '../../src/storage/storage.js'
import { apiKey, encryptionKey, engineKinds, jwtSecret, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { seedOwners } from '../support/records.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

const day = 86_400_000
const daysAgo = (n: number) => new Date(Date.now() - n * day).toISOString()
const quick = { pollIntervalMs: 50, retry: { schedule: [60_000], jitter: 0 }, timeoutMs: 2_000 }

/** How many events the tenant has, whatever their state (event metrics count every stored event). */
async function stored(outflow: Outflow, tenant: string): Promise<number> {
  const res = await outflow.eventMetrics({ time: { start: '2000-01-01T00:00:00Z', end: '2100-01-01T00:00:00Z' }, measures: 'count', filters: { tenant_id: tenant } })
  return res.data[0]?.metrics.count ?? 0
}

/** `n` delivered events of `tenant` with `time` days ago, written straight to storage. */
async function seedDelivered(storage: Storage, tenant: string, n: number, daysOld: number): Promise<void> {
  const at = new Date(Date.now() - daysOld * day)
  await seedOwners(storage, { [tenant]: ['d'] })
  const items = Array.from({ length: n }, (_, i) => ({
    event: { tenant_id: tenant, id: `seed-${i}`, topic: 't', time: new Date(at.getTime() + i), data: {}, metadata: {}, eligible_for_retry: true, created_at: at },
    deliveries: [{ id: `dlv-${tenant}-${i}`, destination_id: 'd', next_attempt_at: at }],
  }))
  await storage.insertEvents(items)
  await storage.recordAttempts(
    items.map(({ event }, i) => ({
      attempt: {
        id: `att-${tenant}-${i}`, tenant_id: tenant, event_id: event.id, destination_id: 'd', delivery_id: `dlv-${tenant}-${i}`, attempt_number: 1, manual: false,
        status: 'success', response_status_code: 200, response_body: null, response_headers: null, error: null, error_kind: null, duration_ms: 1,
        delivered_at: at, topic: 't', destination_type: 'webhook',
      },
      delivery: { id: `dlv-${tenant}-${i}`, status: 'success', next_attempt_at: null, successful_at: at },
    })),
  )
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`retention: ${kind.name}`, () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      receiver = await startReceiver((r) => (r.path === '/fail' ? { status: 500 } : {}))
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('prunes delivered events older than the window; keeps pending and recent ones', async () => {
      const outflow = await kind.create({ delivery: quick, retention: { events: '2d', intervalMs: 3_600_000 } })
      await outflow.upsertTenant('r1')
      const ok = await outflow.createDestination('r1', { type: 'webhook', topics: ['ok'], config: { url: `${receiver.url}/ok` } })
      const failing = await outflow.createDestination('r1', { type: 'webhook', topics: ['fail'], config: { url: `${receiver.url}/fail` } })
      await outflow.publish({ id: 'old-delivered', tenant_id: 'r1', topic: 'ok', time: daysAgo(3), data: {} })
      await outflow.publish({ id: 'old-pending', tenant_id: 'r1', topic: 'fail', time: daysAgo(3), data: {} }) // retried in a minute
      await outflow.publish({ id: 'recent', tenant_id: 'r1', topic: 'ok', time: daysAgo(1), data: {} })
      await waitFor(async () => (await outflow.listEvents('r1')).models.length === 3, 10_000, 'three attempted events')

      const result = await outflow.prune()
      expect(result).toEqual({ events: 1, deliveries: 1, attempts: 1, locked: false, estimated: false })
      expect((await outflow.listEvents('r1')).models.map((e) => e.id).sort()).toEqual(['old-pending', 'recent'])
      expect(await outflow.getEvent('r1', 'old-pending', { destination_id: failing.id })).toMatchObject({ status: 'failed' })
      expect(await outflow.listDeliveries('r1', 'recent')).toHaveLength(1)
      expect((await rejection(outflow.listDeliveries('r1', 'old-delivered'))).status).toBe(404)
      // A publish of the pruned id is a new event now.
      expect((await outflow.publish({ id: 'old-delivered', tenant_id: 'r1', topic: 'ok', data: {} })).destination_ids).toEqual([ok.id])
    })

    it('prunes in the background, batch after batch', async () => {
      const outflow = await kind.create({ delivery: { worker: false }, retention: { events: '1d', batchSize: 7, intervalMs: 50 } })
      await outflow.upsertTenant('r2')
      await seedDelivered(outflow.storage, 'r2', 40, 5)
      await seedDelivered(outflow.storage, 'r2-recent', 3, 0)
      await waitFor(async () => (await stored(outflow, 'r2')) === 0, 15_000, 'the pruner to empty r2')
      expect(await stored(outflow, 'r2-recent')).toBe(3)
    })

    it('has no prune() without a retention option', async () => {
      const outflow = await kind.create()
      expect((await rejection(outflow.prune())).message).toMatch(/retention is not configured/)
    })
  })
}

describe('retention option', () => {
  it.each([[{ events: '30' }], [{ events: '30x' }], [{ events: '0d' }], [{ events: 30 }], [{ events: '1d', batchSize: 0 }], [{ batchSize: 10 }]])(
    'rejects %j with 422 naming the field, before opening storage',
    async (retention) => {
      const storage = async (): Promise<Storage> => {
        throw new Error('storage must not be opened')
      }
      const err = await rejection(createOutflow({ storage, retention } as never))
      expect(err.status).toBe(422)
      expect(Object.keys(err.data!)[0]).toMatch(/^retention\./)
    },
  )
})

describe.runIf(postgresAvailable)('retention: two engines on one Postgres', () => {
  let db: { url: string; drop: () => Promise<void> }
  const engines: Outflow[] = []
  const engine = async () => {
    const outflow = await createOutflow({
      storage: postgres({ url: db.url, max: 4 }),
      apiKey,
      jwtSecret,
      encryptionKey,
      delivery: { worker: false },
      retention: { events: '1d', batchSize: 50, intervalMs: 3_600_000 },
    })
    engines.push(outflow)
    return outflow
  }
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()))
    await db?.drop()
  })

  it('prunes on one instance at a time: the other finds the lock held and deletes nothing', async () => {
    const a = await engine()
    const b = await engine()
    // Each engine's first pass starts with it; prune() joins a running pass, so these wait for both to end.
    await Promise.all([a.prune(), b.prune()])
    await seedDelivered(a.storage, 'two', 20, 3)
    // A's pruner holds the lock (its pass is running): B's pass does nothing.
    const release = await a.storage.lockPruner!()
    try {
      expect(await b.prune()).toEqual({ events: 0, deliveries: 0, attempts: 0, locked: true, estimated: false })
      expect(await stored(b, 'two')).toBe(20)
    } finally {
      await release!()
    }
    expect(await b.prune()).toMatchObject({ events: 20, locked: false })
  })

  it('drops a whole past day on the partitioned layout: prune() counts its rows and each dropped day is logged', async () => {
    const logged: { fields: Record<string, unknown>; message: string }[] = []
    const log = (fields: Record<string, unknown>, message: string) => void logged.push({ fields, message })
    const outflow = await createOutflow({
      storage: postgres({ url: db.url, max: 4, partitionHistory: true }),
      apiKey,
      jwtSecret,
      encryptionKey,
      logger: { info: log, warn: log, error: log, debug: log },
      delivery: { worker: false },
      retention: { events: '1d', intervalMs: 3_600_000 },
    })
    engines.push(outflow)
    await outflow.prune()
    // The day 3 days ago gets its partitions (the engine makes only today's and the next 7 days'), then a log.
    const threeDaysAgo = new Date(Date.now() - 3 * day)
    await outflow.storage.prunePartitions!({ before: new Date(0), now: threeDaysAgo })
    await seedDelivered(outflow.storage, 'days', 30, 3)
    expect(await outflow.prune()).toMatchObject({ events: 30, deliveries: 30, attempts: 30, locked: false, estimated: false })
    const dropped = logged.filter((l) => l.message === 'retention: dropped a day of partitions' && l.fields.events === 30)
    expect(dropped).toEqual([{ message: 'retention: dropped a day of partitions', fields: { day: threeDaysAgo.toISOString().slice(0, 10).replaceAll('-', ''), events: 30, deliveries: 30, attempts: 30, estimated: false } }])
    expect(await stored(outflow, 'days')).toBe(0)
  })

  it('two passes started together never both delete', async () => {
    const [a, b] = engines
    await seedDelivered(a!.storage, 'together', 500, 3)
    const results = await Promise.all([a!.prune(), b!.prune()])
    expect(results.filter((r) => r.events > 0)).toHaveLength(1)
    expect(results[0]!.events + results[1]!.events).toBe(500)
    expect(await stored(a!, 'together')).toBe(0)
  })
})
