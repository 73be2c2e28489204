import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AttemptWrite, DestinationRecord, EventRecord, Storage } from '../../src/storage/storage.js'
import { destinationRecord } from '../support/records.js'
import { pgbouncerKind, storageKinds } from '../support/storages.js'
import { postgres } from '../../src/storage/postgres.js'
import { createTestDatabase } from '../support/services.js'

const t0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(t0.getTime() + ms)

const destination = destinationRecord

function event(tenant_id: string, id: string, timeMs = 0): EventRecord {
  return { tenant_id, id, topic: 'order.created', time: at(timeMs), data: { id }, metadata: { k: 'v' }, eligible_for_retry: true, created_at: at(timeMs) }
}

function attempted(tenant: string, deliveryId: string, eventId: string, destinationId: string, ok: boolean, ms: number): AttemptWrite {
  return {
    attempt: {
      id: `att_${deliveryId}_${ms}`,
      tenant_id: tenant,
      event_id: eventId,
      destination_id: destinationId,
      delivery_id: deliveryId,
      attempt_number: 1,
      manual: false,
      status: ok ? 'success' : 'failed',
      response_status_code: ok ? 200 : 500,
      response_body: 'x',
      response_headers: { a: 'b' },
      error: ok ? null : 'HTTP 500',
      error_kind: ok ? null : 'unknown',
      duration_ms: 3,
      delivered_at: at(ms),
      topic: 'order.created',
      destination_type: 'webhook',
    },
    delivery: { id: deliveryId, status: ok ? 'success' : 'pending', next_attempt_at: ok ? null : at(ms + 1000), successful_at: ok ? at(ms) : null },
  }
}

