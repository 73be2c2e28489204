import postgresJs from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgres } from '../../src/storage/postgres.js'
import type { AttemptWrite, DeliveryStatus, NewEventWithDeliveries, Storage } from '../../src/storage/storage.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { attemptWrite, seedOwners } from '../support/records.js'
import { pgbouncerKind, storageKinds } from '../support/storages.js'

const cutoff = new Date('2026-01-01T00:00:00.000Z')
const old = (minutes: number) => new Date(cutoff.getTime() - 86_400_000 + minutes * 60_000)

function event(tenant: string, id: string, time: Date, destinations: string[]): NewEventWithDeliveries {
  return {
    event: { tenant_id: tenant, id, topic: 't', time, data: {}, metadata: {}, eligible_for_retry: true, created_at: time },
    deliveries: destinations.map((d) => ({ id: `dlv-${tenant}-${id}-${d}`, destination_id: d, next_attempt_at: time })),
  }
}

/** One attempt of a delivery, leaving it in `status`. */
const attempt = (tenant: string, eventId: string, destination: string, status: DeliveryStatus): AttemptWrite =>
  attemptWrite(tenant, eventId, destination, status, cutoff)

async function eventCount(s: Storage, tenant: string): Promise<number> {
  const rows = await s.eventMetrics({ start: new Date(0), end: new Date('2100-01-01T00:00:00Z'), limit: 10, dimensions: [], filters: { tenant_id: [tenant] } })
  return rows[0]?.count ?? 0
}

/** Prune everything before the cutoff the way the pruner does: batches, each starting where the last stopped. */
async function pruneAll(s: Storage, limit: number) {
  const total = { events: 0, deliveries: 0, attempts: 0, batches: 0 }
  let from: Date | undefined
  for (;;) {
    const batch = await s.pruneEvents({ before: cutoff, from, limit })
    total.events += batch.events
    total.deliveries += batch.deliveries
    total.attempts += batch.attempts
    total.batches++
    if (batch.found < limit || !batch.last) return total
    from = batch.last
  }
}

for (const kind of [...storageKinds({ plainPostgres: true }), pgbouncerKind()]) {
  describe.runIf(kind.available)(`storage retention: ${kind.name}`, () => {
    let s: Storage
    beforeAll(async () => {
      s = await kind.open()
      await seedOwners(s, { ret: ['d1', 'd2'], 'ret-batches': ['d1'] })
    })
    afterAll(() => kind.cleanup())

    it('deletes old events with their deliveries and attempts, keeping pending and recent ones', async () => {
      const t = 'ret'
      await s.insertEvents([
        event(t, 'old-ok', old(1), ['d1']),
        event(t, 'old-failed', old(2), ['d1']),
        event(t, 'old-pending', old(3), ['d1']),
        event(t, 'old-mixed', old(4), ['d1', 'd2']),
        event(t, 'old-bare', old(5), []),
        event(t, 'old-never-attempted', old(6), ['d1']),
        event(t, 'recent', new Date(cutoff.getTime() + 1), ['d1']),
      ])
      await s.recordAttempts([
        attempt(t, 'old-ok', 'd1', 'success'),
        attempt(t, 'old-failed', 'd1', 'failed'),
        attempt(t, 'old-pending', 'd1', 'pending'),
        attempt(t, 'old-mixed', 'd1', 'success'),
        attempt(t, 'old-mixed', 'd2', 'pending'),
        attempt(t, 'recent', 'd1', 'success'),
      ])
      const pruned = await pruneAll(s, 100)
      expect(pruned).toMatchObject({ events: 3, deliveries: 2, attempts: 2 })
      expect(await eventCount(s, t)).toBe(4)
      expect(await s.listAttempts(t, 'old-ok')).toEqual([])
      expect(await s.getEvent(t, 'old-failed')).toBeNull()
      expect(await s.listAttempts(t, 'old-pending')).toHaveLength(1)
      expect(await s.listAttempts(t, 'old-mixed')).toHaveLength(2)
      expect(await s.getEvent(t, 'old-mixed', 'd1')).not.toBeNull()
      expect(await s.listAttempts(t, 'recent')).toHaveLength(1)
      // The never-attempted delivery is still due: claimable as before.
      const claimed = await s.claimDueDeliveries({ owner: 'w', now: new Date(), leaseUntil: new Date(Date.now() + 60_000), limit: 10 })
      expect(claimed.map((c) => c.event_id)).toContain('old-never-attempted')
      await s.releaseLeases('w')
    })

    it('works in small batches, each starting where the previous one stopped, past events it keeps', async () => {
      const t = 'ret-batches'
      // Every third event has a pending delivery; the rest were delivered.
      const items = Array.from({ length: 30 }, (_, i) => event(t, `e${String(i).padStart(2, '0')}`, old(10 + i), ['d1']))
      await s.insertEvents(items)
      await s.recordAttempts(items.map((item, i) => attempt(t, item.event.id, 'd1', i % 3 === 0 ? 'pending' : 'success')))
      const pruned = await pruneAll(s, 4)
      expect(pruned.events).toBe(20)
      expect(pruned.batches).toBeGreaterThanOrEqual(5)
      expect(await eventCount(s, t)).toBe(10)
      expect(await s.pruneEvents({ before: cutoff, limit: 4 })).toMatchObject({ events: 0, found: 0 })
    })
  })
}

describe.runIf(postgresAvailable)('storage retention: Postgres concurrency', () => {
  let db: { url: string; drop: () => Promise<void> }
  let a: Storage
  let b: Storage
  beforeAll(async () => {
    db = await createTestDatabase()
    a = await postgres({ url: db.url, max: 3 })()
    b = await postgres({ url: db.url, max: 3 })()
    await a.migrate()
    await seedOwners(a, { held: ['d1'] })
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await db?.drop()
  })

  it('lets one instance hold the pruner lock at a time', async () => {
    const release = await a.lockPruner!()
    expect(release).toBeTypeOf('function')
    expect(await b.lockPruner!()).toBeNull()
    expect(await a.lockPruner!()).toBeNull() // a session lock on another connection of the same pool is another holder
    await release!()
    const again = await b.lockPruner!()
    expect(again).toBeTypeOf('function')
    await again!()
  })

  it('keeps an event whose delivery another transaction holds, without waiting for it', async () => {
    await a.insertEvents([event('held', 'e1', old(1), ['d1']), event('held', 'e2', old(2), ['d1'])])
    await a.recordAttempts([attempt('held', 'e1', 'd1', 'success'), attempt('held', 'e2', 'd1', 'success')])
    const other = postgresJs(db.url, { max: 1, onnotice: () => {} })
    try {
      await other.begin(async (tx) => {
        await tx`select id from deliveries where id = ${'dlv-held-e1-d1'} for update`
        const batch = await b.pruneEvents({ before: cutoff, limit: 10 })
        expect(batch).toMatchObject({ events: 1, found: 2 })
      })
      expect(await b.pruneEvents({ before: cutoff, limit: 10 })).toMatchObject({ events: 1 })
      expect(await eventCount(b, 'held')).toBe(0)
    } finally {
      await other.end()
    }
  })
})
