import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import type { AttemptWrite } from '../../src/storage/storage.js'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, engineKinds, jwtSecret } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// The worker applies each destination's own `delivery` settings, and the engine's where it has none.
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`per-destination retry policy: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const recorded: AttemptWrite[] = []
    /** While set, a batch of attempt results with one for this destination waits for it (a retry is scheduled by its write). */
    let holdWrites: { destinationId: string; until: Promise<void> } | undefined
    const T = 'policy'
    beforeAll(async () => {
      receiver = await startReceiver((r) => {
        if (r.path.startsWith('/fail')) return { status: 500 }
        if (r.path.startsWith('/slow')) return { delayMs: 1_500 }
        return {}
      })
      const storage = await kind.openStorage()
      const recordAttempts = storage.recordAttempts.bind(storage)
      const tapped = {
        ...storage,
        recordAttempts: async (writes: AttemptWrite[]) => {
          recorded.push(...writes)
          if (holdWrites && writes.some((w) => w.attempt.destination_id === holdWrites!.destinationId)) await holdWrites.until
          return recordAttempts(writes)
        },
      }
      // Engine defaults: three retries 60/120/180 ms apart without jitter, a 10 s timeout.
      outflow = await kind.create({ storage: tapped, delivery: { pollIntervalMs: 50, retry: { schedule: [60, 120, 180], jitter: 0 }, timeoutMs: 10_000 } })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    const hook = (path: string, delivery?: unknown) =>
      outflow.createDestination(T, { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}${path}` }, ...(delivery ? { delivery } : {}) })
    const writesOf = (eventId: string, destinationId: string) => recorded.filter((w) => w.attempt.event_id === eventId && w.attempt.destination_id === destinationId)
    const delays = (writes: AttemptWrite[]) => writes.map((w) => w.delivery.next_attempt_at && w.delivery.next_attempt_at.getTime() - w.attempt.delivered_at.getTime())

    it('follows the engine schedule for a destination without settings', async () => {
      const d = await hook('/fail-engine')
      const { id } = await outflow.publish({ tenant_id: T, topic: 'a', data: {} })
      await waitFor(() => writesOf(id, d.id).at(-1)?.delivery.status === 'failed', 10_000, 'the last attempt')
      expect(delays(writesOf(id, d.id))).toEqual([60, 120, 180, null])
    })

    it('makes max_attempts attempts in all, then fails the delivery with nothing scheduled', async () => {
      const d = await hook('/fail-max', { max_attempts: 2 })
      const { id } = await outflow.publish({ tenant_id: T, topic: 'a', data: {} })
      await waitFor(() => writesOf(id, d.id).at(-1)?.delivery.status === 'failed', 10_000, 'the last attempt')
      const writes = writesOf(id, d.id)
      expect(writes.map((w) => w.attempt.attempt_number)).toEqual([1, 2])
      expect(delays(writes)).toEqual([60, null])
    })

    it('waits the delays of its own schedule list', async () => {
      const d = await hook('/fail-list', { schedule: [30, 90] })
      const { id } = await outflow.publish({ tenant_id: T, topic: 'a', data: {} })
      await waitFor(() => writesOf(id, d.id).at(-1)?.delivery.status === 'failed', 10_000, 'the last attempt')
      expect(delays(writesOf(id, d.id))).toEqual([30, 90, null])
    })

    it('waits base * factor^(n-1) for an exponential schedule, capped by max_attempts', async () => {
      const d = await hook('/fail-exp', { schedule: { base: 20, factor: 3, jitter: 0 }, max_attempts: 4 })
      const { id } = await outflow.publish({ tenant_id: T, topic: 'a', data: {} })
      await waitFor(() => writesOf(id, d.id).at(-1)?.delivery.status === 'failed', 10_000, 'the last attempt')
      expect(delays(writesOf(id, d.id))).toEqual([20, 60, 180, null])
    })

    it('ends an attempt at its own timeout_ms rather than the engine timeout', async () => {
      const d = await hook('/slow', { timeout_ms: 200, max_attempts: 1 })
      const { id } = await outflow.publish({ tenant_id: T, topic: 'a', data: {} })
      await waitFor(() => writesOf(id, d.id).length === 1, 10_000, 'the attempt')
      const [write] = writesOf(id, d.id)
      expect(write!.attempt).toMatchObject({ status: 'failed', error_kind: 'timeout', error: 'no complete response within 200 ms' })
      expect(write!.delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
    })

    it('applies a changed policy to the next attempt', async () => {
      const d = await hook('/fail-changed', { max_attempts: 10, schedule: [300] })
      // The first result is written only after the change: its retry cannot start before it, however slow the machine.
      let release = () => {}
      holdWrites = { destinationId: d.id, until: new Promise<void>((resolve) => (release = resolve)) }
      const { id } = await outflow.publish({ tenant_id: T, topic: 'a', data: {} })
      await waitFor(() => writesOf(id, d.id).length === 1, 10_000, 'the first attempt')
      await outflow.updateDestination(T, d.id, { delivery: { max_attempts: 2 } })
      holdWrites = undefined
      release()
      await waitFor(() => writesOf(id, d.id).at(-1)?.delivery.status === 'failed', 10_000, 'the last attempt')
      expect(writesOf(id, d.id).map((w) => w.attempt.attempt_number)).toEqual([1, 2])
    })
  })
}

describe.runIf(postgresAvailable)('per-destination retry policy across instances: postgres', () => {
  it('is applied by another instance that delivers what this one stored', async () => {
    const db = await createTestDatabase()
    const receiver = await startReceiver(() => ({ status: 500 }))
    const recorded: AttemptWrite[] = []
    const engines: Outflow[] = []
    try {
      // Engine A serves the API only; engine B, with a different default schedule, delivers.
      const a = await createOutflow({ storage: postgres({ url: db.url }), apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { worker: false } })
      engines.push(a)
      const storage = await postgres({ url: db.url })()
      const recordAttempts = storage.recordAttempts.bind(storage)
      const tapped = { ...storage, recordAttempts: (writes: AttemptWrite[]) => (recorded.push(...writes), recordAttempts(writes)) }
      const b = await createOutflow({ storage: tapped, apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { pollIntervalMs: 50, retry: { schedule: [5_000], jitter: 0 } } })
      engines.push(b)
      await a.upsertTenant('x', {})
      const d = await a.createDestination('x', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/fail` }, delivery: { max_attempts: 3, schedule: [40] } })
      const { id } = await a.publish({ tenant_id: 'x', topic: 'a', data: {} })
      await waitFor(() => recorded.at(-1)?.delivery.status === 'failed', 10_000, 'the last attempt')
      const writes = recorded.filter((w) => w.attempt.event_id === id && w.attempt.destination_id === d.id)
      expect(writes.map((w) => w.delivery.next_attempt_at && w.delivery.next_attempt_at.getTime() - w.attempt.delivered_at.getTime())).toEqual([40, 40, null])
    } finally {
      await Promise.all(engines.map((e) => e.close()))
      await receiver.close()
      await db.drop()
    }
  })
})
