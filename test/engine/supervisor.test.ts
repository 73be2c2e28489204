import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { injectFault, type LoopName } from '../../src/delivery/supervisor.js'
import type { Outflow } from '../../src/engine.js'
import type { Logger } from '../../src/logger.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Each loop of the engine is made to throw on every pass (a test-only hook at the place an unexpected error
// would surface; storage stays real), until health reports it failed; then the hook is cleared, and the
// loop must run again by itself: health recovers, and what was published meanwhile is delivered, once.

/** Restarted fast, failed after three throws in a row. */
const supervisor = { restarts: 3, backoffMs: 20, maxBackoffMs: 200 }
const quick = { pollIntervalMs: 50, retry: { schedule: [100], jitter: 0 } }
const admin = { authorization: `Bearer ${apiKey}` }
/** Enough throws to keep a loop failing until the test clears them. */
const always = 1_000_000

/** A logger that keeps what it is given, to count the lines of an outage. */
function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = []
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, fields, message })
  const logger: Logger = { info: at('info'), warn: at('warn'), error: at('error'), debug: at('debug') } as Logger
  return { logger, lines, of: (loop: LoopName) => lines.filter((l) => l.fields.loop === loop) }
}

async function healthz(outflow: Outflow) {
  const response = await outflow.fetch(new Request('http://host/api/v1/healthz'))
  return { status: response.status, body: (await response.json()) as Record<string, unknown> }
}

/** Health names `loop` failed, with a 503 on /healthz; resolves with the report. */
async function failedHealth(outflow: Outflow, loop: LoopName) {
  const report = await waitFor(async () => {
    const r = await outflow.health()
    return r.status === 'unhealthy' && r.loops.some((l) => l.name === loop && l.status === 'failed') && r
  }, 10_000, `health to report the ${loop} loop failed`)
  expect(report.loops.find((l) => l.name === loop)).toMatchObject({ status: 'failed', error: `injected fault in the ${loop} loop`, since: expect.any(String) })
  expect(report.loops.find((l) => l.name === loop)!.restarts).toBeGreaterThanOrEqual(supervisor.restarts)
  expect(await healthz(outflow)).toEqual({ status: 503, body: { status: 'unhealthy', failed_loops: [loop] } })
  const details = await outflow.fetch(new Request('http://host/api/v1/healthz?details=1', { headers: admin }))
  expect(details.status).toBe(503)
  return report
}

