import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import type { ExpungeJob } from '../../src/model/expunge.js'
import type { Storage } from '../../src/storage/storage.js'
import { engineKinds, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// Erasure against a real receiver: what an erasure cancels never reaches it, whether pending in storage (a retry),
// held by the worker (claimed, queued behind a slow attempt), or claimed with its payload already erased.
const quick = { pollIntervalMs: 50, retry: { schedule: [300], jitter: 0 }, timeoutMs: 5_000, perDestinationConcurrency: 1 }

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`erasure and delivery: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let release: () => void = () => {}
    const held = new Promise((resolve) => (release = () => resolve(undefined)))
    /** Events whose claimed copy the storage hands out with their payload erased (the guard's case). */
    const erasedOnClaim = new Set<string>()
    const T = 'erasure'
    beforeAll(async () => {
      // Each event's first attempt at /fail… answers 500 (a retry follows); the first at /slow hangs until released.
      const seen = new Set<unknown>()
      receiver = await startReceiver((r, n) => {
        const first = !seen.has(r.headers['webhook-id'])
        seen.add(r.headers['webhook-id'])
        if (r.path.startsWith('/fail') && first) return { status: 500, body: `bad ${r.body}` }
        return r.path === '/slow' && n === 0 ? { until: held } : { body: `ok ${r.body}` }
      })
      const storage: Storage = await kind.openStorage()
      const claim = storage.claimDueDeliveries.bind(storage)
      const tapped: Storage = {
        ...storage,
        claimDueDeliveries: async (q) =>
          (await claim(q)).map((d) => (erasedOnClaim.has(d.event_id) ? { ...d, event: { ...d.event, data: null, data_json: 'null' } } : d)),
      }
      outflow = await kind.create({ storage: tapped, delivery: quick })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      release()
      await kind.cleanup()
      await receiver.close()
    })

    /** A webhook destination; `retryMs`: its one retry comes that long after a failed first attempt. */
    const hook = (path: string, topic: string, retryMs?: number) =>
      outflow.createDestination(T, { type: 'webhook', topics: [topic], config: { url: `${receiver.url}${path}` }, ...(retryMs ? { delivery: { schedule: [retryMs] } } : {}) })
    const sent = (path: string, eventId: string) => receiver.on(path).filter((r) => r.headers['webhook-id'] === eventId)

    it('cancels a pending retry: the receiver never gets it, and the log keeps the attempt without its body', async () => {
      await hook('/fail-retry', 'retry', 2_000)
      const { id: erased } = await outflow.publish({ tenant_id: T, topic: 'retry', data: { email: 'a@example.com' } })
      const { id: kept } = await outflow.publish({ tenant_id: T, topic: 'retry', data: { email: 'b@example.com' } })
      await waitFor(() => sent('/fail-retry', kept).length === 1 && sent('/fail-retry', erased).length === 1, 10_000, 'both first attempts')
      // The receiver has the request before the attempt is written; until then the log answers not_found.
      await waitFor(async () => (await outflow.listDeliveries(T, erased).catch(() => [])).length === 1, 10_000, 'the failed attempt recorded')
      expect(await outflow.expungeEvents(T, { ids: [erased, 'unknown'] })).toEqual({ results: [{ id: erased, status: 'expunged' }, { id: 'unknown', status: 'not_found' }] })
      // The kept event's retry was due no sooner than the erased one's: once it arrived, the erased one would have.
      await waitFor(() => sent('/fail-retry', kept).length === 2, 10_000, 'the kept event retried')
      expect(sent('/fail-retry', erased)).toHaveLength(1)
      const event = await outflow.getEvent(T, erased)
      expect(event).toMatchObject({ id: erased, data: null, expunged_at: expect.any(String), status: 'failed', topic: 'retry' })
      expect(await outflow.listDeliveries(T, erased)).toMatchObject([{ response_status_code: 500, response_body: null, status: 'failed' }])
      expect((await outflow.getEvent(T, kept)).data).toEqual({ email: 'b@example.com' })
      // Never sent again: a manual retry is refused.
      expect(await rejection(outflow.retryDelivery(T, event.destination_id, erased))).toMatchObject({ status: 409 })
    })

    it('drops a delivery the worker holds queued behind a slow attempt, so its payload is not sent after the erasure returns', async () => {
      await hook('/slow', 'slow')
      const { id: first } = await outflow.publish({ tenant_id: T, topic: 'slow', data: { n: 1 } })
      await waitFor(() => sent('/slow', first).length === 1, 10_000, 'the slow attempt started')
      // One attempt per destination at a time: this one waits in the worker's queue, claimed with its payload.
      const { id: queued } = await outflow.publish({ tenant_id: T, topic: 'slow', data: { n: 2 } })
      expect((await outflow.expungeEvents(T, { ids: [queued] })).results).toEqual([{ id: queued, status: 'expunged' }])
      release()
      const { id: after } = await outflow.publish({ tenant_id: T, topic: 'slow', data: { n: 3 } })
      await waitFor(() => sent('/slow', after).length === 1, 10_000, 'the event published after')
      expect(sent('/slow', queued)).toEqual([])
    })

    it('never sends an empty body for a delivery claimed with its payload erased', async () => {
      await hook('/fail-guard', 'guard', 1_500)
      const { id: erased } = await outflow.publish({ tenant_id: T, topic: 'guard', data: { n: 1 } })
      const { id: kept } = await outflow.publish({ tenant_id: T, topic: 'guard', data: { n: 2 } })
      await waitFor(() => sent('/fail-guard', erased).length === 1 && sent('/fail-guard', kept).length === 1, 10_000, 'both first attempts')
      // The retry is claimed from storage with data null, as a claim racing an erasure could see it.
      erasedOnClaim.add(erased)
      await waitFor(() => sent('/fail-guard', kept).length === 2, 10_000, 'the kept event retried')
      expect(sent('/fail-guard', erased)).toHaveLength(1)
      expect(receiver.received.filter((r) => r.body === 'null' || r.body === '')).toEqual([])
    })

    it('erases a time range as a job: every event of it, retries cancelled, the rest untouched', async () => {
      await hook('/fail-range', 'range', 2_000)
      const from = new Date()
      const ids: string[] = []
      for (let i = 0; i < 12; i++) ids.push((await outflow.publish({ tenant_id: T, topic: 'range', data: { i } })).id)
      await waitFor(() => ids.every((id) => sent('/fail-range', id).length >= 1), 10_000, 'first attempts')
      const job = (await outflow.expungeEvents(T, { from, topic: 'range' })) as ExpungeJob
      expect(job).toMatchObject({ status: 'created', expunged: 0, criteria: { from: from.toISOString(), topic: 'range' } })
      const done = await waitFor(async () => {
        const now = await outflow.getExpungeJob(T, job.id)
        return now.status === 'done' && now
      }, 10_000, 'the job done')
      expect(done).toMatchObject({ expunged: 12, finished_at: expect.any(String) })
      for (const id of ids) expect((await outflow.getEvent(T, id)).data).toBeNull()
      // Retries were due 2 s after the first attempts: a later event's whole cycle shows that time has passed.
      const { id: after } = await outflow.publish({ tenant_id: T, topic: 'range', data: { after: true } })
      await waitFor(() => sent('/fail-range', after).length === 2, 10_000, 'the later event retried')
      for (const id of ids) expect(sent('/fail-range', id)).toHaveLength(1)
      expect((await outflow.getEvent(T, after)).data).toEqual({ after: true })
      expect(await rejection(outflow.getExpungeJob('other-tenant', job.id))).toMatchObject({ status: 404 })
    })

    it('a replay skips expunged events', async () => {
      const d = await hook('/replayed', 'replayed')
      const from = new Date(Date.now() - 1000)
      const { id: erased } = await outflow.publish({ tenant_id: T, topic: 'replayed', data: { n: 1 } })
      const { id: kept } = await outflow.publish({ tenant_id: T, topic: 'replayed', data: { n: 2 } })
      await waitFor(() => sent('/replayed', erased).length === 1 && sent('/replayed', kept).length === 1, 10_000, 'first deliveries')
      // Both results written: an event is listed from its first recorded attempt (every() of none is true).
      await waitFor(async () => {
        const { models } = await outflow.listEvents(T, { destination_id: d.id })
        return models.length === 2 && models.every((e) => e.status === 'success')
      }, 10_000, 'successes recorded')
      await outflow.expungeEvents(T, { ids: [erased] })
      const job = await outflow.replayDestination(T, d.id, { since: from.toISOString(), status: 'all' })
      expect(job.matched).toBe(1)
      await waitFor(async () => (await outflow.getReplay(T, d.id, job.id)).status === 'completed', 10_000, 'the replay completed')
      expect(sent('/replayed', kept)).toHaveLength(2)
      expect(sent('/replayed', erased)).toHaveLength(1)
    })
  })
}
