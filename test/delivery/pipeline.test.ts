import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AlertPayload } from '../../src/delivery/events.js'
import type { Outflow } from '../../src/engine.js'
import type { AttemptWrite } from '../../src/storage/storage.js'
import { engineKinds, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const quick = { pollIntervalMs: 50, retry: { schedule: [60, 120, 180], jitter: 0 }, timeoutMs: 2_000 }
const DAY = 24 * 3_600_000

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`delivery pipeline: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    /** Every attempt result the main engine wrote, with the delivery's next state (its `next_attempt_at`). */
    const recorded: AttemptWrite[] = []
    const T = 'shop'
    beforeAll(async () => {
      receiver = await startReceiver((r, n) => {
        if (r.path.startsWith('/fail-twice')) return n < 2 ? { status: 500, body: 'boom' } : {}
        if (r.path.startsWith('/always-500')) return { status: 500 }
        if (r.path === '/gone') return { status: 410 }
        if (r.path === '/throttled') return n === 0 ? { status: 429, headers: { 'retry-after': '1' } } : {}
        if (r.path === '/throttled-for-a-year') return { status: 429, headers: { 'retry-after': String(365 * 24 * 3600) } }
        if (r.path === '/unavailable-for-a-month') return { status: 503, headers: { 'retry-after': new Date(Date.now() + 30 * DAY).toUTCString() } }
        if (r.path === '/slow') return { delayMs: 300 }
        if (r.path === '/slow-lease') return { delayMs: 150 }
        return {}
      })
      // The real storage, with a tap on the attempt results the worker writes.
      const storage = await kind.openStorage()
      const recordAttempts = storage.recordAttempts.bind(storage)
      const tapped = { ...storage, recordAttempts: (writes: AttemptWrite[]) => (recorded.push(...writes), recordAttempts(writes)) }
      // One attempt at a time per destination, so a sentinel published last is attempted after everything before it.
      outflow = await kind.create({ topics: ['order.created', 'order.paid', 'user.created'], delivery: { ...quick, perDestinationConcurrency: 1 }, storage: tapped })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    /** Attempts of one event at one destination (the tenant has several destinations by now). */
    const attemptsAt = async (eventId: string, destinationId: string) =>
      (await outflow.listDeliveries(T, eventId).catch(() => [])).filter((a) => a.destination_id === destinationId)

    const hook = (path: string, extra: Record<string, unknown> = {}, tenant = T) =>
      outflow.createDestination(tenant, { type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}${path}` }, ...extra })

    /** The recorded attempt results of one delivery, in order. */
    const writesOf = (eventId: string, destinationId: string) => recorded.filter((w) => w.attempt.event_id === eventId && w.attempt.destination_id === destinationId)

    /**
     * The positive signal before asserting that nothing else arrived: a sentinel event published after the
     * calls under test, to the same destination, whose attempt is recorded. Its destination's queue runs one
     * attempt at a time in order, so every delivery enqueued before it has been attempted by then.
     */
    async function sentinel(destinationId: string, tenant = T): Promise<string> {
      // Not retried, so it arrives once even at a failing destination.
      const { id } = await outflow.publish({ tenant_id: tenant, topic: 'order.created', data: { sentinel: true }, destination_id: destinationId, eligible_for_retry: false })
      await waitFor(() => writesOf(id, destinationId).length === 1, 10_000, 'the sentinel attempt')
      return id
    }
    const ids = (path: string) => receiver.on(path).map((r) => r.headers['webhook-id'])

    it('fans an event out to every matching destination, signed with Standard Webhooks', async () => {
      const a = await hook('/fan-a')
      const b = await hook('/fan-b', { topics: '*' })
      const c = await hook('/fan-c', { topics: ['user.created'] })
      const result = await outflow.publish({ tenant_id: T, topic: 'order.created', data: { order: 1 }, metadata: { source: 'test' } })
      expect(result.duplicate).toBe(false)
      expect([...result.destination_ids].sort()).toEqual([a.id, b.id].sort())
      expect(result.destination_ids).not.toContain(c.id)
      await waitFor(() => receiver.on('/fan-a').length === 1 && receiver.on('/fan-b').length === 1, 10_000, 'fan-out')
      for (const [path, d] of [['/fan-a', a], ['/fan-b', b]] as const) {
        const req = receiver.on(path)[0]!
        const verified = new Webhook(String(d.credentials.secret)).verify(req.body, req.headers as Record<string, string>)
        expect(verified).toEqual({ order: 1 })
        expect(req.headers['webhook-id']).toBe(result.id)
        expect(req.headers['x-outflow-source']).toBe('test')
        expect(req.headers['x-outflow-topic']).toBe('order.created')
        expect(req.headers['user-agent']).toMatch(/^outflow\//)
      }
      expect(receiver.on('/fan-c')).toHaveLength(0)
      const event = await waitFor(async () => (await outflow.listEvents(T, { destination_id: a.id })).models[0])
      expect(event).toMatchObject({ id: result.id, destination_id: a.id, topic: 'order.created', status: 'success', data: { order: 1 }, metadata: { source: 'test' } })
    })

    it('is idempotent on (tenant, id): a republish creates no new deliveries', async () => {
      const d = await hook('/idem')
      const first = await outflow.publish({ id: 'evt-fixed-1', tenant_id: T, topic: 'order.created', data: { n: 1 } })
      const again = await outflow.publish({ id: 'evt-fixed-1', tenant_id: T, topic: 'order.created', data: { n: 2 } })
      expect(first).toEqual({ id: 'evt-fixed-1', duplicate: false, destination_ids: expect.arrayContaining([d.id]) })
      expect(again.duplicate).toBe(true)
      expect(again.destination_ids.sort()).toEqual(first.destination_ids.sort())
      const last = await sentinel(d.id)
      expect(ids('/idem')).toEqual(['evt-fixed-1', last])
      expect(JSON.parse(receiver.on('/idem')[0]!.body)).toEqual({ n: 1 })
      expect(writesOf('evt-fixed-1', d.id)).toHaveLength(1)
    })

    it('keys idempotency by (tenant, id): one event id published under two tenants is delivered to both, neither a duplicate', async () => {
      await outflow.upsertTenant('shop-2', {})
      const mine = await hook('/same-id-1')
      const theirs = await hook('/same-id-2', {}, 'shop-2')
      const publish = (tenant: string, id: string) => outflow.publish({ id, tenant_id: tenant, topic: 'order.created', data: { tenant } })
      // One after the other, in one commit (concurrent calls are written together), and in one publishMany.
      const sequential = [await publish(T, 'same-1'), await publish('shop-2', 'same-1')]
      const together = await Promise.all([publish(T, 'same-2'), publish('shop-2', 'same-2')])
      const batch = await outflow.publishMany([
        { id: 'same-3', tenant_id: T, topic: 'order.created', data: { tenant: T } },
        { id: 'same-3', tenant_id: 'shop-2', topic: 'order.created', data: { tenant: 'shop-2' } },
      ])
      for (const [own, other] of [sequential, together, batch] as const) {
        expect(own).toMatchObject({ duplicate: false, destination_ids: expect.arrayContaining([mine.id]) })
        expect(other).toEqual({ id: own!.id, duplicate: false, destination_ids: [theirs.id] })
      }
      // A republish under either tenant is that tenant's duplicate, naming only its own destinations.
      const again = await publish('shop-2', 'same-1')
      expect(again).toEqual({ id: 'same-1', duplicate: true, destination_ids: [theirs.id] })
      expect((await publish(T, 'same-1')).destination_ids).not.toContain(theirs.id)
      const last = await sentinel(theirs.id, 'shop-2')
      expect(ids('/same-id-2')).toEqual(['same-1', 'same-2', 'same-3', last])
      expect(receiver.on('/same-id-2').slice(0, 3).map((r) => JSON.parse(r.body))).toEqual([{ tenant: 'shop-2' }, { tenant: 'shop-2' }, { tenant: 'shop-2' }])
      await waitFor(() => receiver.on('/same-id-1').length === 3, 10_000, "the first tenant's three events")
      expect(new Set(ids('/same-id-1'))).toEqual(new Set(['same-1', 'same-2', 'same-3']))
      expect((await outflow.getEvent('shop-2', 'same-1')).data).toEqual({ tenant: 'shop-2' })
      expect((await outflow.getEvent(T, 'same-1', { destination_id: mine.id })).data).toEqual({ tenant: T })
    })

    it('delivers only to the named destination_id, and 404s an unknown one', async () => {
      const a = await hook('/only-a')
      await hook('/only-b')
      const r = await outflow.publish({ tenant_id: T, topic: 'order.created', data: {}, destination_id: a.id })
      expect(r.destination_ids).toEqual([a.id])
      expect((await rejection(outflow.publish({ tenant_id: T, topic: 'order.created', data: {}, destination_id: 'nope' }))).status).toBe(404)
    })

    it.each([
      ['an unknown tenant', { tenant_id: 'ghost', topic: 'order.created', data: {} }, 404],
      ['a topic outside the configured list', { tenant_id: T, topic: 'invoice.sent', data: {} }, 422],
      ['a topic pattern', { tenant_id: T, topic: 'order.*', data: {} }, 422],
      ['data that is not an object', { tenant_id: T, topic: 'order.created', data: 5 }, 422],
      ['a missing topic', { tenant_id: T, data: {} }, 422],
      ['an unexpected field', { tenant_id: T, topic: 'order.created', data: {}, colour: 1 }, 422],
      ['a bad time', { tenant_id: T, topic: 'order.created', data: {}, time: 'noon' }, 422],
    ])('rejects a publish with %s', async (_, body, status) => {
      expect((await rejection(outflow.publish(body))).status).toBe(status)
    })

    it('commits concurrent publishes together; one naming an unknown tenant fails alone', async () => {
      const d = await hook('/concurrent')
      const calls = Array.from({ length: 30 }, (_, i) =>
        outflow.publish({ tenant_id: i === 7 ? 'ghost' : T, topic: 'order.created', data: { i } }).then(
          (r) => ({ ok: true as const, r }),
          (e: { status: number }) => ({ ok: false as const, status: e.status }),
        ),
      )
      const results = await Promise.all(calls)
      expect(results.filter((r) => !r.ok)).toEqual([{ ok: false, status: 404 }])
      const ok = results.flatMap((r) => (r.ok ? [r.r] : []))
      expect(ok).toHaveLength(29)
      expect(ok.every((r) => r.destination_ids.includes(d.id) && !r.duplicate)).toBe(true)
      await waitFor(() => receiver.on('/concurrent').length === 29)
      expect(new Set(receiver.on('/concurrent').map((r) => JSON.parse(r.body).i)).has(7)).toBe(false)
    })

    it('replaces a destination\'s cached publisher when it is updated: the next delivery uses the new config', async () => {
      const d = await hook('/before-update')
      await outflow.publish({ tenant_id: T, topic: 'order.created', data: { n: 1 }, destination_id: d.id })
      await waitFor(() => receiver.on('/before-update').length === 1)
      await outflow.updateDestination(T, d.id, { config: { url: `${receiver.url}/after-update` } })
      await outflow.publish({ tenant_id: T, topic: 'order.created', data: { n: 2 }, destination_id: d.id })
      await waitFor(() => receiver.on('/after-update').length === 1)
      expect(JSON.parse(receiver.on('/after-update')[0]!.body)).toEqual({ n: 2 })
      expect(receiver.on('/before-update')).toHaveLength(1)
    })

    it('publishes a batch with publishMany', async () => {
      const d = await hook('/batch')
      const results = await outflow.publishMany(Array.from({ length: 20 }, (_, i) => ({ tenant_id: T, topic: 'order.created', data: { i } })))
      expect(results).toHaveLength(20)
      expect(results.every((r) => r.destination_ids.includes(d.id))).toBe(true)
      await waitFor(() => receiver.on('/batch').length === 20)
      expect(new Set(receiver.on('/batch').map((r) => r.headers['webhook-id'])).size).toBe(20)
    })

    it('retries on the schedule until the receiver succeeds, and logs every attempt', async () => {
      const d = await hook('/fail-twice')
      const { id } = await outflow.publish({ tenant_id: T, topic: 'order.created', data: { x: 1 } })
      await waitFor(() => receiver.on('/fail-twice').length === 3, 10_000, 'three attempts')
      const attempts = await waitFor(async () => {
        const list = await attemptsAt(id, d.id)
        return list.length === 3 && list
      })
      expect(attempts.map((a) => a.status)).toEqual(['success', 'failed', 'failed'])
      expect(attempts[2]).toMatchObject({ response_status_code: 500, response_body: 'boom', destination_id: d.id, attempt_number: 1 })
      expect(attempts[0]).toMatchObject({ response_status_code: 200, attempt_number: 3 })
      // Schedule [60, 120, 180]: each failure schedules the next attempt exactly its delay later, and the
      // next attempt waits for that time.
      const writes = writesOf(id, d.id)
      expect(writes.map((w) => w.delivery.status)).toEqual(['pending', 'pending', 'success'])
      expect(writes.map((w) => w.delivery.next_attempt_at && w.delivery.next_attempt_at.getTime() - w.attempt.delivered_at.getTime())).toEqual([60, 120, null])
      for (let i = 1; i < writes.length; i++) expect(writes[i]!.attempt.delivered_at.getTime()).toBeGreaterThanOrEqual(writes[i - 1]!.delivery.next_attempt_at!.getTime())
      const event = await outflow.getEvent(T, id, { destination_id: d.id })
      expect(event.status).toBe('success')
      expect(event.successful_at).toEqual(expect.any(String))
    })

    it('gives up after the last delay of the schedule: four attempts, then failed with nothing scheduled', async () => {
      const d = await hook('/always-500-exhausted')
      const { id } = await outflow.publish({ tenant_id: T, topic: 'order.created', data: {} })
      await waitFor(() => writesOf(id, d.id).length === 4, 10_000, 'four attempts')
      const writes = writesOf(id, d.id)
      expect(writes.map((w) => w.attempt.attempt_number)).toEqual([1, 2, 3, 4])
      expect(writes.map((w) => w.delivery.status)).toEqual(['pending', 'pending', 'pending', 'failed'])
      expect(writes.map((w) => w.delivery.next_attempt_at && w.delivery.next_attempt_at.getTime() - w.attempt.delivered_at.getTime())).toEqual([60, 120, 180, null])
      // Failed with nothing scheduled: no fifth attempt can come. The sentinel shows the queue moved on.
      const last = await sentinel(d.id)
      expect(ids('/always-500-exhausted')).toEqual([id, id, id, id, last])
    })

    it('makes one attempt only for eligible_for_retry: false', async () => {
      const d = await hook('/always-500-once')
      const { id } = await outflow.publish({ tenant_id: T, topic: 'order.created', data: {}, eligible_for_retry: false })
      // The positive signal: the attempt is recorded with the delivery failed and nothing scheduled.
      await waitFor(() => writesOf(id, d.id).length === 1)
      expect(writesOf(id, d.id)[0]!.delivery).toMatchObject({ status: 'failed', next_attempt_at: null })
      const last = await sentinel(d.id)
      expect(ids('/always-500-once')).toEqual([id, last])
      const event = await outflow.getEvent(T, id, { destination_id: d.id })
      expect(event.status).toBe('failed')
      expect(event.successful_at).toBeNull()
    })

    it('disables the destination when the receiver answers 410 Gone', async () => {
      const d = await hook('/gone')
      const disabled = new Promise((resolve) => outflow.once('destination.disabled', resolve))
      await outflow.publish({ tenant_id: T, topic: 'order.created', data: {} })
      expect(await disabled).toEqual({ tenant_id: T, destination_id: d.id, reason: 'gone' })
      expect((await outflow.getDestination(T, d.id)).disabled_at).toEqual(expect.any(String))
    })

    it('honours Retry-After on 429', async () => {
      const d = await hook('/throttled')
      const { id } = await outflow.publish({ tenant_id: T, topic: 'order.created', data: {} })
      await waitFor(() => receiver.on('/throttled').length === 2, 10_000, 'the retry after Retry-After')
      const attempts = await waitFor(async () => {
        const list = await attemptsAt(id, d.id)
        return list.length === 2 && list
      })
      expect(attempts.at(-1)).toMatchObject({ status: 'failed', response_status_code: 429, error_kind: 'throttled' })
      // The schedule says 60 ms; the receiver's Retry-After: 1 wins, exactly, and the retry waits for it.
      const [first, second] = writesOf(id, d.id)
      expect(first!.delivery.next_attempt_at!.getTime() - first!.attempt.delivered_at.getTime()).toBe(1000)
      expect(second!.attempt.delivered_at.getTime()).toBeGreaterThanOrEqual(first!.delivery.next_attempt_at!.getTime())
    })

    it.each([
      ['429 with Retry-After: a year in seconds', '/throttled-for-a-year'],
      ['503 with Retry-After: an HTTP date a month ahead', '/unavailable-for-a-month'],
    ])('caps Retry-After at 24 hours: %s schedules the retry exactly a day later', async (_, path) => {
      const d = await hook(path)
      const { id } = await outflow.publish({ tenant_id: T, topic: 'order.created', data: {} })
      await waitFor(() => writesOf(id, d.id).length === 1, 10_000, 'the first attempt')
      const [write] = writesOf(id, d.id)
      expect(write!.attempt).toMatchObject({ status: 'failed', error_kind: path.includes('throttled') ? 'throttled' : 'http_5xx' })
      expect(write!.delivery.status).toBe('pending')
      expect(write!.delivery.next_attempt_at!.getTime() - write!.attempt.delivered_at.getTime()).toBe(DAY)
    })

    it('records a timeout as a failed attempt', async () => {
      const slowEngine = await kind.create({ topics: ['order.created'], delivery: { ...quick, timeoutMs: 100 } })
      await slowEngine.upsertTenant(T, {})
      await slowEngine.createDestination(T, { type: 'webhook', topics: '*', config: { url: `${receiver.url}/slow` } })
      const { id } = await slowEngine.publish({ tenant_id: T, topic: 'order.created', data: {}, eligible_for_retry: false })
      const [attempt] = await waitFor(() => slowEngine.listDeliveries(T, id).catch(() => null))
      expect(attempt).toMatchObject({ status: 'failed', error_kind: 'timeout', response_status_code: null })
      await slowEngine.close()
    })

    it('raises alerts at 50/70/90/100 % of the failure threshold and auto-disables at 100 %', async () => {
      const engine = await kind.create({ topics: ['order.created'], delivery: quick, alerts: { consecutiveFailures: 4 } })
      await engine.upsertTenant(T, {})
      const d = await engine.createDestination(T, { type: 'webhook', topics: '*', config: { url: `${receiver.url}/always-500-alerts` } })
      const levels: number[] = []
      const legacy: AlertPayload[] = []
      const disabled: string[] = []
      engine.on('alert.destination.consecutive_failure', (e) => levels.push(e.data.consecutive_failures.threshold))
      engine.on('alert', (a) => legacy.push(a))
      engine.on('alert.destination.disabled', (e) => disabled.push(e.data.destination.id))
      for (let i = 0; i < 4; i++) {
        await engine.publish({ tenant_id: T, topic: 'order.created', data: { i }, eligible_for_retry: false })
        await waitFor(() => receiver.on('/always-500-alerts').length === i + 1)
      }
      await waitFor(() => disabled.length === 1, 10_000, 'the disable event')
      expect(levels).toEqual([50, 70, 90, 100])
      expect(disabled).toEqual([d.id])
      // The deprecated `alert` event still comes, with its old shape.
      expect(legacy.map((a) => a.data.level)).toEqual([50, 70, 90, 100])
      expect(legacy.at(-1)!.data).toMatchObject({ tenant_id: T, destination_id: d.id, consecutive_failures: 4, max_consecutive_failures: 4, will_disable: true })
      expect((await engine.getDestination(T, d.id)).disabled_at).toEqual(expect.any(String))
      // A disabled destination receives nothing more.
      const r = await engine.publish({ tenant_id: T, topic: 'order.created', data: {} })
      expect(r.destination_ids).toEqual([])
      await engine.close()
    })

    it('refuses private-network targets by default (SSRF guard) and records why', async () => {
      const guarded = await kind.create({ topics: ['order.created'], delivery: quick, allowPrivateNetworks: false })
      await guarded.upsertTenant(T, {})
      await guarded.createDestination(T, { type: 'webhook', topics: '*', config: { url: `${receiver.url}/ssrf` } })
      const { id } = await guarded.publish({ tenant_id: T, topic: 'order.created', data: {}, eligible_for_retry: false })
      const [attempt] = await waitFor(() => guarded.listDeliveries(T, id).catch(() => null))
      expect(attempt).toMatchObject({ status: 'failed', error_kind: 'ssrf' })
      expect(receiver.on('/ssrf')).toHaveLength(0)
      await guarded.close()
    })

    it('retries by hand: 202, a new manual attempt; 409 when disabled; 404 when unknown', async () => {
      const d = await hook('/always-500-manual')
      const { id } = await outflow.publish({ tenant_id: T, topic: 'order.created', data: {}, eligible_for_retry: false })
      await waitFor(async () => (await attemptsAt(id, d.id)).length === 1)
      expect(await outflow.retryDelivery(T, d.id, id)).toEqual({ success: true })
      const attempts = await waitFor(async () => {
        const list = await attemptsAt(id, d.id)
        return list.length === 2 && list
      })
      expect(attempts[0]).toMatchObject({ manual: true, attempt_number: 2 })
      expect((await rejection(outflow.retryDelivery(T, d.id, 'nope'))).status).toBe(404)
      expect((await rejection(outflow.retryDelivery(T, 'nope', id))).status).toBe(404)
      await outflow.disableDestination(T, d.id)
      expect((await rejection(outflow.retryDelivery(T, d.id, id))).status).toBe(409)
    })

    it('lists events with every filter, and reads them through the deprecated by-destination calls', async () => {
      await outflow.upsertTenant('log', {})
      const ok = await outflow.createDestination('log', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/log-ok` } })
      const bad = await outflow.createDestination('log', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/always-500-log` } })
      const ids: string[] = []
      for (let i = 0; i < 5; i++) {
        const time = new Date(Date.UTC(2026, 0, 1, 0, 0, i)).toISOString()
        ids.push((await outflow.publish({ tenant_id: 'log', topic: i % 2 ? 'order.paid' : 'order.created', data: { i }, time, eligible_for_retry: false })).id)
      }
      await waitFor(async () => (await outflow.listEvents('log', { limit: 100 })).models.length === 10, 10_000, '10 attempted pairs')
      const all = await outflow.listEvents('log')
      expect(all.pagination).toMatchObject({ order_by: 'time', dir: 'desc', limit: 100, next: null, prev: null })
      expect(all.models[0]!.id).toBe(ids[4])
      expect((await outflow.listEvents('log', { status: 'failed' })).models.every((e) => e.destination_id === bad.id)).toBe(true)
      expect((await outflow.listEvents('log', { status: 'success' })).models).toHaveLength(5)
      expect((await outflow.listEvents('log', { destination_id: ok.id, dir: 'asc' })).models.map((e) => e.id)).toEqual(ids)
      const window = await outflow.listEvents('log', { 'time[gte]': '2026-01-01T00:00:01Z', 'time[lte]': '2026-01-01T00:00:02Z', destination_id: ok.id })
      expect(window.models.map((e) => e.id)).toEqual([ids[2], ids[1]])
      // Paging by cursor visits every pair once.
      const seen: string[] = []
      let page = await outflow.listEvents('log', { limit: 3 })
      seen.push(...page.models.map((e) => `${e.id}/${e.destination_id}`))
      while (page.pagination.next) {
        page = await outflow.listEvents('log', { limit: 3, next: page.pagination.next })
        seen.push(...page.models.map((e) => `${e.id}/${e.destination_id}`))
      }
      expect(new Set(seen).size).toBe(10)
      const back = await outflow.listEvents('log', { limit: 3, prev: page.pagination.prev! })
      expect(back.models).toHaveLength(3)
      const admin = await outflow.listAdminEvents({ tenant_id: 'log', topic: 'order.paid' })
      expect(admin.models.map((e) => e.id).sort()).toEqual([ids[1], ids[3], ids[1], ids[3]].sort())
      expect((await outflow.listDestinationEvents('log', bad.id)).models).toHaveLength(5)
      expect(await outflow.getDestinationEvent('log', ok.id, ids[0]!)).toMatchObject({ id: ids[0], destination_id: ok.id, status: 'success', data: { i: 0 } })
      expect((await rejection(outflow.getDestinationEvent('log', 'nope', ids[0]!))).status).toBe(404)
      expect((await rejection(outflow.getEvent('log', 'nope'))).status).toBe(404)
      expect((await rejection(outflow.getEvent(T, ids[0]!))).status).toBe(404) // another tenant's event
      for (const bad of [{ limit: 0 }, { limit: 1001 }, { status: 'meh' }, { dir: 'up' }, { order_by: 'created_at' }, { 'time[gte]': 'x' }])
        expect((await rejection(outflow.listEvents('log', bad as never))).status).toBe(400)
    })

    it('keeps leases alive for deliveries queued behind a slow destination, so no other worker takes them', async () => {
      const engine = await kind.create({ topics: ['order.created'], delivery: { ...quick, leaseMs: 300, perDestinationConcurrency: 1 } })
      await engine.upsertTenant(T, {})
      await engine.createDestination(T, { type: 'webhook', topics: '*', config: { url: `${receiver.url}/slow-lease` } })
      const published = await engine.publishMany(Array.from({ length: 6 }, (_, i) => ({ tenant_id: T, topic: 'order.created', data: { i } })))
      // 6 × 150 ms one at a time outlasts the 300 ms lease: once three have arrived (450 ms), the leases
      // taken at publish have run out for the three still queued, unless the worker renewed them.
      await waitFor(() => receiver.on('/slow-lease').length >= 3, 10_000, 'three deliveries')
      const stolen = await engine.storage.claimDueDeliveries({ owner: 'another-instance', now: new Date(), leaseUntil: new Date(Date.now() + 60_000), limit: 100 })
      expect(stolen).toEqual([])
      // Then a sentinel through the same one-at-a-time queue: everything before it has been attempted.
      const { id: last } = await engine.publish({ tenant_id: T, topic: 'order.created', data: { sentinel: true } })
      await waitFor(async () => (await engine.listDeliveries(T, last).catch(() => [])).length === 1, 10_000, 'the sentinel attempt')
      expect(ids('/slow-lease')).toEqual([...published.map((p) => p.id), last])
      await engine.close()
    })

    it('close() right after start, while the first claim is in flight, does not wait for the next poll', async () => {
      // A poll interval longer than the test timeout: close() must not sleep through it.
      const engine = await kind.create({ delivery: { pollIntervalMs: 600_000, leaseMs: 3_600_000 } })
      await engine.close()
      expect(engine.closed).toBe(true)
    })

    it('close() lets in-flight attempts finish, records them, and a closed engine rejects publish', async () => {
      const storage = await kind.openStorage()
      // The engine closes its storage; keep it open here to read what close() wrote.
      const engine = await kind.create({ topics: ['order.created'], delivery: quick, storage: { ...storage, close: async () => {} } })
      await engine.upsertTenant(T, {})
      await engine.createDestination(T, { type: 'webhook', topics: '*', config: { url: `${receiver.url}/slow` } })
      const before = receiver.on('/slow').length
      const published = await engine.publishMany(Array.from({ length: 5 }, (_, i) => ({ tenant_id: T, topic: 'order.created', data: { i } })))
      await waitFor(() => receiver.on('/slow').length >= before + 5, 5_000, 'attempts in flight')
      await engine.close()
      expect((await rejection(engine.publish({ tenant_id: T, topic: 'order.created', data: {} }))).status).toBe(503)
      for (const p of published) {
        const attempts = await storage.listAttempts(T, p.id)
        expect(attempts.map((a) => a.status)).toEqual(['success'])
      }
      const leftover = await storage.claimDueDeliveries({ owner: 'check', now: new Date(), leaseUntil: new Date(Date.now() + 1000), limit: 100 })
      expect(leftover).toEqual([])
    })
  })
}