/** Clear the hook; health must come back on its own. */
async function recovers(outflow: Outflow, loop: LoopName) {
  injectFault(loop, 0)
  await waitFor(async () => (await outflow.health()).status === 'ok', 10_000, `health to recover from the ${loop} loop`)
  expect((await outflow.health()).loops.find((l) => l.name === loop)).toEqual({ name: loop, status: 'running', restarts: expect.any(Number) })
  expect(await healthz(outflow)).toEqual({ status: 200, body: { status: 'ok' } })
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`supervisor: ${kind.name}`, () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      // /flaky fails each path's first request; /slow answers after 300 ms.
      receiver = await startReceiver((r, n) => (r.path.startsWith('/flaky') && n === 0 ? { status: 500 } : r.path.startsWith('/slow') ? { delayMs: 300 } : {}))
    })
    afterEach(() => {
      for (const loop of ['claim', 'leases', 'results', 'listen', 'replay', 'expunge', 'prune'] as const) injectFault(loop, 0)
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    const setup = async (tenant: string, path: string, options: Record<string, unknown> = {}) => {
      const log = recordingLogger()
      const outflow = await kind.create({ delivery: quick, supervisor, logger: log.logger, ...options })
      await outflow.upsertTenant(tenant)
      const destination = await outflow.createDestination(tenant, { type: 'webhook', topics: '*', config: { url: `${receiver.url}${path}` } })
      return { outflow, destination, log }
    }
    const publishSome = (outflow: Outflow, tenant: string, prefix: string, count: number) =>
      Promise.all(Array.from({ length: count }, (_, i) => outflow.publish({ id: `${prefix}-${i}`, tenant_id: tenant, topic: 't', data: { i } })))
    const delivered = async (outflow: Outflow, tenant: string, count: number) =>
      waitFor(async () => (await outflow.listEvents(tenant, { status: 'success', limit: 100 })).models.length === count, 15_000, `${count} delivered events`)

    it('reports every loop it runs as running', async () => {
      const outflow = await kind.create({ supervisor, retention: { events: '30d', intervalMs: 3_600_000 } })
      const names = (await outflow.health()).loops.map((l) => l.name).sort()
      expect(names).toEqual(!kind.name.startsWith('sqlite') ? ['claim', 'expunge', 'leases', 'listen', 'prune', 'replay', 'results'] : ['claim', 'expunge', 'leases', 'prune', 'replay', 'results'])
      expect((await outflow.health()).loops.every((l) => l.status === 'running' && l.restarts === 0)).toBe(true)
    })

    it('restarts the claim loop: retries due meanwhile are claimed once it runs again; one log line per outage', async () => {
      const { outflow, log } = await setup('sv-claim', '/flaky-claim')
      injectFault('claim', always)
      await failedHealth(outflow, 'claim')
      // First attempts go out through the publish fast path; their retries need the claim loop.
      await publishSome(outflow, 'sv-claim', 'c', 3)
      await waitFor(() => receiver.received.filter((r) => r.path === '/flaky-claim').length >= 1, 10_000, 'the first attempts')
      await recovers(outflow, 'claim')
      await delivered(outflow, 'sv-claim', 3)
      // The first attempt of the path failed, every other request succeeded: one retry in all.
      expect(receiver.on('/flaky-claim')).toHaveLength(4)
      const lines = log.of('claim')
      expect(lines.map((l) => l.message)).toEqual([
        'the claim loop failed; restarting it',
        `the claim loop failed ${supervisor.restarts} times in a row: the engine reports itself unhealthy until it runs again`,
        'the claim loop is running again',
      ])
    })

    it('restarts lease renewal: deliveries held meanwhile are delivered once', async () => {
      const { outflow } = await setup('sv-leases', '/slow-leases', { delivery: { ...quick, leaseMs: 600 } })
      injectFault('leases', always)
      await failedHealth(outflow, 'leases')
      await publishSome(outflow, 'sv-leases', 'l', 5)
      await recovers(outflow, 'leases')
      await delivered(outflow, 'sv-leases', 5)
      const ids = receiver.on('/slow-leases').map((r) => String(r.headers['webhook-id']))
      expect(new Set(ids).size).toBe(5)
    })

    it('restarts the results writer: results recorded meanwhile are written, and nothing is attempted twice', async () => {
      const { outflow } = await setup('sv-results', '/results')
      injectFault('results', always)
      await publishSome(outflow, 'sv-results', 'r', 5)
      await failedHealth(outflow, 'results')
      await waitFor(() => receiver.on('/results').length === 5, 10_000, 'the five attempts')
      expect((await outflow.listEvents('sv-results', { status: 'success' })).models).toHaveLength(0)
      await recovers(outflow, 'results')
      await delivered(outflow, 'sv-results', 5)
      expect(receiver.on('/results')).toHaveLength(5)
    })

    it('restarts the replay runner: the replay created meanwhile runs once it does', async () => {
      const { outflow, destination } = await setup('sv-replay', '/replay')
      await publishSome(outflow, 'sv-replay', 'p', 4)
      await delivered(outflow, 'sv-replay', 4)
      injectFault('replay', always)
      await failedHealth(outflow, 'replay')
      const job = await outflow.replayDestination('sv-replay', destination.id, { since: new Date(Date.now() - 86_400_000).toISOString(), status: 'success' })
      await recovers(outflow, 'replay')
      await waitFor(async () => (await outflow.getReplay('sv-replay', destination.id, job.id)).status === 'completed', 15_000, 'the replay to complete')
      expect(receiver.on('/replay')).toHaveLength(8)
    })

    it('restarts the erasure runner: the erasure job created meanwhile is done once it runs again', async () => {
      const { outflow } = await setup('sv-expunge', '/expunge')
      await publishSome(outflow, 'sv-expunge', 'x', 3)
      await delivered(outflow, 'sv-expunge', 3)
      injectFault('expunge', always)
      await failedHealth(outflow, 'expunge')
      const job = await outflow.expungeEvents('sv-expunge', { from: new Date(Date.now() - 86_400_000).toISOString() })
      await recovers(outflow, 'expunge')
      await waitFor(async () => (await outflow.getExpungeJob('sv-expunge', job.id)).status === 'done', 15_000, 'the erasure job done')
      expect((await outflow.getExpungeJob('sv-expunge', job.id)).expunged).toBe(3)
      expect((await outflow.getEvent('sv-expunge', 'x-0')).data).toBeNull()
    })

    it('restarts the pruner: old events are pruned once it runs again', async () => {
      const { outflow } = await setup('sv-prune', '/prune', { retention: { events: '1d', intervalMs: 50 } })
      injectFault('prune', always)
      await failedHealth(outflow, 'prune')
      await outflow.publish({ id: 'old', tenant_id: 'sv-prune', topic: 't', time: new Date(Date.now() - 3 * 86_400_000).toISOString(), data: {} })
      await delivered(outflow, 'sv-prune', 1)
      await recovers(outflow, 'prune')
      await waitFor(async () => (await outflow.listEvents('sv-prune')).models.length === 0, 10_000, 'the old event pruned')
    })
  })
}

describe.runIf(postgresAvailable)('supervisor: the LISTEN connection on postgres', () => {
  const engines: Outflow[] = []
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  let db: Awaited<ReturnType<typeof createTestDatabase>>
  beforeAll(async () => {
    receiver = await startReceiver()
    db = await createTestDatabase()
  })
  afterAll(async () => {
    injectFault('listen', 0)
    await Promise.all(engines.map((e) => e.close().catch(() => {})))
    await receiver.close()
    await db.drop()
  })

  it('subscribes again after failing: work announced by an API-only instance wakes the worker, without a poll', async () => {
    const open = async (options: Record<string, unknown>) => {
      const outflow = await createOutflow({ storage: postgres({ url: db.url, max: 2 }), apiKey, encryptionKey, allowPrivateNetworks: true, supervisor, ...options })
      engines.push(outflow)
      return outflow
    }
    const api = await open({ delivery: { worker: false } })
    await api.upsertTenant('sv-listen')
    await api.createDestination('sv-listen', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/listen` } })
    injectFault('listen', always)
    // A poll a minute: only a notification gets a delivery out within the test's wait.
    const worker = await open({ delivery: { pollIntervalMs: 60_000 } })
    await failedHealth(worker, 'listen')
    await api.publish({ id: 'while-failed', tenant_id: 'sv-listen', topic: 't', data: {} })
    await recovers(worker, 'listen')
    // Subscribing again claims what was announced meanwhile, and later announcements arrive.
    await waitFor(() => receiver.on('/listen').length === 1, 10_000, 'the event published while the subscription was down')
    await api.publish({ id: 'after', tenant_id: 'sv-listen', topic: 't', data: {} })
    await waitFor(() => receiver.on('/listen').length === 2, 10_000, 'the event published after')
  })
})
