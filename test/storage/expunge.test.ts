import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AttemptWrite, DeliveryStatus, NewEventWithDeliveries, Storage } from '../../src/storage/storage.js'
import { attemptWrite, seedOwners } from '../support/records.js'
import { storageKinds } from '../support/storages.js'

// Erasure in storage: by ids (per id, tenant-scoped, idempotent) and by time range as a durable job, on SQLite
// (memory, file) and Postgres (partitioned and plain layouts).

const day = 86_400_000
/** Today's midnight (UTC): the partitioned layout has partitions from today on, so rows on both sides of it land in two. */
const midnight = Math.floor(Date.now() / day) * day + day
const at = (ms: number) => new Date(ms)

/** An event created and timed at `ms`, with one delivery per destination (`dlv-{tenant}-{id}-{destination}`). */
function event(tenant: string, id: string, ms: number, destinations: string[], topic = 'order.created'): NewEventWithDeliveries {
  return {
    event: { tenant_id: tenant, id, topic, time: at(ms), data: { secret: `payload of ${id}` }, metadata: { k: 'v' }, eligible_for_retry: true, created_at: at(ms) },
    deliveries: destinations.map((d) => ({ id: `dlv-${tenant}-${id}-${d}`, destination_id: d, next_attempt_at: at(ms) })),
  }
}

/** An attempt of the event's delivery to d1 that leaves it in `status`, with the receiver's answer body. */
function answered(tenant: string, id: string, status: DeliveryStatus, ms: number, suffix = ''): AttemptWrite {
  const write = attemptWrite(tenant, id, 'd1', status, at(ms), { idSuffix: suffix })
  write.attempt.response_body = `receiver saw ${id}`
  return write
}

/** Step a job as `owner` until it is done (or `limit` steps), returning the steps' outcomes. */
async function runJob(s: Storage, id: string, owner: string, now: Date, limit = 100): Promise<string[]> {
  const outcomes: string[] = []
  for (let i = 0; i < limit; i++) {
    const step = await s.advanceExpungeJob({ id, owner, now, leaseUntil: at(now.getTime() + 30_000), batchSize: 40 })
    outcomes.push(step.outcome)
    if (step.outcome !== 'erased') break
  }
  return outcomes
}

