import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { OutflowError } from '../../src/errors.js'
import type { Outflow } from '../../src/engine.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { sqlStorages } from '../support/sql-storages.js'

// Concurrent directory changes and publishes against one tenant or destination id. Every
// interleaving must answer a 2xx, 404 or 409 (never a 500), leave no row without its owner, and
// deliver nothing of a tenant or destination once its delete has returned.

/** Rows left without their owner: a tenant for everything, a destination for pending deliveries, an event for deliveries. */
const orphanQuery = `
  select 'destination' as kind, tenant_id, id from destinations x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'event', tenant_id, id from events x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'delivery', tenant_id, id from deliveries x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'attempt', tenant_id, id from attempts x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'delivery without event', tenant_id, id from deliveries x
    where not exists (select 1 from events e where e.tenant_id = x.tenant_id and e.id = x.event_id)
  union all select 'pending delivery without destination', tenant_id, id from deliveries x
    where status = 'pending' and not exists (select 1 from destinations d where d.tenant_id = x.tenant_id and d.id = x.destination_id)`

/** Deliveries that may still be attempted: pending, for an existing, enabled destination of an existing tenant. */
const liveQueueQuery = `
  select count(*) as n from deliveries x
  join destinations d on d.tenant_id = x.tenant_id and d.id = x.destination_id and d.disabled_at is null
  join tenants t on t.id = x.tenant_id
  where x.status = 'pending'`

const allowed = new Set([200, 201, 202, 404, 409])

