import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { type SqlDatabase, sqlStorages } from '../support/sql-storages.js'

// Two tenants with the same destination ids, event ids and topics. Alpha acts, through the HTTP API
// with its own token (the admin key where the route needs it); after every operation beta must be
// exactly as it was: its tenant row, destinations, events, delivery states, attempts, token, and what
// its receiver got. Beta is quiescent throughout: every delivery it has is finished, retried an hour
// from now, or parked behind a disabled destination, so nothing of it changes unless alpha changes it.

const HOUR = 3_600_000
/** Failures in a row that disable a destination. */
const threshold = 5
const A = 'alpha'
const B = 'beta'

/** Per tenant: id -> topics and receiver path. Both tenants have the same ids, but `extra` only beta (alpha creates it later). */
const destinations = (t: string): Record<string, { topics: string[]; path: string; filter?: object }> => ({
  hook: { topics: ['order.created', 'order.paid'], path: `/${t}/hook` },
  flaky: { topics: ['order.created'], path: `/${t}/fail` },
  pattern: { topics: ['order.*'], path: `/${t}/pattern`, filter: { data: { tenant: t } } },
  paused: { topics: ['order.created'], path: `/${t}/paused` },
  // Beta's fails (one failure short of the threshold); alpha's succeeds until it is changed.
  streak: { topics: ['order.failed'], path: t === B ? `/${t}/fail` : `/${t}/streak` },
  // Alpha's answers 410 Gone; beta's of the same id is fine.
  gone: { topics: ['order.gone'], path: t === B ? `/${t}/still-here` : `/${t}/gone` },
  ...(t === B ? { extra: { topics: ['order.refunded'], path: `/${t}/extra` } } : {}),
})

