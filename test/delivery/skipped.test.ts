import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import type { Event } from '../../src/model/event.js'
import { engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const day = 86_400_000
const quick = { pollIntervalMs: 50, retry: { schedule: [150], jitter: 0 }, timeoutMs: 2_000 }

// Nothing silently dropped: what a disabled destination would have received is recorded as skipped.
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`skipped deliveries: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const T = 'skips'
    beforeAll(async () => {
      receiver = await startReceiver((r) => (r.path.startsWith('/fail') ? { status: 500 } : {}))
      outflow = await kind.create({ delivery: quick, alerts: { consecutiveFailures: 2 }, retention: { events: '30d', intervalMs: 3_600_000 } })
      await outflow.upsertTenant(T, {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    const hook = (path: string, topics: string[]) => outflow.createDestination(T, { type: 'webhook', topics, config: { url: `${receiver.url}${path}` } })
    const pairsOf = async (destinationId: string): Promise<Event[]> => (await outflow.listEvents(T, { destination_id: destinationId, dir: 'asc' })).models
    const ids = (path: string) => receiver.on(path).map((r) => r.headers['webhook-id'])

    it('records an event that matches a disabled destination as skipped: listed, status failed, never attempted', async () => {
      const off = await hook('/off', ['s1'])
      const on = await hook('/on', ['s1'])
      await outflow.disableDestination(T, off.id)
      const { id, destination_ids } = await outflow.publish({ tenant_id: T, topic: 's1', data: { n: 1 } })
      expect(destination_ids).toEqual([on.id])
      // The positive signal: the enabled destination's attempt is recorded; the disabled one has none.
      await waitFor(async () => (await pairsOf(on.id)).length === 1, 10_000, 'the enabled destination')
      const [pair] = await pairsOf(off.id)
      expect(pair).toMatchObject({ id, destination_id: off.id, status: 'failed', successful_at: null, skipped_at: expect.any(String) })
      expect((await outflow.getEvent(T, id, { destination_id: off.id })).skipped_at).toEqual(pair!.skipped_at)
      expect((await outflow.listDeliveries(T, id)).map((a) => a.destination_id)).toEqual([on.id])
      expect(await outflow.getEvent(T, id)).toMatchObject({ destination_id: on.id, status: 'success' })
      expect((await pairsOf(on.id))[0]).not.toHaveProperty('skipped_at')
      expect(receiver.on('/off')).toEqual([])
    })

    it('records a publish aimed at a disabled destination (destination_id) as skipped', async () => {
      const off = await hook('/off-direct', ['s2'])
      await outflow.disableDestination(T, off.id)
      const { id, destination_ids } = await outflow.publish({ tenant_id: T, topic: 's2', data: {}, destination_id: off.id })
      expect(destination_ids).toEqual([])
      expect((await pairsOf(off.id)).map((e) => [e.id, typeof e.skipped_at])).toEqual([[id, 'string']])
    })

    it('does not send skipped deliveries when the destination is enabled again (a replay does)', async () => {
      const d = await hook('/off-then-on', ['s3'])
      await outflow.disableDestination(T, d.id)
      const { id: skipped } = await outflow.publish({ tenant_id: T, topic: 's3', data: {} })
      await outflow.enableDestination(T, d.id)
      const { id: after } = await outflow.publish({ tenant_id: T, topic: 's3', data: {} })
      await waitFor(() => receiver.on('/off-then-on').length === 1, 10_000, 'the event published after enabling')
      expect(ids('/off-then-on')).toEqual([after])
      expect((await pairsOf(d.id)).find((e) => e.id === skipped)?.skipped_at).toEqual(expect.any(String))
    })

    it('shows deliveries an auto-disable cut off as skipped, and events published after it too', async () => {
      const d = await outflow.createDestination(T, { type: 'webhook', topics: ['auto'], config: { url: `${receiver.url}/fail-auto` }, delivery: { schedule: [400] } })
      const [first, second] = await outflow.publishMany([{ tenant_id: T, topic: 'auto', data: {} }, { tenant_id: T, topic: 'auto', data: {} }])
      // Two failures in a row disable it; their retries, due 400 ms later, are parked instead of attempted.
      await waitFor(async () => (await outflow.getDestination(T, d.id)).disabled_at !== null, 10_000, 'the auto-disable')
      await waitFor(async () => (await pairsOf(d.id)).filter((e) => e.skipped_at).length === 2, 10_000, 'the parked retries')
      const third = await outflow.publish({ tenant_id: T, topic: 'auto', data: {} })
      const pairs = await pairsOf(d.id)
      expect(pairs.map((e) => e.id).sort()).toEqual([first!.id, second!.id, third.id].sort())
      expect(pairs.every((e) => e.status === 'failed' && typeof e.skipped_at === 'string')).toBe(true)
      expect(receiver.on('/fail-auto')).toHaveLength(2)
    })

    it('is pruned by retention like any finished delivery', async () => {
      const d = await hook('/off-old', ['old'])
      await outflow.disableDestination(T, d.id)
      const { id } = await outflow.publish({ tenant_id: T, topic: 'old', time: new Date(Date.now() - 40 * day).toISOString(), data: {} })
      expect((await pairsOf(d.id)).map((e) => e.id)).toEqual([id])
      const pruned = await outflow.prune()
      expect(pruned.deliveries).toBeGreaterThanOrEqual(1)
      expect(await pairsOf(d.id)).toEqual([])
    })
  })
}