for (const kind of sqlStorages) {
  describe.runIf(kind.available)(`races: ${kind.name}`, () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const opened: { close(): Promise<void> }[] = []
    const engines: Outflow[] = []
    beforeAll(async () => {
      // Deleted tenants' receivers answer slowly, so attempts are queued and in flight when the delete comes.
      receiver = await startReceiver((r) => (r.path.startsWith('/t/') ? { delayMs: 50 } : {}))
    })
    afterAll(async () => {
      await Promise.all(engines.map((e) => e.close().catch(() => {})))
      for (const o of opened) await o.close()
      await receiver.close()
    })

    /** A fresh engine on a fresh database; `reopen` gives a second engine on the same database (no worker). */
    async function setup() {
      const db = await kind.open()
      opened.push(db)
      // A long timeout: an attempt timed out on a loaded machine has sent its request, which the receiver may log later.
      const options = { apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { pollIntervalMs: 50, timeoutMs: 30_000 } }
      const outflow = await createOutflow({ ...options, storage: db.storage })
      engines.push(outflow)
      return {
        outflow,
        query: db.query,
        async reopen() {
          const again = await createOutflow({ ...options, storage: db.storage, delivery: { worker: false } })
          engines.push(again)
          return again
        },
        /** Wait until nothing may still be attempted, then close the engine (in-flight attempts end, results are written). */
        async settle() {
          await waitFor(async () => Number((await db.query<{ n: number | string }>(liveQueueQuery))[0]!.n) === 0, 60_000, 'the delivery queue to empty')
          await outflow.close()
        },
      }
    }

    /** One API call through the engine's own HTTP handler: the status and JSON body. */
    async function api(outflow: Outflow, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
      const res = await outflow.fetch(
        new Request(`http://outflow.test/api/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      return { status: res.status, body: await res.json().catch(() => null) }
    }

    /** A typed-API publish as the route would answer it: 202 with its result, an OutflowError's status, 500 for anything else. */
    async function published<T>(call: Promise<T>): Promise<{ status: number; value?: T }> {
      try {
        return { status: 202, value: await call }
      } catch (err) {
        return { status: err instanceof OutflowError ? err.status : 500 }
      }
    }

    /** Run the calls in order with at most `window` in flight: a steady overlap of operations rather than one burst. */
    async function launch<T>(calls: (() => Promise<T>)[], window: number): Promise<T[]> {
      const results: T[] = []
      let next = 0
      const lane = async () => {
        while (next < calls.length) {
          const i = next++
          results[i] = await calls[i]!()
        }
      }
      await Promise.all(Array.from({ length: Math.min(window, calls.length) }, lane))
      return results
    }

    const unexpected = (statuses: number[]) => statuses.filter((s) => !allowed.has(s))

    it('concurrent PUT, GET and DELETE of one tenant answer 200, 201 or 404, never 500', async () => {
      const { outflow, query } = await setup()
      const calls = Array.from({ length: 240 }, (_, i) => () => {
        const op = i % 3
        if (op === 0) return api(outflow, 'PUT', '/tenants/flip', { metadata: { i } })
        if (op === 1) return api(outflow, 'DELETE', '/tenants/flip')
        return api(outflow, 'GET', '/tenants/flip')
      })
      const results = await launch(calls, 100)
      expect(unexpected(results.map((r) => r.status))).toEqual([])
      expect(results.filter((r, i) => i % 3 === 0).every((r) => r.status === 200 || r.status === 201)).toBe(true)
      expect(await query(orphanQuery)).toEqual([])
    })

    it('concurrent create, update, enable, disable and delete of one destination answer 2xx, 404 or 409 and leave it whole', async () => {
      const { outflow, query } = await setup()
      await api(outflow, 'PUT', '/tenants/busy')
      const path = '/tenants/busy/destinations'
      const ops = [
        () => api(outflow, 'POST', path, { id: 'one', type: 'webhook', topics: '*', config: { url: `${receiver.url}/b/busy/one` } }),
        () => api(outflow, 'PATCH', `${path}/one`, { metadata: { at: Date.now() } }),
        () => api(outflow, 'PATCH', `${path}/one`, { credentials: { rotate_secret: true } }),
        () => api(outflow, 'PUT', `${path}/one/disable`),
        () => api(outflow, 'PUT', `${path}/one/enable`),
        () => api(outflow, 'DELETE', `${path}/one`),
        () => api(outflow, 'GET', `${path}/one`),
      ]
      const results = await launch(Array.from({ length: 210 }, (_, i) => ops[i % ops.length]!), 100)
      expect(unexpected(results.map((r) => r.status))).toEqual([])
      const final = await api(outflow, 'GET', `${path}/one`)
      const listed = (await api(outflow, 'GET', path)).body as { id: string }[]
      expect(listed.map((d) => d.id)).toEqual(final.status === 200 ? ['one'] : [])
      expect(await query(orphanQuery)).toEqual([])
    })

    it('concurrent updates of one destination lose none of them: every PATCH and a concurrent disable persist', async () => {
      const { outflow } = await setup()
      await api(outflow, 'PUT', '/tenants/patchy')
      const path = '/tenants/patchy/destinations/p'
      await api(outflow, 'POST', '/tenants/patchy/destinations', { id: 'p', type: 'webhook', topics: '*', config: { url: `${receiver.url}/p/patchy/p` } })
      const patches = Array.from({ length: 30 }, (_, i) => () => api(outflow, 'PATCH', path, { metadata: { [`k${i}`]: i } }))
      const results = await launch([...patches.slice(0, 15), () => api(outflow, 'PUT', `${path}/disable`), ...patches.slice(15)], 31)
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200))
      const after = (await api(outflow, 'GET', path)).body as { metadata: Record<string, number>; disabled_at: string | null }
      expect(Object.keys(after.metadata)).toHaveLength(30)
      expect(after.disabled_at).not.toBeNull()
    })

    it('concurrent disables of one destination all answer the first disabled_at', async () => {
      const { outflow } = await setup()
      await api(outflow, 'PUT', '/tenants/switchy')
      await api(outflow, 'POST', '/tenants/switchy/destinations', { id: 's', type: 'webhook', topics: '*', config: { url: `${receiver.url}/s/switchy/s` } })
      const results = await launch(Array.from({ length: 40 }, () => () => api(outflow, 'PUT', '/tenants/switchy/destinations/s/disable')), 40)
      expect(results.map((r) => r.status)).toEqual(results.map(() => 200))
      const stored = (await api(outflow, 'GET', '/tenants/switchy/destinations/s')).body.disabled_at as string
      expect(new Set(results.map((r) => r.body.disabled_at))).toEqual(new Set([stored]))
    })

    it('concurrent secret rotations form one chain: each answer keeps the secret the one before it set', async () => {
      const { outflow } = await setup()
      await api(outflow, 'PUT', '/tenants/rotor')
      const created = await api(outflow, 'POST', '/tenants/rotor/destinations', { id: 'r', type: 'webhook', topics: '*', config: { url: `${receiver.url}/r/rotor/r` } })
      const rotations = await launch(
        Array.from({ length: 30 }, () => () => api(outflow, 'PATCH', '/tenants/rotor/destinations/r', { credentials: { rotate_secret: true } })),
        30,
      )
      expect(rotations.map((r) => r.status)).toEqual(rotations.map(() => 200))
      const next = new Map<string, string>(rotations.map((r) => [r.body.credentials.previous_secret as string, r.body.credentials.secret as string]))
      // Walk from the first secret: a lost rotation would leave two answers with the same previous secret.
      let secret = created.body.credentials.secret as string
      for (let i = 0; i < rotations.length; i++) secret = next.get(secret)!
      expect(next.size).toBe(rotations.length)
      expect((await api(outflow, 'GET', '/tenants/rotor/destinations/r')).body.credentials.secret).toBe(secret)
    })

    it('a tenant deleted during creates and publishes keeps nothing, receives nothing after the delete, and comes back empty', async () => {
      const env = await setup()
      const { outflow, query } = env
      const T = 'doomed'
      await api(outflow, 'PUT', `/tenants/${T}`)
      for (let i = 0; i < 3; i++) await api(outflow, 'POST', `/tenants/${T}/destinations`, { type: 'webhook', topics: '*', config: { url: `${receiver.url}/t/${T}/d${i}` } })
      let deletedAt = Infinity
      const deleteTenant = async () => {
        const r = await api(outflow, 'DELETE', `/tenants/${T}`)
        deletedAt = Date.now()
        return r
      }
      const calls: (() => Promise<{ status: number }>)[] = []
      for (let i = 0; i < 360; i++) {
        if (i === 180) calls.push(deleteTenant)
        const op = i % 3
        if (op === 0) calls.push(() => api(outflow, 'POST', `/tenants/${T}/destinations`, { type: 'webhook', topics: ['user.created'], config: { url: `${receiver.url}/t/${T}/new${i}` } }))
        else if (op === 1) calls.push(() => api(outflow, 'POST', '/publish', { tenant_id: T, topic: 'order.created', data: { i } }))
        else {
          const batch = Array.from({ length: 5 }, (_, j) => ({ tenant_id: T, topic: 'order.created', data: { i, j } }))
          calls.push(() => published(outflow.publishMany(batch)))
        }
      }
      const results = await launch(calls, 100)
      expect(unexpected(results.map((r) => r.status))).toEqual([])
      expect(results[180]!.status).toBe(200)
      await env.settle()
      expect(await query(orphanQuery)).toEqual([])
      const late = receiver.received.filter((r) => r.path.startsWith(`/t/${T}/`) && r.at > deletedAt)
      expect(late.map((r) => r.path)).toEqual([])
      const again = await env.reopen()
      expect((await api(again, 'PUT', `/tenants/${T}`)).status).toBe(201)
      expect((await api(again, 'GET', `/tenants/${T}/destinations`)).body).toEqual([])
      expect((await api(again, 'GET', `/events?tenant_id=${T}`)).body.models).toEqual([])
    }, 120_000)

    it("a destination deleted during publishes receives nothing after the delete; only that tenant's deliveries are cancelled", async () => {
      const env = await setup()
      const { outflow, query } = env
      for (const t of ['left', 'right']) {
        await api(outflow, 'PUT', `/tenants/${t}`)
        for (const d of ['shared', 'keep'])
          await api(outflow, 'POST', `/tenants/${t}/destinations`, { id: d, type: 'webhook', topics: '*', config: { url: `${receiver.url}/d/${t}/${d}` } })
      }
      let deletedAt = Infinity
      const calls: (() => Promise<{ status: number; tenant?: string; ids?: string[] }>)[] = []
      for (let i = 0; i < 240; i++) {
        if (i === 120)
          calls.push(async () => {
            const r = await api(outflow, 'DELETE', '/tenants/left/destinations/shared')
            deletedAt = Date.now()
            return r
          })
        const tenant = i % 2 ? 'left' : 'right'
        if (i % 5 === 4) {
          const batch = Array.from({ length: 4 }, (_, j) => ({ tenant_id: tenant, topic: 'order.created', data: { i, j } }))
          calls.push(async () => {
            const r = await published(outflow.publishMany(batch))
            return { status: r.status, tenant, ids: r.value?.map((e) => e.id) ?? [] }
          })
        } else
          calls.push(async () => {
            const r = await api(outflow, 'POST', '/publish', { tenant_id: tenant, topic: 'order.created', data: { i } })
            return { status: r.status, tenant, ids: r.status === 202 ? [r.body.id as string] : [] }
          })
      }
      const results = await launch(calls, 100)
      expect(results.map((r) => r.status).filter((s) => s !== 202 && s !== 200)).toEqual([])
      await env.settle()
      expect(await query(orphanQuery)).toEqual([])
      expect(receiver.received.filter((r) => r.path === '/d/left/shared' && r.at > deletedAt).map((r) => r.at - deletedAt)).toEqual([])
      // The other tenant's destination of the same id lost nothing: every accepted event arrived there, and at the kept ones.
      const accepted = (tenant: string) => new Set(results.filter((r) => r.tenant === tenant).flatMap((r) => r.ids!))
      const arrived = (path: string) => new Set(receiver.on(path).map((r) => r.headers['webhook-id'] as string))
      expect(arrived('/d/right/shared')).toEqual(accepted('right'))
      expect(arrived('/d/right/keep')).toEqual(accepted('right'))
      expect(arrived('/d/left/keep')).toEqual(accepted('left'))
      expect(await query(`select id, status from deliveries where tenant_id = 'right' and status <> 'success'`)).toEqual([])
    }, 120_000)
  })
}