for (const kind of sqlStorages) {
  describe.runIf(kind.available)(`cross-tenant isolation: ${kind.name}`, () => {
    let db: SqlDatabase
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const tokens: Record<string, string> = {}

    /** One API call through the engine's own HTTP handler: the status and JSON body. */
    async function api(method: string, path: string, { as = 'admin', json }: { as?: string; json?: unknown } = {}) {
      const res = await outflow.fetch(
        new Request(`http://outflow.test/api/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${as === 'admin' ? apiKey : as}`, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
          body: json === undefined ? undefined : JSON.stringify(json),
        }),
      )
      return { status: res.status, body: (await res.json()) as any }
    }
    const asAlpha = (method: string, path: string, json?: unknown) => api(method, `/tenants/${A}${path}`, { as: tokens[A], json })
    const publish = (body: object) => api('POST', '/publish', { json: { tenant_id: A, data: { tenant: A }, ...body } })
    /** A tenant's attempts of an event, newest first (an event is listed from its first attempt on). */
    const attemptsOf = async (eventId: string, tenant = A) => {
      const res = await api('GET', `/tenants/${tenant}/events/${eventId}/deliveries`)
      return res.status === 200 ? (res.body as { destination_id: string; status: string; manual: boolean }[]) : []
    }
    const attempted = (eventId: string, count: number, tenant = A) =>
      waitFor(async () => (await attemptsOf(eventId, tenant)).length === count, 10_000, `${count} attempts of ${tenant}/${eventId}`)
    const rows = <T>(text: string) => db.query<T>(text)

    /** Beta's rows as stored, every column: delivery states, next_attempt_at, leases, failure streaks, ciphertexts. */
    async function betaRows() {
      return {
        tenant: await rows(`select * from tenants where id = '${B}'`),
        destinations: await rows(`select * from destinations where tenant_id = '${B}' order by id`),
        events: await rows(`select * from events where tenant_id = '${B}' order by id`),
        deliveries: await rows(`select * from deliveries where tenant_id = '${B}' order by id`),
        attempts: await rows(`select * from attempts where tenant_id = '${B}' order by id`),
      }
    }

    /** Everything beta sees through the API (each listing and read, with filters), its rows, its token, and what its receiver got. */
    async function betaView() {
      const get = async (path: string) => {
        const res = await api('GET', path)
        return res.status === 200 ? res.body : res.status
      }
      const events = (await api('GET', `/tenants/${B}/events?limit=1000`)).body.models as { id: string; destination_id: string }[]
      const reads: Record<string, unknown> = {}
      for (const path of [
        `/tenants/${B}`,
        `/tenants/${B}/destinations`,
        `/tenants/${B}/destinations?type=webhook&topics=order.created`,
        `/tenants/${B}/events?destination_id=hook`,
        `/tenants/${B}/events?status=failed`,
        `/tenants/${B}/events?status=success&time[gte]=2000-01-01T00:00:00Z`,
        `/events?tenant_id=${B}&limit=1000`,
        `/events?tenant_id=${B}&topic=order.created&destination_id=flaky`,
        ...Object.keys(destinations(B)).map((d) => `/tenants/${B}/destinations/${d}/events`),
        ...[...new Set(events.map((e) => e.id))].flatMap((e) => [`/tenants/${B}/events/${e}`, `/tenants/${B}/events/${e}/deliveries`]),
        `/tenants/${B}/destinations/flaky/events/evt-1`,
      ])
        reads[path] = await get(path)
      return {
        reads,
        rows: await betaRows(),
        token: (await api('GET', `/tenants/${B}`, { as: tokens[B] })).status,
        received: receiver.received.filter((r) => r.path.startsWith(`/${B}/`)).map((r) => ({ path: r.path, id: r.headers['webhook-id'], body: r.body })),
      }
    }

    /** Beta's view after the previous operation (the next one starts from it). */
    let lastView: Awaited<ReturnType<typeof betaView>> | undefined

    /**
     * Run one of alpha's operations and check beta is untouched: its rows right after the call (before the
     * worker could act on a wrong change and hide it), then its whole view once the operation has visibly
     * taken effect for alpha (`settled`, a positive signal, never a fixed sleep).
     */
    async function leavesBetaAlone(act: () => Promise<void>, settled?: () => Promise<unknown>) {
      const before = lastView ?? (await betaView())
      lastView = undefined
      await act()
      expect(await betaRows(), "beta's rows right after the call").toEqual(before.rows)
      await settled?.()
      const after = await betaView()
      expect(after, "beta's view once the call has taken effect").toEqual(before)
      lastView = after
    }

    beforeAll(async () => {
      receiver = await startReceiver((r) => ({ status: r.path.endsWith('/fail') ? 500 : r.path.endsWith('/gone') ? 410 : 200, body: `got ${r.path}` }))
      db = await kind.open()
      outflow = await createOutflow({
        storage: db.storage,
        apiKey,
        jwtSecret,
        encryptionKey,
        allowPrivateNetworks: true,
        // Failures are retried an hour later: a failed delivery stays pending and still for the whole file.
        // The claim loop runs when an attempt ends or a retry is asked for, not on a short poll, so a row
        // made due by mistake is still visibly due when the check right after a call reads it.
        delivery: { pollIntervalMs: 60_000, retry: { schedule: [HOUR], jitter: 0 } },
        alerts: { consecutiveFailures: threshold },
      })
      for (const t of [B, A]) {
        expect((await api('PUT', `/tenants/${t}`, { json: { metadata: { name: t } } })).status).toBe(201)
        tokens[t] = (await api('GET', `/tenants/${t}/token`)).body.token
        for (const [id, d] of Object.entries(destinations(t))) {
          const res = await api('POST', `/tenants/${t}/destinations`, { json: { id, type: 'webhook', topics: d.topics, config: { url: `${receiver.url}${d.path}` }, filter: d.filter } })
          expect(res.status, JSON.stringify(res.body)).toBe(201)
        }
        await api('PUT', `/tenants/${t}/destinations/paused/disable`)
        const event = (id: string, topic: string) => ({ id, tenant_id: t, topic, data: { tenant: t }, metadata: { tenant: t } })
        const fails = Array.from({ length: threshold - 1 }, (_, i) => `fail-${i + 1}`)
        const ids = t === B ? ['evt-1', 'evt-2', 'evt-3', ...fails] : ['evt-1', 'evt-2']
        for (const id of ids) {
          const topic = id === 'evt-2' ? 'order.paid' : id.startsWith('fail') ? 'order.failed' : 'order.created'
          expect((await api('POST', '/publish', { json: event(id, topic) })).status).toBe(202)
          // `pattern` (order.*) takes every topic; `hook` and `flaky` order.created, `hook` order.paid, `streak` order.failed.
          await attempted(id, topic === 'order.created' ? 3 : 2, t)
        }
        // A delivery that fell due while its destination was disabled, parked as the worker parks it.
        const now = new Date()
        await outflow.storage.insertEvents([
          { event: { ...event('evt-parked', 'order.created'), time: now, eligible_for_retry: true, created_at: now }, deliveries: [{ id: `dlv-parked-${t}`, destination_id: 'paused', next_attempt_at: now }] },
        ])
        await outflow.storage.holdDeliveries([`dlv-parked-${t}`], false)
      }
      const parked = await rows<{ status: string; next_attempt_at: unknown }>(`select status, next_attempt_at from deliveries where id like 'dlv-parked-%'`)
      expect(parked).toEqual([
        { status: 'pending', next_attempt_at: null },
        { status: 'pending', next_attempt_at: null },
      ])
    })
    afterAll(async () => {
      await outflow?.close()
      await receiver?.close()
      await db?.close()
    })

    it('starts with beta quiescent: pending retries an hour away, a parked delivery, a failure streak one short of the threshold, nothing leased', async () => {
      const deliveries = await rows<{ destination_id: string; status: string; lease_owner: string | null }>(`select destination_id, status, lease_owner from deliveries where tenant_id = '${B}'`)
      expect(deliveries.filter((d) => d.status === 'pending').map((d) => d.destination_id).sort()).toEqual(['flaky', 'flaky', 'paused', 'streak', 'streak', 'streak', 'streak'])
      expect(deliveries.every((d) => d.lease_owner === null)).toBe(true)
      const [streak] = await rows<{ consecutive_failures: number }>(`select consecutive_failures from destinations where tenant_id = '${B}' and id = 'streak'`)
      expect(Number(streak!.consecutive_failures)).toBe(threshold - 1)
      // Nothing moves by itself: two views taken one after the other are equal.
      expect(await betaView()).toEqual(await betaView())
    })

    it("alpha updating its tenant's metadata leaves beta's tenant alone", () =>
      leavesBetaAlone(async () => {
        const res = await api('PUT', `/tenants/${A}`, { json: { metadata: { plan: 'changed' } } })
        expect(res).toMatchObject({ status: 200, body: { id: A, metadata: { plan: 'changed' } } })
      }))

    it('alpha creates a destination with an id only beta had (201, not 409), and 409 for its own again', () =>
      leavesBetaAlone(async () => {
        const body = { id: 'extra', type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/${A}/extra` } }
        expect((await asAlpha('POST', '/destinations', body)).status).toBe(201)
        expect((await asAlpha('POST', '/destinations', body)).status).toBe(409)
      }))

    it('alpha publishing a new event delivers to alpha only', () =>
      leavesBetaAlone(
        async () => {
          const res = await publish({ id: 'evt-4', topic: 'order.created' })
          expect(res.body).toEqual({ id: 'evt-4', duplicate: false, destination_ids: expect.any(Array) })
          expect(res.body.destination_ids.sort()).toEqual(['extra', 'flaky', 'hook', 'pattern'])
        },
        () => attempted('evt-4', 4),
      ))

    it('alpha publishing an event id beta already has is a new event for alpha, delivered to alpha only', () =>
      leavesBetaAlone(
        async () => {
          const res = await publish({ id: 'evt-3', topic: 'order.created' })
          expect(res.body).toMatchObject({ id: 'evt-3', duplicate: false })
          expect(res.body.destination_ids.sort()).toEqual(['extra', 'flaky', 'hook', 'pattern'])
        },
        () => attempted('evt-3', 4),
      ))

    it("alpha republishing an id both have is alpha's duplicate, naming alpha's destinations", () =>
      leavesBetaAlone(async () => {
        const res = await publish({ id: 'evt-1', topic: 'order.created', data: { tenant: A, again: true } })
        expect(res.body).toMatchObject({ id: 'evt-1', duplicate: true })
        expect(res.body.destination_ids.sort()).toEqual(['flaky', 'hook', 'pattern'])
      }))

    it('alpha publishing a batch of ids both tenants use touches alpha only', () =>
      leavesBetaAlone(
        async () => {
          const batch = ['evt-2', 'evt-5', 'fail-1'].map((id) => ({ id, tenant_id: A, topic: 'order.paid', data: { tenant: A } }))
          const results = await outflow.publishMany(batch)
          expect(results.map((r) => [r.id, r.duplicate])).toEqual([['evt-2', true], ['evt-5', false], ['fail-1', false]])
        },
        async () => {
          await attempted('evt-5', 2)
          await attempted('fail-1', 2)
        },
      ))

    it("alpha's listings and reads, with every filter, show alpha's data only", () =>
      leavesBetaAlone(async () => {
        const reads = [
          '/events?limit=1000',
          '/events?destination_id=hook&status=success',
          '/events?status=failed&time[lte]=2100-01-01T00:00:00Z',
          '/events/evt-1?destination_id=hook',
          '/events/evt-3',
          '/destinations/hook/events',
          '/destinations/pattern/events/evt-2',
        ]
        for (const path of reads) {
          const res = await asAlpha('GET', path)
          expect(res.status, path).toBe(200)
          const models = (res.body.models ?? [res.body]) as { data: { tenant: string } }[]
          expect(models.length, path).toBeGreaterThan(0)
          expect(models.map((m) => m.data.tenant), path).toEqual(models.map(() => A))
        }
        for (const id of ['evt-1', 'evt-3']) {
          const attempts = (await asAlpha('GET', `/events/${id}/deliveries`)).body as { response_body: string }[]
          expect(attempts.map((a) => a.response_body.startsWith(`got /${A}/`))).toEqual(attempts.map(() => true))
        }
        const listed = (await asAlpha('GET', '/destinations?type=webhook&topics=order.created')).body as { config: { url: string } }[]
        expect(listed.map((d) => new URL(d.config.url).pathname.split('/')[1])).toEqual(listed.map(() => A))
        const admin = (await api('GET', `/events?tenant_id=${A}&topic=order.created&destination_id=flaky`)).body.models as { data: { tenant: string } }[]
        expect(admin.length).toBeGreaterThan(0)
        expect(admin.every((e) => e.data.tenant === A)).toBe(true)
      }))

    it("alpha PATCHing a destination (topics, filter, config, metadata, delivery_metadata, credentials) changes alpha's only", () =>
      leavesBetaAlone(async () => {
        const res = await asAlpha('PATCH', '/destinations/hook', {
          topics: ['order.created'],
          filter: { data: { tenant: A } },
          config: { url: `${receiver.url}/${A}/hook-2`, custom_headers: { 'x-who': A } },
          metadata: { owner: A },
          delivery_metadata: { team: A },
          credentials: { secret: `whsec_${Buffer.alloc(32, 7).toString('base64')}` },
        })
        expect(res.status, JSON.stringify(res.body)).toBe(200)
        expect(res.body).toMatchObject({ topics: ['order.created'], metadata: { owner: A }, config: { url: `${receiver.url}/${A}/hook-2` } })
      }))

    it("alpha rotating a destination's secret leaves beta's secret alone", () =>
      leavesBetaAlone(async () => {
        const before = (await asAlpha('GET', '/destinations/hook')).body.credentials.secret
        const res = await asAlpha('PATCH', '/destinations/hook', { credentials: { rotate_secret: true } })
        expect(res.status).toBe(200)
        expect(res.body.credentials.previous_secret).toBe(before)
        expect(res.body.credentials.secret).not.toBe(before)
      }))

    it("alpha disabling a destination leaves beta's of the same id enabled", () =>
      leavesBetaAlone(async () => {
        expect((await asAlpha('PUT', '/destinations/hook/disable')).body.disabled_at).toEqual(expect.any(String))
      }))

    it("alpha enabling a destination makes alpha's parked delivery due, not beta's", () =>
      leavesBetaAlone(
        async () => {
          expect((await asAlpha('PUT', '/destinations/paused/enable')).body.disabled_at).toBeNull()
        },
        () =>
          waitFor(async () => {
            const [row] = await rows<{ status: string; next_attempt_at: unknown }>(`select status, next_attempt_at from deliveries where id = 'dlv-parked-${A}'`)
            return row!.status === 'success' || row!.next_attempt_at !== null
          }),
      ))

    it("alpha retrying a delivery by hand requeues alpha's, not beta's of the same event and destination id", () =>
      leavesBetaAlone(
        async () => {
          expect(await asAlpha('POST', '/destinations/flaky/events/evt-1/retry')).toEqual({ status: 202, body: { success: true } })
        },
        async () => {
          await attempted('evt-1', 4)
          expect((await attemptsOf('evt-1'))[0]).toMatchObject({ destination_id: 'flaky', manual: true, status: 'failed' })
          // The retry woke the worker, which also took alpha's delivery that the enable made due.
          await waitFor(() => receiver.on(`/${A}/paused`).length === 1, 10_000, "alpha's parked delivery")
        },
      ))

    it("alpha replaying a destination, and its tenant's skipped deliveries, re-sends alpha's only, not beta's of the same ids", () => {
      const jobs: { destination_id: string; id: string }[] = []
      const before = { pattern: receiver.on(`/${A}/pattern`).length, paused: receiver.on(`/${A}/paused`).length }
      return leavesBetaAlone(
        async () => {
          const one = await asAlpha('POST', '/destinations/pattern/replay', { since: '2000-01-01T00:00:00Z', status: 'success' })
          expect(one.status, JSON.stringify(one.body)).toBe(202)
          expect(one.body.matched).toBeGreaterThan(0)
          const all = await asAlpha('POST', '/replay', { since: '2000-01-01T00:00:00Z', status: 'skipped', destination_id: ['paused'] })
          expect(all.status, JSON.stringify(all.body)).toBe(202)
          // evt-1, evt-3 and evt-4 were published while alpha's paused was disabled.
          expect(all.body.map((j: { matched: number }) => j.matched)).toEqual([3])
          jobs.push(one.body, ...all.body)
        },
        async () => {
          const ended = await waitFor(async () => {
            const read = await Promise.all(jobs.map(async (j) => (await asAlpha('GET', `/destinations/${j.destination_id}/replays/${j.id}`)).body))
            return read.every((j) => j.status === 'completed') && read
          }, 10_000, "alpha's replays")
          expect(receiver.on(`/${A}/pattern`).length).toBe(before.pattern + ended[0].matched)
          expect(receiver.on(`/${A}/paused`).length).toBe(before.paused + 3)
          // Beta's job ids are not alpha's: another tenant's token and path find nothing.
          expect((await api('GET', `/tenants/${B}/destinations/pattern/replays/${jobs[0]!.id}`)).status).toBe(404)
        },
      )
    })

    it("alpha deleting a destination cancels alpha's pending deliveries, not beta's to the same id", () =>
      leavesBetaAlone(async () => {
        const pending = `select count(*) as n from deliveries where tenant_id = '${A}' and destination_id = 'flaky' and status = 'pending'`
        expect(Number((await rows<{ n: number }>(pending))[0]!.n)).toBeGreaterThan(0)
        expect(await asAlpha('DELETE', '/destinations/flaky')).toEqual({ status: 200, body: { success: true } })
        expect(Number((await rows<{ n: number }>(pending))[0]!.n)).toBe(0)
      }))

    it("a success resets alpha's failure streak, not beta's of the same destination id", () =>
      leavesBetaAlone(
        async () => {
          expect((await publish({ id: 'ok-1', topic: 'order.failed' })).body.destination_ids.sort()).toEqual(['pattern', 'streak'])
        },
        () => attempted('ok-1', 2),
      ))

    it("alpha's failures auto-disable alpha's destination at the threshold, not beta's of the same id one failure short of it", () =>
      leavesBetaAlone(
        async () => {
          expect((await asAlpha('PATCH', '/destinations/streak', { config: { url: `${receiver.url}/${A}/fail` } })).status).toBe(200)
          for (let i = 1; i <= threshold; i++) expect((await publish({ id: `fail-a${i}`, topic: 'order.failed', eligible_for_retry: false })).status).toBe(202)
        },
        () => waitFor(async () => (await asAlpha('GET', '/destinations/streak')).body.disabled_at, 10_000, "alpha's streak destination disabled"),
      ))

    it("a 410 Gone disables alpha's destination, not beta's of the same id", () =>
      leavesBetaAlone(
        async () => {
          expect((await publish({ id: 'gone-1', topic: 'order.gone' })).body.destination_ids.sort()).toEqual(['gone', 'pattern'])
        },
        () => waitFor(async () => (await asAlpha('GET', '/destinations/gone')).body.disabled_at, 10_000, "alpha's gone destination disabled"),
      ))

    it('deleting tenant alpha leaves beta whole', () =>
      leavesBetaAlone(
        async () => {
          expect(await api('DELETE', `/tenants/${A}`)).toEqual({ status: 200, body: { success: true } })
        },
        async () => {
          expect((await api('GET', `/tenants/${A}`)).status).toBe(404)
          expect(await rows(`select id from deliveries where tenant_id = '${A}'`)).toEqual([])
        },
      ))

    it('re-creating tenant alpha starts it empty, without its old token, and leaves beta whole', () =>
      leavesBetaAlone(async () => {
        expect((await api('PUT', `/tenants/${A}`, { json: {} })).status).toBe(201)
        expect((await api('GET', `/tenants/${A}`, { as: tokens[A] })).status).toBe(401)
        tokens[A] = (await api('GET', `/tenants/${A}/token`)).body.token
        expect((await asAlpha('GET', '/destinations')).body).toEqual([])
        expect((await asAlpha('GET', '/events')).body.models).toEqual([])
        expect((await asAlpha('GET', '/events/evt-1')).status).toBe(404)
      }))

    it("the re-created alpha reuses beta's ids: a destination and an event id delivered to alpha only", () =>
      leavesBetaAlone(
        async () => {
          expect((await asAlpha('POST', '/destinations', { id: 'hook', type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/${A}/hook-3` } })).status).toBe(201)
          expect((await publish({ id: 'evt-1', topic: 'order.created' })).body).toEqual({ id: 'evt-1', duplicate: false, destination_ids: ['hook'] })
        },
        () => attempted('evt-1', 1),
      ))

    it("beta still delivers afterwards, signed with beta's own secret", async () => {
      const secret = ((await api('GET', `/tenants/${B}/destinations/hook`)).body.credentials.secret) as string
      const before = receiver.on(`/${B}/hook`).length
      expect((await api('POST', '/publish', { json: { id: 'evt-final', tenant_id: B, topic: 'order.paid', data: { tenant: B } } })).status).toBe(202)
      const final = () => receiver.received.filter((r) => r.headers['webhook-id'] === 'evt-final')
      await waitFor(() => final().length === 2, 10_000, "beta's two deliveries")
      expect(receiver.on(`/${B}/hook`)).toHaveLength(before + 1)
      const delivery = receiver.on(`/${B}/hook`).at(-1)!
      expect(new Webhook(secret).verify(delivery.body, delivery.headers as Record<string, string>)).toEqual({ tenant: B })
      expect(final().map((r) => r.path).sort()).toEqual([`/${B}/hook`, `/${B}/pattern`])
    })
  })
}