for (const kind of [...storageKinds({ plainPostgres: true, tenantClaims: true }), pgbouncerKind()]) {
  describe.runIf(kind.available)(`storage: ${kind.name}`, () => {
    let s: Storage
    beforeAll(async () => {
      s = await kind.open()
    })
    afterAll(() => kind.cleanup())

    describe('tenants', () => {
      it('creates, then updates, keeping metadata when none is given', async () => {
        const a = await s.upsertTenant('t-up', { plan: 'pro' }, t0)
        expect(a.created).toBe(true)
        expect(a.tenant.metadata).toEqual({ plan: 'pro' })
        const b = await s.upsertTenant('t-up', undefined, at(5))
        expect(b.created).toBe(false)
        expect(b.tenant.metadata).toEqual({ plan: 'pro' })
        expect(b.tenant.created_at.getTime()).toBe(t0.getTime())
        expect(b.tenant.updated_at.getTime()).toBe(at(5).getTime())
        const c = await s.upsertTenant('t-up', { plan: 'free' }, at(6))
        expect(c.tenant.metadata).toEqual({ plan: 'free' })
        expect((await s.getTenant('t-up'))?.metadata).toEqual({ plan: 'free' })
        expect(await s.getTenant('nope')).toBeNull()
      })

      it('pages by (created_at, id) in both directions without gaps or duplicates', async () => {
        for (let i = 0; i < 7; i++) await s.upsertTenant(`p-${i}`, {}, at(100_000 + (i % 3) * 10))
        const range = { createdGte: at(100_000), createdLte: at(100_100) }
        const all = await s.listTenants({ dir: 'asc', limit: 100, ...range })
        expect(all.count).toBe(7)
        const ids = all.rows.map((r) => r.id)
        expect(ids).toEqual(['p-0', 'p-3', 'p-6', 'p-1', 'p-4', 'p-2', 'p-5'])
        const first = await s.listTenants({ dir: 'asc', limit: 3, ...range })
        expect(first.rows.map((r) => r.id)).toEqual(['p-0', 'p-3', 'p-6', 'p-1']) // limit + 1
        const last = first.rows[2]!
        const second = await s.listTenants({ dir: 'asc', limit: 3, after: [last.created_at.getTime(), last.id], ...range })
        expect(second.rows.map((r) => r.id)).toEqual(['p-1', 'p-4', 'p-2', 'p-5'])
        const back = await s.listTenants({ dir: 'asc', limit: 3, before: [second.rows[0]!.created_at.getTime(), 'p-1'], ...range })
        expect(back.rows.map((r) => r.id)).toEqual(['p-0', 'p-3', 'p-6'])
        const desc = await s.listTenants({ dir: 'desc', limit: 2, ...range })
        expect(desc.rows.map((r) => r.id)).toEqual(['p-5', 'p-2', 'p-4'])
        const gte = await s.listTenants({ dir: 'asc', limit: 100, createdGte: at(100_010), createdLte: at(100_010) })
        expect(gte.rows.map((r) => r.id)).toEqual(['p-1', 'p-4'])
        expect(gte.count).toBe(2)
      })

      it('deletes a tenant with its destinations and log, and a re-created id starts empty', async () => {
        await s.upsertTenant('t-del', {}, t0)
        await s.insertDestination(destination('t-del', 'd1'))
        await s.insertEvents([{ event: event('t-del', 'e1'), deliveries: [{ id: 'dlv-del-1', destination_id: 'd1', next_attempt_at: t0 }] }])
        await s.recordAttempts([attempted('t-del', 'dlv-del-1', 'e1', 'd1', true, 1)])
        expect(await s.deleteTenant('t-del')).toBe(true)
        expect(await s.deleteTenant('t-del')).toBe(false)
        expect(await s.getTenant('t-del')).toBeNull()
        await s.upsertTenant('t-del', {}, t0)
        expect(await s.listDestinations('t-del')).toEqual([])
        expect(await s.listEvents({ dir: 'desc', limit: 10, tenantIds: ['t-del'] })).toEqual([])
        expect(await s.listAttempts('t-del', 'e1')).toEqual([])
      })

      it('summarizes destination counts (disabled included) and the sorted union of topics', async () => {
        await s.upsertTenant('t-sum', {}, t0)
        await s.insertDestination(destination('t-sum', 'a', { topics: ['b.two', 'a.one'] }))
        await s.insertDestination(destination('t-sum', 'b', { topics: ['a.one', 'c.three'], disabled_at: t0 }))
        const m = await s.summarizeTenants(['t-sum', 'ghost'])
        expect(m.get('t-sum')).toEqual({ destinations_count: 2, topics: ['a.one', 'b.two', 'c.three'] })
        expect(m.get('ghost')).toEqual({ destinations_count: 0, topics: [] })
      })
    })

    describe('destinations', () => {
      it('inserts, refuses a duplicate id in the same tenant, allows it in another', async () => {
        await s.upsertTenant('t-d', {}, t0)
        await s.upsertTenant('t-d2', {}, t0)
        expect(await s.insertDestination(destination('t-d', 'same'))).toBe('inserted')
        expect(await s.insertDestination(destination('t-d', 'same'))).toBe('exists')
        expect(await s.insertDestination(destination('t-d2', 'same'))).toBe('inserted')
        expect(await s.insertDestination(destination('t-gone', 'same'))).toBe('no-tenant')
        expect(await s.listDestinations('t-gone')).toEqual([])
        const got = await s.getDestination('t-d', 'same')
        expect(got?.config).toEqual({ url: 'https://example.com/hook' })
        expect(got?.created_at.getTime()).toBe(t0.getTime())
        expect(await s.getDestination('t-d', 'missing')).toBeNull()
      })

      it('lists by type and enabled state, oldest first, and updates every mutable field', async () => {
        await s.upsertTenant('t-l', {}, t0)
        await s.insertDestination(destination('t-l', 'w', { created_at: at(1) }))
        await s.insertDestination(destination('t-l', 'q', { type: 'cloudx_sqs', created_at: at(2) }))
        await s.insertDestination(destination('t-l', 'off', { created_at: at(3), disabled_at: at(3) }))
        expect((await s.listDestinations('t-l')).map((d) => d.id)).toEqual(['w', 'q', 'off'])
        expect((await s.listDestinations('t-l', { types: ['cloudx_sqs'] })).map((d) => d.id)).toEqual(['q'])
        expect((await s.listDestinations('t-l', { enabledOnly: true })).map((d) => d.id)).toEqual(['w', 'q'])
        const w = (await s.getDestination('t-l', 'w'))!
        const changed = { ...w, topics: ['*'], filter: { data: { x: 1 } }, metadata: { m: 1 }, delivery_metadata: { h: 'v' }, updated_at: at(9) }
        expect(await s.updateDestination(changed, w.updated_at)).toBe('updated')
        const after = (await s.getDestination('t-l', 'w'))!
        expect(after).toMatchObject({ topics: ['*'], filter: { data: { x: 1 } }, metadata: { m: 1 }, delivery_metadata: { h: 'v' } })
        expect(after.updated_at.getTime()).toBe(at(9).getTime())
        // Built from the read before that update: refused, nothing overwritten.
        expect(await s.updateDestination({ ...w, topics: ['late'], updated_at: at(10) }, w.updated_at)).toBe('stale')
        expect((await s.getDestination('t-l', 'w'))!.topics).toEqual(['*'])
        expect(await s.updateDestination({ ...w, id: 'missing' }, w.updated_at)).toBe('missing')
      })

      it('disabling twice keeps the first time; enabling clears it and makes parked deliveries due', async () => {
        await s.upsertTenant('t-x', {}, t0)
        await s.insertDestination(destination('t-x', 'd'))
        await s.insertEvents([{ event: event('t-x', 'e'), deliveries: [{ id: 'dlv-x', destination_id: 'd', next_attempt_at: t0 }] }])
        const first = await s.setDestinationDisabled('t-x', 'd', at(10), at(10))
        const again = await s.setDestinationDisabled('t-x', 'd', at(20), at(20))
        expect(first?.disabled_at?.getTime()).toBe(at(10).getTime())
        expect(again?.disabled_at?.getTime()).toBe(at(10).getTime())
        await s.holdDeliveries(['dlv-x'], false)
        expect(await s.claimDueDeliveries({ owner: 'w', now: at(1e9), leaseUntil: at(2e9), limit: 10 })).toEqual([])
        const enabled = await s.setDestinationDisabled('t-x', 'd', null, at(30))
        expect(enabled?.disabled_at).toBeNull()
        const claimed = await s.claimDueDeliveries({ owner: 'w', now: at(1e9), leaseUntil: at(2e9), limit: 10 })
        expect(claimed.map((c) => c.id)).toEqual(['dlv-x'])
        expect(await s.setDestinationDisabled('t-x', 'missing', null, at(1))).toBeNull()
      })

      it('scans stored credentials in (tenant_id, id) pages and replaces them only where unchanged, keeping updated_at', async () => {
        await s.upsertTenant('t-k1', {}, t0)
        await s.upsertTenant('t-k2', {}, t0)
        for (const [tenant, id] of [['t-k2', 'a'], ['t-k1', 'b'], ['t-k1', 'a']] as const) await s.insertDestination(destination(tenant, id, { credentials: `${tenant}/${id}` }))
        const seen: string[] = []
        let after: { tenant_id: string; id: string } | undefined
        for (let page = await s.scanCredentials(undefined, 2); page.length > 0; page = await s.scanCredentials(after, 2)) {
          expect(page.length).toBeLessThanOrEqual(2)
          seen.push(...page.map((r) => `${r.tenant_id}/${r.id}=${r.credentials}`))
          after = page[page.length - 1]
        }
        expect(seen.filter((r) => r.startsWith('t-k'))).toEqual(['t-k1/a=t-k1/a', 't-k1/b=t-k1/b', 't-k2/a=t-k2/a'])
        expect(new Set(seen).size).toBe(seen.length)
        const replaced = await s.replaceCredentials([
          { tenant_id: 't-k1', id: 'a', from: 't-k1/a', to: 'sealed-a' },
          { tenant_id: 't-k1', id: 'b', from: 'changed meanwhile', to: 'sealed-b' },
        ])
        expect(replaced).toBe(1)
        expect(await s.getDestination('t-k1', 'a')).toMatchObject({ credentials: 'sealed-a', updated_at: t0 })
        expect((await s.getDestination('t-k1', 'b'))?.credentials).toBe('t-k1/b')
      })

      it("deleting a destination cancels its pending deliveries, and not another tenant's of the same id", async () => {
        for (const t of ['t-c', 't-c2']) {
          await s.upsertTenant(t, {}, t0)
          await s.insertDestination(destination(t, 'd'))
          await s.insertEvents([{ event: event(t, 'e'), deliveries: [{ id: `dlv-${t}`, destination_id: 'd', next_attempt_at: t0 }] }])
        }
        expect(await s.deleteDestination('t-c', 'd')).toBe(true)
        expect(await s.deleteDestination('t-c', 'd')).toBe(false)
        const claimed = await s.claimDueDeliveries({ owner: 'w', now: at(1e9), leaseUntil: at(2e9), limit: 100 })
        expect(claimed.map((c) => c.id)).not.toContain('dlv-t-c')
        expect(claimed.map((c) => c.id)).toContain('dlv-t-c2')
        // An attempt that ends after the delete is logged, and its delivery stays cancelled.
        await s.recordAttempts([{ ...attempted('t-c', 'dlv-t-c', 'e', 'd', false, 5) }])
        expect(await s.listAttempts('t-c', 'e')).toHaveLength(1)
        expect((await s.claimDueDeliveries({ owner: 'w2', now: at(1e10), leaseUntil: at(2e10), limit: 100 })).map((c) => c.id)).not.toContain('dlv-t-c')
        expect(await s.requeueDelivery('t-c', 'e', 'd', at(6))).toBe(false)
      })
    })

    describe('tenant isolation', () => {
      it("changes one tenant's destination, deliveries and log without touching another's with the same ids and the same times", async () => {
        // Same destination id, event id and timestamps in both tenants: only the tenant tells the rows apart.
        for (const t of ['t-iso1', 't-iso2']) {
          await s.upsertTenant(t, {}, t0)
          await s.insertDestination(destination(t, 'd'))
          const inserted = await s.insertEvents([{ event: event(t, 'e'), deliveries: [{ id: `dlv-${t}`, destination_id: 'd', next_attempt_at: t0 }] }])
          expect(inserted).toEqual([{ duplicate: false, destination_ids: ['d'] }])
          await s.recordAttempts([attempted(t, `dlv-${t}`, 'e', 'd', false, 1)])
        }
        // The other tenant's delivery is parked (as for a disabled destination): nothing here may make it due.
        await s.holdDeliveries(['dlv-t-iso2'], false)
        const other = async () => ({
          destination: await s.getDestination('t-iso2', 'd'),
          events: await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['t-iso2'] }),
          event: await s.getEvent('t-iso2', 'e', 'd'),
          attempts: await s.listAttempts('t-iso2', 'e'),
        })
        const before = await other()
        expect(before.destination).toMatchObject({ consecutive_failures: 1, disabled_at: null })
        const mine = (await s.getDestination('t-iso1', 'd'))!
        expect(await s.updateDestination({ ...mine, topics: ['changed'], config: { url: 'https://changed.example' }, updated_at: at(50) }, mine.updated_at)).toBe('updated')
        await s.setDestinationDisabled('t-iso1', 'd', at(60), at(60))
        await s.setDestinationDisabled('t-iso1', 'd', null, at(70))
        await s.recordAttempts([attempted('t-iso1', 'dlv-t-iso1', 'e', 'd', false, 80)])
        await s.recordAttempts([attempted('t-iso1', 'dlv-t-iso1', 'e', 'd', true, 90)])
        expect(await s.requeueDelivery('t-iso1', 'e', 'd', at(100))).toBe(true)
        expect(await other()).toEqual(before)
        expect((await s.getDestination('t-iso1', 'd'))!.topics).toEqual(['changed'])
        // Enabling and the manual retry made this tenant's delivery due, and left the other's parked.
        const due = (await s.claimDueDeliveries({ owner: 'iso', now: at(1e9), leaseUntil: at(2e9), limit: 1000 })).filter((c) => c.id.startsWith('dlv-t-iso'))
        expect(due.map((c) => [c.id, c.manual, c.attempt_count])).toEqual([['dlv-t-iso1', true, 3]])
        expect(await s.deleteDestination('t-iso1', 'd')).toBe(true)
        expect(await other()).toEqual(before)
        expect(await s.deleteTenant('t-iso1')).toBe(true)
        expect(await other()).toEqual(before)
      })
    })

    describe('events and the delivery queue', () => {
      it('inserts an event with its deliveries once; a republish is a duplicate naming the same destinations', async () => {
        await s.upsertTenant('t-e', {}, t0)
        for (const id of ['a', 'b', 'c']) await s.insertDestination(destination('t-e', id))
        const item = { event: event('t-e', 'e1'), deliveries: [{ id: 'dlv-e1-a', destination_id: 'a', next_attempt_at: t0 }, { id: 'dlv-e1-b', destination_id: 'b', next_attempt_at: t0 }] }
        expect(await s.insertEvents([item])).toEqual([{ duplicate: false, destination_ids: ['a', 'b'] }])
        const again = { ...item, deliveries: [{ id: 'dlv-e1-c', destination_id: 'c', next_attempt_at: t0 }] }
        const [dup] = await s.insertEvents([again])
        expect(dup!.duplicate).toBe(true)
        expect(dup!.destination_ids.sort()).toEqual(['a', 'b'])
        const twice = await s.insertEvents([{ event: event('t-e', 'e2'), deliveries: [] }, { event: event('t-e', 'e2'), deliveries: [] }])
        expect(twice.map((r) => r.duplicate)).toEqual([false, true])
      })

      it('inserts nothing for a tenant that is gone (nor for the rest of its group), and no delivery to a destination that is gone', async () => {
        await s.upsertTenant('t-g', {}, t0)
        await s.insertDestination(destination('t-g', 'here'))
        const deliveries = (n: string) => [
          { id: `dlv-${n}-here`, destination_id: 'here', next_attempt_at: t0 },
          { id: `dlv-${n}-gone`, destination_id: 'gone', next_attempt_at: t0 },
        ]
        const results = await s.insertEvents([
          { event: event('t-g', 'g1'), deliveries: deliveries('g1'), group: 1 },
          { event: event('t-g', 'g2'), deliveries: deliveries('g2'), group: 2 },
          { event: event('t-ghost', 'g3'), deliveries: [], group: 2 },
          { event: event('t-ghost', 'g4'), deliveries: [] },
        ])
        expect(results).toEqual([
          { duplicate: false, destination_ids: ['here'] },
          { duplicate: false, destination_ids: [], missing_tenant: 't-ghost' },
          { duplicate: false, destination_ids: [], missing_tenant: 't-ghost' },
          { duplicate: false, destination_ids: [], missing_tenant: 't-ghost' },
        ])
        await s.recordAttempts([attempted('t-g', 'dlv-g1-here', 'g1', 'here', true, 1)])
        expect((await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['t-g', 't-ghost'] })).map((r) => [r.event_id, r.destination_id])).toEqual([['g1', 'here']])
        const [again] = await s.insertEvents([{ event: event('t-g', 'g2'), deliveries: deliveries('g2b') }])
        expect(again).toEqual({ duplicate: false, destination_ids: ['here'] })
      })

      it('logs no attempt for a delivery whose tenant was deleted meanwhile', async () => {
        await s.upsertTenant('t-late', {}, t0)
        await s.insertDestination(destination('t-late', 'd'))
        await s.insertEvents([{ event: event('t-late', 'l1'), deliveries: [{ id: 'dlv-late', destination_id: 'd', next_attempt_at: t0 }] }])
        await s.deleteTenant('t-late')
        await s.recordAttempts([attempted('t-late', 'dlv-late', 'l1', 'd', true, 1)])
        await s.upsertTenant('t-late', {}, t0)
        expect(await s.listAttempts('t-late', 'l1')).toEqual([])
      })

      it('claims due rows once while leased, again after the lease expires, and never rows leased at insert', async () => {
        await s.upsertTenant('t-q', {}, t0)
        await s.insertDestination(destination('t-q', 'd'))
        await s.insertEvents([
          { event: event('t-q', 'q1'), deliveries: [{ id: 'dlv-q1', destination_id: 'd', next_attempt_at: at(0) }] },
          { event: event('t-q', 'q2'), deliveries: [{ id: 'dlv-q2', destination_id: 'd', next_attempt_at: at(0), lease_owner: 'fast', lease_until: at(500) }] },
          { event: event('t-q', 'q3'), deliveries: [{ id: 'dlv-q3', destination_id: 'd', next_attempt_at: at(10_000) }] },
        ])
        const mine = (rows: { id: string }[]) => rows.map((r) => r.id).filter((id) => id.startsWith('dlv-q')).sort()
        const a = await s.claimDueDeliveries({ owner: 'A', now: at(100), leaseUntil: at(1000), limit: 100 })
        expect(mine(a)).toEqual(['dlv-q1'])
        expect(a.find((c) => c.id === 'dlv-q1')!.event).toMatchObject({ id: 'q1', topic: 'order.created', data: { id: 'q1' }, metadata: { k: 'v' }, eligible_for_retry: true })
        expect(mine(await s.claimDueDeliveries({ owner: 'B', now: at(200), leaseUntil: at(1000), limit: 100 }))).toEqual([])
        // Past both leases (and q3 not due yet): B takes q1 and q2.
        expect(mine(await s.claimDueDeliveries({ owner: 'B', now: at(2000), leaseUntil: at(9000), limit: 100 }))).toEqual(['dlv-q1', 'dlv-q2'])
        // A renewed lease keeps C away from q2 past its original expiry (9000).
        expect(await s.extendLeases('B', ['dlv-q2', 'dlv-q1'], at(20_000))).toBe(2)
        expect(await s.extendLeases('nobody', ['dlv-q2'], at(30_000))).toBe(0)
        expect(await s.releaseLeases('B', ['dlv-q1'])).toBe(1)
        expect(mine(await s.claimDueDeliveries({ owner: 'C', now: at(9500), leaseUntil: at(9900), limit: 100 }))).toEqual(['dlv-q1'])
      })

      it('claims only deliveries due at or after dueSince when given (the worker\'s claim window), all due ones without it', async () => {
        await s.upsertTenant('t-w', {}, t0)
        await s.insertDestination(destination('t-w', 'd'))
        await s.insertEvents(
          [100, 200, 300].map((ms) => ({ event: event('t-w', `w${ms}`), deliveries: [{ id: `dlv-w${ms}`, destination_id: 'd', next_attempt_at: at(ms) }] })),
        )
        const mine = (rows: { id: string }[]) => rows.map((r) => r.id).filter((id) => id.startsWith('dlv-w')).sort()
        const windowed = await s.claimDueDeliveries({ owner: 'A', now: at(1000), leaseUntil: at(2000), limit: 100, dueSince: at(200) })
        if (kind.tenantClaims) {
          // Claims per tenant take the window as a hint only (delivery-records.ts): all due, without due times.
          expect(mine(windowed)).toEqual(['dlv-w100', 'dlv-w200', 'dlv-w300'])
          expect(windowed.filter((c) => c.id.startsWith('dlv-w')).map((c) => c.due_at)).toEqual([undefined, undefined, undefined])
          return
        }
        expect(mine(windowed)).toEqual(['dlv-w200', 'dlv-w300'])
        expect(mine(await s.claimDueDeliveries({ owner: 'B', now: at(1000), leaseUntil: at(2000), limit: 100 }))).toEqual(['dlv-w100'])
      })

      it('claims the earliest due first up to the limit, each with its event as stored; a release without ids gives back all of an owner\'s leases', async () => {
        await s.upsertTenant('t-o', {}, t0)
        await s.insertDestination(destination('t-o', 'd'))
        // Due long before every other test's rows, so these are the only ones due at `now`.
        const base = -3e12
        const data = { nested: { list: [1, 'two', null] }, n: 1.5 }
        await s.insertEvents(
          [300, 100, 200].map((ms) => ({
            event: { ...event('t-o', `o${ms}`, base), data: ms === 100 ? data : null, metadata: { k: 'v', n: String(ms) }, eligible_for_retry: ms !== 200 },
            deliveries: [{ id: `dlv-o${ms}`, destination_id: 'd', next_attempt_at: at(base + ms) }],
          })),
        )
        const now = at(base + 1000)
        const first = await s.claimDueDeliveries({ owner: 'R1', now, leaseUntil: at(base + 5000), limit: 2 })
        expect(first.map((c) => c.id).sort()).toEqual(['dlv-o100', 'dlv-o200'])
        const claimed = first.find((c) => c.id === 'dlv-o100')!
        // The event's fields as stored (a storage may give data as a value read lazily from its stored text).
        const { tenant_id, id, topic, time, data: value, metadata, eligible_for_retry, created_at } = claimed.event
        if (claimed.event.data_json !== undefined) expect(JSON.parse(claimed.event.data_json)).toEqual(data)
        expect({ ...claimed, event: { tenant_id, id, topic, time, data: value, metadata, eligible_for_retry, created_at } }).toEqual({
          id: 'dlv-o100',
          tenant_id: 't-o',
          event_id: 'o100',
          destination_id: 'd',
          attempt_count: 0,
          manual: false,
          order_key: null,
          // Claims per tenant leave the due time out (the worker's claim window stays off: delivery-records.ts).
          due_at: kind.tenantClaims ? undefined : at(base + 100),
          event: { tenant_id: 't-o', id: 'o100', topic: 'order.created', time: at(base), data, metadata: { k: 'v', n: '100' }, eligible_for_retry: true, created_at: at(base) },
        })
        const nulled = first.find((c) => c.id === 'dlv-o200')!.event
        expect([nulled.data, nulled.eligible_for_retry]).toEqual([null, false])
        expect((await s.claimDueDeliveries({ owner: 'R1', now, leaseUntil: at(base + 5000), limit: 10 })).map((c) => c.id)).toEqual(['dlv-o300'])
        expect(await s.releaseLeases('R1')).toBe(3)
        expect((await s.claimDueDeliveries({ owner: 'R2', now, leaseUntil: at(base + 5000), limit: 10 })).map((c) => c.id).sort()).toEqual(['dlv-o100', 'dlv-o200', 'dlv-o300'])
        expect(await s.releaseLeases('R1')).toBe(0)
        expect(await s.extendLeases('R2', [], at(base + 9000))).toBe(0)
        // Not due for the tests after this one.
        await s.holdDeliveries(['dlv-o100', 'dlv-o200', 'dlv-o300'], true)
      })

      it('writing an attempt that is already recorded changes nothing (the worker writes again after a failed write)', async () => {
        await s.upsertTenant('t-again', {}, t0)
        await s.insertDestination(destination('t-again', 'd'))
        await s.insertEvents([{ event: event('t-again', 'a1'), deliveries: [{ id: 'dlv-again', destination_id: 'd', next_attempt_at: t0 }] }])
        const write = attempted('t-again', 'dlv-again', 'a1', 'd', true, 50)
        await s.recordAttempts([write])
        await s.recordAttempts([write])
        const attempts = await s.listAttempts('t-again', 'a1')
        expect(attempts.map((a) => a.id)).toEqual([write.attempt.id])
        expect(await s.getEvent('t-again', 'a1', 'd')).toMatchObject({ status: 'success' })
        // A new attempt of the same delivery is still written.
        await s.recordAttempts([{ ...write, attempt: { ...write.attempt, id: 'att_again_2', attempt_number: 2 } }])
        expect(await s.listAttempts('t-again', 'a1')).toHaveLength(2)
      })

      // Postgres writes a batch as one statement whose streaks count only the attempts it logged; SQLite counts
      // them before it looks (its write commits or fails locally, so it is not made again after a commit).
      it.runIf(kind.name.startsWith('postgres'))('writing a batch again leaves the failure streaks as they were (the write may have committed after its deadline)', async () => {
        await s.upsertTenant('t-again2', {}, t0)
        await s.insertDestination(destination('t-again2', 'd'))
        await s.insertEvents(['a', 'b'].map((id) => ({ event: event('t-again2', id), deliveries: [{ id: `dlv-again2-${id}`, destination_id: 'd', next_attempt_at: t0 }] })))
        const first = [attempted('t-again2', 'dlv-again2-a', 'a', 'd', false, 10), attempted('t-again2', 'dlv-again2-b', 'b', 'd', false, 11)]
        expect(await s.recordAttempts(first)).toEqual([{ tenant_id: 't-again2', destination_id: 'd', consecutive_failures: 2 }])
        // The same batch, and a new failure behind it: only the new one counts.
        const again = await s.recordAttempts([...first, attempted('t-again2', 'dlv-again2-a', 'a', 'd', false, 20)])
        expect(again).toEqual([{ tenant_id: 't-again2', destination_id: 'd', consecutive_failures: 3 }])
        expect((await s.getDestination('t-again2', 'd'))!.consecutive_failures).toBe(3)
        expect(await s.listAttempts('t-again2', 'a')).toHaveLength(2)
      })

      it('a failure streak counts the failures after the batch\'s last success, in batch order', async () => {
        await s.upsertTenant('t-order', {}, t0)
        await s.insertDestination(destination('t-order', 'd'))
        await s.insertEvents(['a', 'b', 'c', 'e'].map((id) => ({ event: event('t-order', id), deliveries: [{ id: `dlv-order-${id}`, destination_id: 'd', next_attempt_at: t0 }] })))
        expect(await s.recordAttempts([attempted('t-order', 'dlv-order-a', 'a', 'd', false, 1)])).toEqual([{ tenant_id: 't-order', destination_id: 'd', consecutive_failures: 1 }])
        const streaks = await s.recordAttempts([
          attempted('t-order', 'dlv-order-b', 'b', 'd', false, 2),
          attempted('t-order', 'dlv-order-c', 'c', 'd', true, 3),
          attempted('t-order', 'dlv-order-e', 'e', 'd', false, 4),
        ])
        expect(streaks).toEqual([{ tenant_id: 't-order', destination_id: 'd', consecutive_failures: 1 }])
        expect(await s.recordAttempts([attempted('t-order', 'dlv-order-b', 'b', 'd', true, 5)])).toEqual([{ tenant_id: 't-order', destination_id: 'd', consecutive_failures: 0 }])
      })

      it('a FIFO delivery that finishes makes the next one of its key due in the same write; a retry keeps it waiting', async () => {
        await s.upsertTenant('t-fifo', {}, t0)
        await s.insertDestination(destination('t-fifo', 'd'))
        const keyed = (id: string, key: string) => ({ event: event('t-fifo', id), deliveries: [{ id: `dlv-fifo-${id}`, destination_id: 'd', next_attempt_at: t0, order_key: key }] })
        await s.insertEvents([keyed('k1', 'k'), keyed('k2', 'k'), keyed('k3', 'k'), keyed('j1', 'j'), keyed('j2', 'j')])
        const due = async (now: number) =>
          (await s.claimDueDeliveries({ owner: `w${now}`, now: at(now), leaseUntil: at(now + 100_000), limit: 100 })).map((c) => c.id).filter((id) => id.startsWith('dlv-fifo')).sort()
        expect(await due(1000)).toEqual(['dlv-fifo-j1', 'dlv-fifo-k1'])
        const write = (id: string, key: string, ok: boolean, ms: number): AttemptWrite => {
          const w = attempted('t-fifo', `dlv-fifo-${id}`, id, 'd', ok, ms)
          return { ...w, delivery: { ...w.delivery, order_key: key } }
        }
        // k1 succeeds, j1 fails and will be retried: k2 is due, j2 still waits behind j1.
        await s.recordAttempts([write('k1', 'k', true, 2000), write('j1', 'j', false, 2001)])
        expect(await due(5000)).toEqual(['dlv-fifo-j1', 'dlv-fifo-k2'])
        await s.recordAttempts([write('j1', 'j', true, 6000)])
        expect(await due(9000)).toEqual(['dlv-fifo-j2'])
      })

      it('records attempts, updates delivery state and failure streaks, and lists attempted pairs only', async () => {
        await s.upsertTenant('t-r', {}, t0)
        await s.insertDestination(destination('t-r', 'd1'))
        await s.insertDestination(destination('t-r', 'd2'))
        await s.insertEvents([
          { event: event('t-r', 'r1', 10), deliveries: [{ id: 'dlv-r1-1', destination_id: 'd1', next_attempt_at: t0 }, { id: 'dlv-r1-2', destination_id: 'd2', next_attempt_at: t0 }] },
          { event: event('t-r', 'r2', 20), deliveries: [{ id: 'dlv-r2-1', destination_id: 'd1', next_attempt_at: t0 }] },
        ])
        expect(await s.listEvents({ dir: 'desc', limit: 10, tenantIds: ['t-r'] })).toEqual([])
        const streaks = await s.recordAttempts([attempted('t-r', 'dlv-r1-1', 'r1', 'd1', false, 100), attempted('t-r', 'dlv-r2-1', 'r2', 'd1', false, 101), attempted('t-r', 'dlv-r1-2', 'r1', 'd2', true, 102)])
        expect(streaks.sort((a, b) => a.destination_id.localeCompare(b.destination_id))).toEqual([
          { tenant_id: 't-r', destination_id: 'd1', consecutive_failures: 2 },
          { tenant_id: 't-r', destination_id: 'd2', consecutive_failures: 0 },
        ])
        const more = await s.recordAttempts([attempted('t-r', 'dlv-r1-1', 'r1', 'd1', false, 200)])
        expect(more[0]!.consecutive_failures).toBe(3)
        const rows = await s.listEvents({ dir: 'desc', limit: 10, tenantIds: ['t-r'] })
        expect(rows.map((r) => [r.event_id, r.destination_id])).toEqual([['r2', 'd1'], ['r1', 'd2'], ['r1', 'd1']])
        expect(rows[1]).toMatchObject({ status: 'success', topic: 'order.created', data: { id: 'r1' } })
        expect(rows[1]!.successful_at?.getTime()).toBe(at(102).getTime())
        const failed = await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['t-r'], status: 'failed' })
        expect(failed.map((r) => [r.event_id, r.destination_id])).toEqual([['r1', 'd1'], ['r2', 'd1']])
        const byDest = await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['t-r'], destinationIds: ['d2'] })
        expect(byDest.map((r) => r.event_id)).toEqual(['r1'])
        const window = await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['t-r'], timeGte: at(15), timeLte: at(25) })
        expect(window.map((r) => r.event_id)).toEqual(['r2'])
        const page2 = await s.listEvents({ dir: 'desc', limit: 1, tenantIds: ['t-r'], after: [at(20).getTime(), 'r2', 'd1'] })
        expect(page2.map((r) => [r.event_id, r.destination_id])).toEqual([['r1', 'd2'], ['r1', 'd1']])
        // Most recently attempted pair, or the named one.
        expect((await s.getEvent('t-r', 'r1'))?.destination_id).toBe('d1')
        expect((await s.getEvent('t-r', 'r1', 'd2'))?.status).toBe('success')
        expect(await s.getEvent('t-r', 'missing')).toBeNull()
        expect(await s.getEvent('other-tenant', 'r1')).toBeNull()
        const attempts = await s.listAttempts('t-r', 'r1')
        expect(attempts.map((a) => a.delivered_at.getTime())).toEqual([at(200), at(102), at(100)].map((d) => d.getTime()))
        expect(attempts[1]).toMatchObject({ status: 'success', response_status_code: 200, response_headers: { a: 'b' }, duration_ms: 3 })
      })

      it('sets a failure streak to the failures after the batch\'s last success, and reports none for a gone destination', async () => {
        await s.upsertTenant('t-st', {}, t0)
        await s.insertDestination(destination('t-st', 'd'))
        await s.insertDestination(destination('t-st', 'gone'))
        const ids = ['s1', 's2', 's3', 's4', 's5']
        await s.insertEvents(ids.map((e) => ({ event: event('t-st', e), deliveries: [{ id: `dlv-${e}`, destination_id: e === 's5' ? 'gone' : 'd', next_attempt_at: t0 }] })))
        expect(await s.recordAttempts([attempted('t-st', 'dlv-s1', 's1', 'd', false, 1), attempted('t-st', 'dlv-s2', 's2', 'd', false, 2)])).toEqual([
          { tenant_id: 't-st', destination_id: 'd', consecutive_failures: 2 },
        ])
        expect(await s.recordAttempts([attempted('t-st', 'dlv-s3', 's3', 'd', true, 3), attempted('t-st', 'dlv-s4', 's4', 'd', false, 4)])).toEqual([
          { tenant_id: 't-st', destination_id: 'd', consecutive_failures: 1 },
        ])
        expect(await s.recordAttempts([attempted('t-st', 'dlv-s1', 's1', 'd', true, 5)])).toEqual([{ tenant_id: 't-st', destination_id: 'd', consecutive_failures: 0 }])
        expect((await s.getDestination('t-st', 'd'))!.consecutive_failures).toBe(0)
        expect(await s.deleteDestination('t-st', 'gone')).toBe(true)
        expect(await s.recordAttempts([attempted('t-st', 'dlv-s5', 's5', 'gone', false, 6)])).toEqual([])
      })

      it('admin listing filters by tenant, topic and destination', async () => {
        await s.upsertTenant('t-a1', {}, t0)
        await s.upsertTenant('t-a2', {}, t0)
        await s.insertDestination(destination('t-a1', 'd'))
        await s.insertDestination(destination('t-a2', 'e'))
        await s.insertEvents([
          { event: { ...event('t-a1', 'a1', 5), topic: 'x.one' }, deliveries: [{ id: 'dlv-a1', destination_id: 'd', next_attempt_at: t0 }] },
          { event: { ...event('t-a2', 'a2', 6), topic: 'x.two' }, deliveries: [{ id: 'dlv-a2', destination_id: 'e', next_attempt_at: t0 }] },
        ])
        await s.recordAttempts([attempted('t-a1', 'dlv-a1', 'a1', 'd', true, 1), attempted('t-a2', 'dlv-a2', 'a2', 'e', true, 1)])
        const both = await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['t-a1', 't-a2'] })
        expect(both.map((r) => r.tenant_id)).toEqual(['t-a1', 't-a2'])
        expect((await s.listEvents({ dir: 'asc', limit: 10, topics: ['x.two'] })).map((r) => r.event_id)).toEqual(['a2'])
        expect((await s.listEvents({ dir: 'asc', limit: 10, destinationIds: ['d'], tenantIds: ['t-a1'] })).map((r) => r.event_id)).toEqual(['a1'])
      })

      it('requeues a delivery for a manual attempt, and cancels held ones for a gone destination', async () => {
        await s.upsertTenant('t-m', {}, t0)
        await s.insertDestination(destination('t-m', 'd'))
        await s.insertEvents([{ event: event('t-m', 'm1'), deliveries: [{ id: 'dlv-m1', destination_id: 'd', next_attempt_at: t0 }] }])
        await s.recordAttempts([{ ...attempted('t-m', 'dlv-m1', 'm1', 'd', false, 1), delivery: { id: 'dlv-m1', status: 'failed', next_attempt_at: null, successful_at: null } }])
        expect(await s.requeueDelivery('t-m', 'm1', 'd', at(50))).toBe(true)
        expect(await s.requeueDelivery('t-m', 'nope', 'd', at(50))).toBe(false)
        const [c] = (await s.claimDueDeliveries({ owner: 'A', now: at(1e10), leaseUntil: at(2e10), limit: 1000 })).filter((x) => x.id === 'dlv-m1')
        expect(c).toMatchObject({ manual: true, attempt_count: 1 })
        await s.holdDeliveries(['dlv-m1'], true)
        const again = await s.claimDueDeliveries({ owner: 'B', now: at(3e10), leaseUntil: at(4e10), limit: 1000 })
        expect(again.map((x) => x.id)).not.toContain('dlv-m1')
      })

      it('counts due deliveries and the oldest due time (not later retries, finished or parked ones), and answers a ping', async () => {
        const q = await kind.open()
        await q.ping()
        expect(await q.queueStats(at(0))).toEqual({ due: 0, oldest_due_at: null })
        await q.upsertTenant('t-s', {}, t0)
        for (const id of ['d', 'e']) await q.insertDestination(destination('t-s', id))
        await q.insertEvents([
          { event: event('t-s', 's1'), deliveries: [{ id: 'dlv-s1', destination_id: 'd', next_attempt_at: at(100) }] },
          { event: event('t-s', 's2'), deliveries: [{ id: 'dlv-s2', destination_id: 'd', next_attempt_at: at(200), lease_owner: 'fast', lease_until: at(9000) }] },
          { event: event('t-s', 's3'), deliveries: [{ id: 'dlv-s3', destination_id: 'd', next_attempt_at: at(5000) }] },
          { event: event('t-s', 's4'), deliveries: [{ id: 'dlv-s4', destination_id: 'd', next_attempt_at: at(50) }, { id: 'dlv-s5', destination_id: 'e', next_attempt_at: at(60) }] },
        ])
        await q.recordAttempts([attempted('t-s', 'dlv-s4', 's4', 'd', true, 70)])
        await q.holdDeliveries(['dlv-s5'], false)
        const stats = await q.queueStats(at(1000))
        expect(stats.due).toBe(2)
        expect(stats.oldest_due_at?.getTime()).toBe(at(100).getTime())
        expect((await q.queueStats(at(10_000))).due).toBe(3)
      })

      it('migrating again is a no-op', async () => {
        await s.migrate()
        expect(await s.getTenant('t-up')).not.toBeNull()
      })
    })
  })
}

describe.runIf(storageKinds()[2]!.available)('postgres migrations', () => {
  it('two processes migrating one fresh database at once both succeed (advisory lock)', async () => {
    const db = await createTestDatabase()
    try {
      const [a, b] = await Promise.all([postgres({ url: db.url, max: 2 })(), postgres({ url: db.url, max: 2 })()])
      await Promise.all([a.migrate(), b.migrate()])
      await a.upsertTenant('x', {}, t0)
      expect((await b.getTenant('x'))?.id).toBe('x')
      await Promise.all([a.close(), b.close()])
    } finally {
      await db.drop()
    }
  })
})