for (const kind of storageKinds({ plainPostgres: true })) {
  describe.runIf(kind.available)(`storage erasure: ${kind.name}`, () => {
    let s: Storage
    beforeAll(async () => {
      s = await kind.open()
      await seedOwners(s, { acme: ['d1', 'd2'], other: ['d1'], ranged: ['d1'], moved: ['d1'], gone: ['d1'] })
    })
    afterAll(() => kind.cleanup())

    it('erases by ids: per id expunged or not_found, another tenant\'s event being not_found and untouched', async () => {
      const t0 = midnight - 10_000
      await s.insertEvents([event('acme', 'e1', t0, ['d1', 'd2']), event('acme', 'e2', t0 + 1, ['d1']), event('other', 'e3', t0 + 2, ['d1']), event('other', 'e1', t0 + 3, ['d1'])])
      await s.recordAttempts([answered('acme', 'e1', 'failed', t0 + 100), answered('acme', 'e2', 'success', t0 + 100), answered('other', 'e1', 'success', t0 + 100)])
      const now = at(t0 + 1000)
      const outcomes = await s.expungeEvents('acme', ['e1', 'nope', 'e3'], now)
      expect(Object.fromEntries(outcomes!)).toEqual({ e1: 'expunged', nope: 'not_found', e3: 'not_found' })

      const erased = await s.getEvent('acme', 'e1', 'd1')
      expect(erased).toMatchObject({ data: null, expunged_at: now, topic: 'order.created', time: at(t0), metadata: { k: 'v' }, status: 'expunged' })
      const [attempt] = await s.listAttempts('acme', 'e1')
      // The log keeps ids, topic, times and status codes; the receiver's body is gone.
      expect(attempt).toMatchObject({ id: 'att-dlv-acme-e1-d1', response_status_code: 500, response_body: null, delivered_at: at(t0 + 100), status: 'failed' })
      // Untouched: the tenant's other event, and the other tenant's events (one with the same id).
      expect(await s.getEvent('acme', 'e2')).toMatchObject({ data: { secret: 'payload of e2' }, expunged_at: null })
      expect((await s.listAttempts('acme', 'e2'))[0]!.response_body).toBe('receiver saw e2')
      expect(await s.getEvent('other', 'e1')).toMatchObject({ data: { secret: 'payload of e1' }, expunged_at: null })
      expect((await s.listAttempts('other', 'e1'))[0]!.response_body).toBe('receiver saw e1')
      // Listings show the erased state too.
      const listed = await s.listEvents({ tenantIds: ['acme'], limit: 10, dir: 'asc' })
      expect(listed.map((r) => [r.event_id, r.data, r.expunged_at])).toEqual([['e1', null, now], ['e2', { secret: 'payload of e2' }, null]])
    })

    it('cancels the pending deliveries with the erase: never claimed, retried or replayed again, and erasing twice changes nothing', async () => {
      // e1's delivery to d1 failed (retry pending), its delivery to d2 was never attempted; both are pending.
      const claimed = await s.claimDueDeliveries({ owner: 'w', now: at(midnight + day), leaseUntil: at(midnight + day + 30_000), limit: 100 })
      expect(claimed.filter((c) => c.tenant_id === 'acme' && c.event_id === 'e1')).toEqual([])
      expect(await s.requeueDelivery('acme', 'e1', 'd1', at(midnight))).toBe(false)
      const first = (await s.getEvent('acme', 'e1', 'd1'))!.expunged_at
      const again = await s.expungeEvents('acme', ['e1', 'e1'], at(midnight + 5000))
      expect(Object.fromEntries(again!)).toEqual({ e1: 'expunged' })
      expect((await s.getEvent('acme', 'e1', 'd1'))!.expunged_at).toEqual(first)
      expect(await s.getEvent('acme', 'e1', 'd1')).toMatchObject({ status: 'expunged', data: null })
      await s.releaseLeases('w')
    })

    it('keeps no response body of an attempt that was in flight when its event was erased, and the delivery stays ended', async () => {
      const t0 = midnight + 20_000
      await s.insertEvents([event('acme', 'inflight', t0, ['d1'])])
      const [claimed] = (await s.claimDueDeliveries({ owner: 'w2', now: at(t0), leaseUntil: at(t0 + 30_000), limit: 100 })).filter((c) => c.event_id === 'inflight')
      // Claimed before the erasure: it carries the payload it read (never an empty body).
      expect(claimed!.event.data).toEqual({ secret: 'payload of inflight' })
      await s.expungeEvents('acme', ['inflight'], at(t0 + 10))
      // The worker's result arrives afterwards, as a failure to retry.
      await s.recordAttempts([answered('acme', 'inflight', 'pending', t0 + 20)])
      const [attempt] = await s.listAttempts('acme', 'inflight')
      expect(attempt).toMatchObject({ response_status_code: 500, response_body: null })
      expect(await s.getEvent('acme', 'inflight')).toMatchObject({ status: 'expunged', data: null })
      const later = await s.claimDueDeliveries({ owner: 'w3', now: at(t0 + day), leaseUntil: at(t0 + day + 30_000), limit: 100 })
      expect(later.map((c) => c.event_id)).not.toContain('inflight')
    })

    it('answers null for a tenant that does not exist', async () => {
      expect(await s.expungeEvents('nobody', ['e1'], at(midnight))).toBeNull()
      expect(await s.insertExpungeJob({ id: 'exp-nobody', tenant_id: 'nobody', time_from: at(0), time_to: at(midnight), topic: null, created_at: at(midnight) })).toBeNull()
    })

    it('erases a time range as a job, in batches across midnight (two partitions on the partitioned layout), of one topic only', async () => {
      const t = 'ranged'
      // 100 events of the topic either side of midnight, 10 of another topic in the range, and 5 after it.
      const inRange = Array.from({ length: 100 }, (_, i) => event(t, `r${String(i).padStart(3, '0')}`, midnight - 50_000 + i * 1000, ['d1']))
      await s.insertEvents([...inRange, ...Array.from({ length: 10 }, (_, i) => event(t, `x${i}`, midnight + i, ['d1'], 'order.paid')), event(t, 'after', midnight + 60_000, ['d1'])])
      await s.recordAttempts(inRange.slice(0, 30).map((e) => answered(t, e.event.id, 'failed', midnight + 100_000)))
      const now = at(midnight + 200_000)
      const job = await s.insertExpungeJob({ id: 'exp-ranged', tenant_id: t, time_from: at(midnight - 50_000), time_to: at(midnight + 50_000), topic: 'order.created', created_at: now })
      expect(job).toMatchObject({ status: 'created', expunged: 0 })
      expect((await s.claimExpungeJob('runner-a', now, at(now.getTime() + 30_000)))!.id).toBe('exp-ranged')
      // A second runner finds no job free.
      expect(await s.claimExpungeJob('runner-b', now, at(now.getTime() + 30_000))).toBeNull()
      const first = await s.advanceExpungeJob({ id: 'exp-ranged', owner: 'runner-a', now, leaseUntil: at(now.getTime() + 30_000), batchSize: 40 })
      expect(first).toMatchObject({ outcome: 'erased', job: { status: 'running', expunged: 40 } })
      expect(first.event_ids).toHaveLength(40)
      // runner-a dies here; once its lease expired runner-b takes the job over from its cursor.
      const later = at(now.getTime() + 60_000)
      expect((await s.claimExpungeJob('runner-b', later, at(later.getTime() + 30_000)))!.id).toBe('exp-ranged')
      expect((await s.advanceExpungeJob({ id: 'exp-ranged', owner: 'runner-a', now: later, leaseUntil: later, batchSize: 40 })).outcome).toBe('lost')
      expect(await runJob(s, 'exp-ranged', 'runner-b', later)).toEqual(['erased', 'erased', 'finished'])
      const done = await s.getExpungeJob(t, 'exp-ranged')
      expect(done).toMatchObject({ status: 'done', expunged: 100, finished_at: later, lease_owner: null })
      for (const e of inRange) expect((await s.getEvent(t, e.event.id))?.data ?? null).toBeNull()
      expect((await s.listAttempts(t, 'r000'))[0]).toMatchObject({ response_status_code: 500, response_body: null })
      // Nothing outside the range or of another topic was touched, and nothing of the range is claimable.
      expect(await s.getEvent('ranged', 'x0')).toBeNull() // never attempted: not in the log, but its payload is kept
      const claimed = await s.claimDueDeliveries({ owner: 'w4', now: at(midnight + day), leaseUntil: at(midnight + day + 30_000), limit: 1000 })
      const ids = claimed.filter((c) => c.tenant_id === t).map((c) => c.event_id)
      expect(ids.sort()).toEqual(['after', ...Array.from({ length: 10 }, (_, i) => `x${i}`)].sort())
      expect(claimed.find((c) => c.event_id === 'x0')!.event.data).toEqual({ secret: 'payload of x0' })
      await s.releaseLeases('w4')
      // Done: nothing left to claim; another tenant's id reads as no job.
      expect(await s.claimExpungeJob('runner-c', at(later.getTime() + 120_000), at(later.getTime() + 150_000))).toBeNull()
      expect(await s.getExpungeJob('acme', 'exp-ranged')).toBeNull()
    })

    it('a tenant delete takes its jobs with it (a runner then loses the job)', async () => {
      const now = at(midnight + 300_000)
      await s.insertEvents([event('gone', 'g1', midnight, ['d1'])])
      await s.insertExpungeJob({ id: 'exp-gone', tenant_id: 'gone', time_from: at(0), time_to: now, topic: null, created_at: now })
      expect((await s.claimExpungeJob('runner-g', now, at(now.getTime() + 30_000)))!.id).toBe('exp-gone')
      expect(await s.deleteTenant('gone')).toBe(true)
      expect((await s.advanceExpungeJob({ id: 'exp-gone', owner: 'runner-g', now, leaseUntil: at(now.getTime() + 30_000), batchSize: 10 })).outcome).toBe('lost')
      expect(await s.getExpungeJob('gone', 'exp-gone')).toBeNull()
    })
  })
}
