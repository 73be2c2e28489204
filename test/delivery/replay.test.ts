import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import type { ReplayJob } from '../../src/model/replay.js'
import type { ReplayStep, ReplayStepRequest } from '../../src/storage/storage.js'
import { engineKinds, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const quick = { pollIntervalMs: 50, retry: { schedule: [60_000], jitter: 0 }, timeoutMs: 2_000 }
const day = 86_400_000
const iso = (ms: number) => new Date(ms).toISOString()

/** The job once it is no longer running. */
const replayEnded = (outflow: Outflow, tenant: string, destinationId: string, jobId: string, timeoutMs: number, what: string) =>
  waitFor(async () => {
    const job = await outflow.getReplay(tenant, destinationId, jobId)
    return job.status !== 'running' && job
  }, timeoutMs, what)

/** Live traffic: one publish of `topic`, then a pause of `gapMs`, until the returned stop resolves. */
function pumpLive(outflow: Outflow, tenant: string, topic: string, gapMs: number): () => Promise<void> {
  let pumping = true
  const pump = (async () => {
    while (pumping) {
      await outflow.publish({ tenant_id: tenant, topic, data: {} })
      await new Promise((resolve) => setTimeout(resolve, gapMs))
    }
  })()
  return () => {
    pumping = false
    return pump
  }
}

// Replay by range: a durable job that re-sends a destination's past deliveries with their original webhook-id.
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`replay: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let release: () => void = () => {}
    let held = new Promise<void>((resolve) => (release = resolve))
    let releaseCancelled: () => void = () => {}
    const cancelHeld = new Promise<void>((resolve) => (releaseCancelled = resolve))
    /** Every step outcome of the replay runner, in order. */
    const steps: { request: ReplayStepRequest; step: ReplayStep }[] = []
    /** Requests the /slow paths hold now, and the most they held at once. */
    const open = new Map<string, number>()
    const peak = new Map<string, number>()
    /** While set, the /slow paths hold every request until it resolves (else 100 ms). */
    let holdSlow: Promise<void> | undefined
    const T = 'replays'
    beforeAll(async () => {
      receiver = await startReceiver((r, n) => {
        if (r.path.startsWith('/fail')) return { status: 500 }
        if (r.path.startsWith('/held')) return { until: held }
        if (r.path.startsWith('/cancelled')) return { until: cancelHeld }
        // Fails the first request, then answers nothing (the attempt times out).
        if (r.path.startsWith('/stuck')) return n === 0 ? { status: 500 } : { until: new Promise(() => {}) }
        // Answers after a pause, counting the requests it holds at once.
        if (r.path.startsWith('/slow')) {
          const path = r.path
          const now = (open.get(path) ?? 0) + 1
          open.set(path, now)
          peak.set(path, Math.max(peak.get(path) ?? 0, now))
          const answered = holdSlow ?? new Promise((resolve) => setTimeout(resolve, 100))
          return { until: answered.finally(() => open.set(path, open.get(path)! - 1)) }
        }
        return {}
      })
      const storage = await kind.openStorage()
      const advance = storage.advanceReplayJob.bind(storage)
      const tapped = {
        ...storage,
        advanceReplayJob: async (request: ReplayStepRequest) => {
          const step = await advance(request)
          steps.push({ request, step })
          return step
        },
      }
      // batchSize 5: a replay yields while more than 5 fresh deliveries are due.
      outflow = await kind.create({ storage: tapped, delivery: { ...quick, batchSize: 5 } })
      await outflow.upsertTenant(T, {})
      await outflow.upsertTenant('other', {})
    })
    afterAll(async () => {
      release()
      releaseCancelled()
      await kind.cleanup()
      await receiver.close()
    })

    /** A destination of its own topics (each test publishes its own), so tests do not feed each other's destinations. */
    const hook = (path: string, topics: string[], extra: Record<string, unknown> = {}) =>
      outflow.createDestination(T, { type: 'webhook', topics, config: { url: `${receiver.url}${path}` }, ...extra })
    const ids = (path: string) => receiver.on(path).map((r) => String(r.headers['webhook-id']))
    const finished = (destinationId: string, jobId: string, tenant = T) => replayEnded(outflow, tenant, destinationId, jobId, 15_000, `replay ${jobId}`)

    it('re-sends the failed deliveries of a time range with their original webhook-id, and counts them', async () => {
      // One attempt each at a receiver that fails, then the receiver is fixed.
      const d = await hook('/fail-then-fixed', ['t1.a', 't1.b'], { delivery: { max_attempts: 1 } })
      const base = Date.now() - day
      const published = []
      for (let i = 0; i < 5; i++) published.push((await outflow.publish({ tenant_id: T, topic: i === 4 ? 't1.b' : 't1.a', time: iso(base + i * 1000), data: { i } })).id)
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'failed' })).models.length === 5, 10_000, 'five failed deliveries')
      await outflow.updateDestination(T, d.id, { config: { url: `${receiver.url}/fixed` } })
      // Events 1–3 by time; event 0 is before `since`, and event 4 has another topic.
      const job = await outflow.replayDestination(T, d.id, { since: iso(base + 1000), until: iso(base + 4000), topics: ['t1.a'] })
      expect(job).toMatchObject({ destination_id: d.id, status: 'running', matched: 3, done: 0, failed: 0, criteria: { status: 'failed', topics: ['t1.a'] } })
      const ended = await finished(d.id, job.id)
      expect(ended).toMatchObject({ status: 'completed', matched: 3, done: 3, failed: 0, finished_at: expect.any(String) })
      expect(ids('/fixed').sort()).toEqual(published.slice(1, 4).sort())
      const pairs = (await outflow.listEvents(T, { destination_id: d.id })).models
      expect(pairs.filter((e) => e.status === 'success').map((e) => e.id).sort()).toEqual(published.slice(1, 4).sort())
      // Replayed attempts are manual ones in the attempt log.
      expect((await outflow.listDeliveries(T, published[1]!))[0]).toMatchObject({ status: 'success', manual: true })
    })

    it('counts a replayed attempt that fails again as failed', async () => {
      const d = await hook('/fail-always', ['t2'], { delivery: { max_attempts: 1 } })
      const { id } = await outflow.publish({ tenant_id: T, topic: 't2', data: {} })
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'failed' })).models.length === 1, 10_000, 'the failed delivery')
      const job = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day) })
      expect(await finished(d.id, job.id)).toMatchObject({ status: 'completed', matched: 1, done: 1, failed: 1 })
      expect(ids('/fail-always')).toEqual([id, id])
    })

    it('selects by status: success re-sends delivered events, all re-sends every finished one', async () => {
      const d = await hook('/by-status', ['t3'])
      const { id } = await outflow.publish({ tenant_id: T, topic: 't3', data: {} })
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'success' })).models.length === 1, 10_000, 'the first delivery recorded')
      const failedOnly = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day) })
      expect(await finished(d.id, failedOnly.id)).toMatchObject({ matched: 0, done: 0, status: 'completed' })
      const success = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'success' })
      expect(await finished(d.id, success.id)).toMatchObject({ matched: 1, done: 1, failed: 0 })
      const all = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'all' })
      expect(await finished(d.id, all.id)).toMatchObject({ matched: 1, done: 1 })
      expect(ids('/by-status')).toEqual([id, id, id])
    })

    it('after re-enabling, a replay of status skipped sends exactly what was skipped; the enable answer says how', async () => {
      const d = await hook('/skipped', ['t4'])
      await outflow.disableDestination(T, d.id)
      const skipped = []
      for (let i = 0; i < 3; i++) skipped.push((await outflow.publish({ tenant_id: T, topic: 't4', data: { i } })).id)
      const enabled = await outflow.enableDestination(T, d.id)
      expect(enabled.disabled_at).toBeNull()
      expect(enabled.recovery).toMatchObject({ skipped: 3, replay: { method: 'POST', path: `/tenants/${T}/destinations/${d.id}/replay`, body: { status: 'skipped' } } })
      expect(enabled.recovery!.how_to_replay).toContain(`/tenants/${T}/destinations/${d.id}/replay`)
      const { id: live } = await outflow.publish({ tenant_id: T, topic: 't4', data: {} })
      const job = await outflow.replayDestination(T, d.id, enabled.recovery!.replay.body)
      expect(await finished(d.id, job.id)).toMatchObject({ matched: 3, done: 3, failed: 0 })
      await waitFor(() => receiver.on('/skipped').length === 4, 10_000, 'the live event')
      expect(ids('/skipped').sort()).toEqual([...skipped, live].sort())
      const pairs = (await outflow.listEvents(T, { destination_id: d.id })).models
      expect(pairs.every((e) => e.status === 'success' && e.skipped_at === undefined)).toBe(true)
      // Nothing is left to recover: the next enable answers without `recovery`.
      await outflow.disableDestination(T, d.id)
      expect(await outflow.enableDestination(T, d.id)).not.toHaveProperty('recovery')
    })

    it('enable with replay=skipped starts that replay in one call', async () => {
      const d = await hook('/enable-replay', ['t5'])
      await outflow.disableDestination(T, d.id)
      const { id } = await outflow.publish({ tenant_id: T, topic: 't5', data: {} })
      const enabled = await outflow.enableDestination(T, d.id, { replay: 'skipped' })
      const job = enabled.recovery!.replay_job!
      expect(job).toMatchObject({ destination_id: d.id, matched: 1, criteria: { status: 'skipped' } })
      expect(await finished(d.id, job.id)).toMatchObject({ status: 'completed', done: 1 })
      expect(ids('/enable-replay')).toEqual([id])
    })

    it('fans a tenant-wide replay out to one job per destination', async () => {
      const a = await hook('/fan-a', ['fan'])
      const b = await hook('/fan-b', ['fan'])
      const off = await hook('/fan-off', ['fan'])
      await outflow.disableDestination(T, off.id)
      const since = iso(Date.now() - 1)
      const { id } = await outflow.publish({ tenant_id: T, topic: 'fan', data: {} })
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: [a.id, b.id], status: 'success' })).models.length === 2, 10_000, 'the deliveries recorded')
      const jobs = await outflow.replayTenant(T, { since, status: 'success', topics: ['fan'], destination_id: [a.id, b.id] })
      expect(jobs.map((j) => j.destination_id).sort()).toEqual([a.id, b.id].sort())
      for (const j of jobs) expect(await finished(j.destination_id, j.id)).toMatchObject({ matched: 1, done: 1 })
      expect(ids('/fan-a')).toEqual([id, id])
      expect(ids('/fan-b')).toEqual([id, id])
      // Without destination_id: every enabled destination of the tenant, the disabled one left out.
      const every = await outflow.replayTenant(T, { since, status: 'success', topics: ['fan'] })
      expect(every.map((j) => j.destination_id)).toContain(a.id)
      expect(every.map((j) => j.destination_id)).not.toContain(off.id)
      for (const j of every) await finished(j.destination_id, j.id)
      expect((await rejection(outflow.replayTenant(T, { since, destination_id: [off.id] }))).status).toBe(409)
      expect((await rejection(outflow.replayTenant(T, { since, destination_id: [a.id, 'nope'] })))).toMatchObject({ status: 422, data: { 'destination_id.1': expect.any(String) } })
    })

    it('cancels a running replay: it stops after the batch already handed out', async () => {
      // The receiver holds every request until released: the first batch is still in flight when cancelled.
      const d = await hook('/cancelled', ['t7'], { delivery: { max_attempts: 1 } })
      await outflow.disableDestination(T, d.id)
      await outflow.publishMany(Array.from({ length: 300 }, (_, i) => ({ tenant_id: T, topic: 't7', data: { i } })))
      await outflow.enableDestination(T, d.id)
      const job = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'skipped' })
      expect(job.matched).toBe(300)
      await waitFor(() => steps.some((s) => s.request.id === job.id && s.step.outcome === 'handed'), 60_000, 'the first batch')
      const cancelled = await outflow.cancelReplay(T, d.id, job.id)
      expect(cancelled).toMatchObject({ status: 'cancelled', finished_at: expect.any(String), done: 0 })
      // Cancelling again answers the job as it ended.
      expect(await outflow.cancelReplay(T, d.id, job.id)).toEqual(cancelled)
      releaseCancelled()
      // The batch handed out (200) is attempted; the 100 after it were never handed out and stay skipped. The waits
      // only catch what never happens: 200 deliveries took over 15 s, the test over 30 s, at a load average of 25
      // on 2 cores (on Node 20 and 22 alike).
      await waitFor(() => receiver.on('/cancelled').length === 200, 60_000, 'the batch handed out')
      const pairs = (await outflow.listEvents(T, { destination_id: d.id, limit: 1000 })).models
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'success', limit: 1000 })).models.length === 200, 60_000, 'the batch recorded')
      expect(pairs).toHaveLength(300)
      expect((await outflow.listEvents(T, { destination_id: d.id, limit: 1000 })).models.filter((e) => e.skipped_at).length).toBe(100)
      expect(await outflow.getReplay(T, d.id, job.id)).toEqual(cancelled)
    }, 180_000)

    it('yields to fresh deliveries: hands out nothing while more are due than one claim takes', async () => {
      const live = await hook('/held', ['t8.live'], { delivery: { timeout_ms: 30_000 } })
      const d = await hook('/after-live', ['t8.old'])
      const { id: old } = await outflow.publish({ tenant_id: T, topic: 't8.old', data: {} })
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'success' })).models.length === 1, 10_000, 'the first delivery recorded')
      // Fresh deliveries held by the receiver: pending and due until it answers.
      await outflow.publishMany(Array.from({ length: 20 }, () => ({ tenant_id: T, topic: 't8.live', data: {} })))
      const job = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'success' })
      await waitFor(() => steps.some((s) => s.request.id === job.id && s.step.outcome === 'yielded'), 10_000, 'a step that yields')
      expect(steps.filter((s) => s.request.id === job.id).every((s) => s.step.outcome === 'yielded')).toBe(true)
      expect(receiver.on('/after-live').length).toBe(1)
      release()
      held = Promise.resolve()
      expect(await finished(d.id, job.id)).toMatchObject({ status: 'completed', done: 1 })
      expect(ids('/after-live')).toEqual([old, old])
      // Every held live delivery was answered before the replayed one was sent.
      const lastLive = Math.max(...receiver.on('/held').map((r) => r.at))
      expect(receiver.on('/held')).toHaveLength(20)
      expect(receiver.on('/after-live')[1]!.at).toBeGreaterThanOrEqual(lastLive)
    })

    it('while live deliveries flow, a replay takes at most a twenty-fifth of the slots; alone, it takes all it may', async () => {
      const d = await hook('/slow-share', ['t10.old'])
      await hook('/live-share', ['t10.live'])
      await outflow.publishMany(Array.from({ length: 30 }, () => ({ tenant_id: T, topic: 't10.old', data: {} })))
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'success', limit: 100 })).models.length === 30, 10_000, 'the first deliveries recorded')
      peak.set('/slow-share', 0)
      // A live event every 50 ms for as long as the replay runs.
      const stopPump = pumpLive(outflow, T, 't10.live', 50)
      const beside = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'success' })
      expect(await finished(d.id, beside.id)).toMatchObject({ status: 'completed', done: 30 })
      await stopPump()
      // concurrency 50: at most 2 slots for the replay beside live traffic.
      expect(peak.get('/slow-share')).toBeLessThanOrEqual(2)
      expect(receiver.on('/slow-share')).toHaveLength(60)
      // Live traffic stopped a second ago: the replay takes the destination's 20 slots.
      await waitFor(() => receiver.on('/live-share').length >= 10, 10_000, 'the live deliveries')
      await new Promise((resolve) => setTimeout(resolve, 1_200))
      let answer = () => {}
      holdSlow = new Promise<void>((resolve) => (answer = resolve))
      const alone = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'success' })
      await waitFor(() => open.get('/slow-share') === 20, 10_000, '20 replayed requests held at once')
      holdSlow = undefined
      answer()
      expect(await finished(d.id, alone.id)).toMatchObject({ status: 'completed', done: 30 })
    })

    it('beside live deliveries that start late (a busy event loop), a replay starts at most 5 a second, and finishes', async () => {
      const d = await hook('/slow-busy', ['t12.old'])
      await hook('/live-busy', ['t12.live'])
      await outflow.publishMany(Array.from({ length: 20 }, () => ({ tenant_id: T, topic: 't12.old', data: {} })))
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'success', limit: 100 })).models.length === 20, 10_000, 'the first deliveries recorded')
      const stopPump = pumpLive(outflow, T, 't12.live', 50)
      // Live deliveries on time first (what a publish takes here), then the event loop busy 45 ms at a time.
      const live = receiver.on('/live-busy').length
      await waitFor(() => receiver.on('/live-busy').length >= live + 5, 10_000, 'live deliveries on time')
      const spinner = setInterval(() => {
        const until = performance.now() + 45
        while (performance.now() < until);
      }, 10)
      try {
        await new Promise((resolve) => setTimeout(resolve, 300))
        const before = receiver.on('/slow-busy').length
        const job = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'success' })
        await waitFor(() => steps.some((s) => s.request.id === job.id && s.step.outcome === 'handed'), 10_000, 'the batch handed out')
        const handed = receiver.on('/slow-busy').length
        await new Promise((resolve) => setTimeout(resolve, 1_500))
        // At most one start at once, then 5 a second: 8.5 in 1.5 s (1 more for the moment the batch came).
        expect(receiver.on('/slow-busy').length - handed).toBeLessThanOrEqual(10)
        clearInterval(spinner)
        expect(await finished(d.id, job.id)).toMatchObject({ status: 'completed', done: 20 })
        expect(receiver.on('/slow-busy').length - before).toBe(20)
      } finally {
        clearInterval(spinner)
        await stopPump()
      }
    })

    it('a live delivery to the destination being replayed goes ahead of the replayed ones queued for it', async () => {
      const d = await hook('/slow-shared', ['t11'])
      const old = await outflow.publishMany(Array.from({ length: 100 }, () => ({ tenant_id: T, topic: 't11', data: {} })))
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'success', limit: 100 })).models.length === 100, 15_000, 'the first deliveries recorded')
      await new Promise((resolve) => setTimeout(resolve, 1_200)) // no live traffic for a second: the replay takes every slot it may
      const before = receiver.on('/slow-shared').length
      const job = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day), status: 'success' })
      // Every replayed delivery is claimed and queued by then (a batch of 100, 20 of them in flight at a time).
      await waitFor(() => receiver.on('/slow-shared').length >= before + 25, 10_000, 'the replay under way')
      const sent = receiver.on('/slow-shared').length - before
      const { id: live } = await outflow.publish({ tenant_id: T, topic: 't11', data: {} })
      expect(await finished(d.id, job.id)).toMatchObject({ status: 'completed', done: 100 })
      await waitFor(() => ids('/slow-shared').includes(live), 10_000, 'the live delivery')
      const replayed = ids('/slow-shared').slice(before)
      expect(replayed).toHaveLength(101)
      expect(new Set(replayed)).toEqual(new Set([...old.map((e) => e.id), live]))
      // At most 20 replayed requests were in flight when it was published: it takes the first slot that frees up.
      expect(replayed.indexOf(live)).toBeLessThanOrEqual(sent + 25)
    })

    it('rejects a bad request with the status that names it, and starts nothing', async () => {
      const d = await hook('/bad', ['t9'])
      const since = iso(Date.now() - day)
      const cases: [unknown, string][] = [
        [{}, 'since'],
        [{ since: 'yesterday' }, 'since'],
        [{ since, until: iso(Date.now() - 2 * day) }, 'until'],
        [{ since, status: 'pending' }, 'status'],
        [{ since, topics: [] }, 'topics'],
        [{ since, topics: ['a b'] }, 'topics.0'],
        [{ since, extra: 1 }, 'extra'],
        [[], '(body)'],
      ]
      for (const [body, field] of cases) {
        const err = await rejection(outflow.replayDestination(T, d.id, body))
        expect(err.status, JSON.stringify(body)).toBe(422)
        expect(err.data, JSON.stringify(body)).toHaveProperty([field])
      }
      expect((await rejection(outflow.replayDestination(T, 'nope', { since }))).status).toBe(404)
      expect((await rejection(outflow.replayDestination('nobody', d.id, { since }))).status).toBe(404)
      await outflow.disableDestination(T, d.id)
      expect((await rejection(outflow.replayDestination(T, d.id, { since }))).status).toBe(409)
      expect((await rejection(outflow.getReplay(T, d.id, 'rpl_missing'))).status).toBe(404)
      expect((await rejection(outflow.cancelReplay(T, d.id, 'rpl_missing'))).status).toBe(404)
    })

    it("reads and cancels a job only through its own tenant and destination", async () => {
      const d = await hook('/scoped', ['t10'])
      const other = await hook('/scoped-other', ['t10'])
      const job: ReplayJob = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day) })
      expect((await rejection(outflow.getReplay(T, other.id, job.id))).status).toBe(404)
      expect((await rejection(outflow.getReplay('other', d.id, job.id))).status).toBe(404)
      expect((await rejection(outflow.cancelReplay('other', d.id, job.id))).status).toBe(404)
      expect((await outflow.getReplay(T, d.id, job.id)).id).toBe(job.id)
    })

    it('ends a replay whose destination is deleted', async () => {
      const d = await hook('/stuck', ['t11'], { delivery: { max_attempts: 1, timeout_ms: 1_000 } })
      await outflow.publish({ tenant_id: T, topic: 't11', data: {} })
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: d.id, status: 'failed' })).models.length === 1, 10_000, 'the failed delivery')
      const job = await outflow.replayDestination(T, d.id, { since: iso(Date.now() - day) })
      // Its one delivery handed out and in flight (the receiver does not answer): the job cannot have ended.
      await waitFor(() => steps.some((s) => s.request.id === job.id && s.step.outcome === 'handed'), 10_000, 'the batch handed out')
      await outflow.deleteDestination(T, d.id)
      expect(await outflow.getReplay(T, d.id, job.id)).toMatchObject({ status: 'cancelled', done: 0, finished_at: expect.any(String) })
    })
  })
}

// The database is what a replay shares with live traffic that the event loop does not show (on Postgres another
// process): while fresh publishes reach their attempt late, a replay runs at its floor rate. (That steady slow
// commits are not late, measured against what publishes take here, is a rule of test/delivery/replay-admission.test.ts.)
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`replay beside slow publishes: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    /** Added to each publish's storage call while set: its events reach their attempts that much late. */
    let slowPublishMs = 0
    const T = 'slow-publishes'
    beforeAll(async () => {
      // The replayed destination answers after 100 ms: at 2 slots beside live traffic, 20 a second without the rate.
      receiver = await startReceiver((r) => (r.path.startsWith('/old') ? { until: new Promise((resolve) => setTimeout(resolve, 100)) } : {}))
      const storage = await kind.openStorage()
      const insert = storage.insertEvents.bind(storage)
      const tapped = {
        ...storage,
        insertEvents: async (...args: Parameters<typeof storage.insertEvents>) => {
          if (slowPublishMs) await new Promise((resolve) => setTimeout(resolve, slowPublishMs))
          return insert(...args)
        },
      }
      outflow = await kind.create({ storage: tapped, delivery: quick })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('starts at most 5 replayed attempts a second while fresh publishes reach their attempts late, and finishes after', async () => {
      const old = await outflow.createDestination(T, { type: 'webhook', topics: ['old'], config: { url: `${receiver.url}/old` } })
      await outflow.createDestination(T, { type: 'webhook', topics: ['live'], config: { url: `${receiver.url}/live` } })
      await outflow.publishMany(Array.from({ length: 20 }, () => ({ tenant_id: T, topic: 'old', data: {} })))
      await waitFor(async () => (await outflow.listEvents(T, { destination_id: old.id, status: 'success', limit: 100 })).models.length === 20, 10_000, 'the first deliveries recorded')
      const stopPump = pumpLive(outflow, T, 'live', 20)
      try {
        // Publishes as quick as this database is, then 100 ms slower (late even when a busy machine makes every commit slow).
        await waitFor(() => receiver.on('/live').length >= 5, 10_000, 'live deliveries')
        slowPublishMs = 100
        await waitFor(() => receiver.on('/live').length >= 8, 10_000, 'slow live deliveries')
        const before = receiver.on('/old').length
        const job = await outflow.replayDestination(T, old.id, { since: iso(Date.now() - day), status: 'success' })
        const liveBefore = receiver.on('/live').length
        await new Promise((resolve) => setTimeout(resolve, 1_500))
        // Late publishes took the rate from 20/s to its floor of 5/s before the replay came: 8.5 in 1.5 s at most.
        expect(receiver.on('/old').length - before).toBeLessThanOrEqual(10)
        expect(receiver.on('/live').length).toBeGreaterThan(liveBefore)
        await stopPump()
        slowPublishMs = 0
        const done = await replayEnded(outflow, T, old.id, job.id, 15_000, 'the replay')
        expect(done).toMatchObject({ status: 'completed', done: 20 })
        expect(receiver.on('/old').length - before).toBe(20)
      } finally {
        slowPublishMs = 0
        await stopPump()
      }
    })
  })
}
