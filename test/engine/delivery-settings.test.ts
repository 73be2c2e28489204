import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds, rejection, snapshot } from '../support/engines.js'

// A destination's own `delivery` settings (retries, timeout): validated, stored, shown, merge-patched.
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`destination delivery settings: ${kind.name}`, () => {
    let outflow: Outflow
    const T = 'policy'
    const hook = { type: 'webhook', topics: ['*'], config: { url: 'https://example.com/hook' } }
    beforeAll(async () => {
      outflow = await kind.create({ delivery: { worker: false, leaseMs: 30_000 } })
      await outflow.upsertTenant(T, {})
    })
    afterAll(() => kind.cleanup())

    it('stores the settings and shows them in the destination JSON (create, get, list)', async () => {
      const delivery = { max_attempts: 3, schedule: [1000, 5000], timeout_ms: 2500 }
      const created = await outflow.createDestination(T, { ...hook, delivery })
      expect(created.delivery).toEqual(delivery)
      expect((await outflow.getDestination(T, created.id)).delivery).toEqual(delivery)
      expect((await outflow.listDestinations(T)).find((d) => d.id === created.id)?.delivery).toEqual(delivery)
    })

    it('leaves delivery out of the JSON of a destination that follows the engine (none, null or {})', async () => {
      for (const extra of [{}, { delivery: null }, { delivery: {} }]) {
        const d = await outflow.createDestination(T, { ...hook, ...extra })
        expect(d).not.toHaveProperty('delivery')
      }
    })

    it('accepts an exponential schedule with base, factor and jitter', async () => {
      const d = await outflow.createDestination(T, { ...hook, delivery: { schedule: { base: 500, factor: 3, jitter: 0 }, max_attempts: 5 } })
      expect(d.delivery).toEqual({ schedule: { base: 500, factor: 3, jitter: 0 }, max_attempts: 5 })
    })

    const invalid: [string, unknown, string][] = [
      ['max_attempts below 1', { max_attempts: 0 }, 'delivery.max_attempts'],
      ['max_attempts above 100', { max_attempts: 101 }, 'delivery.max_attempts'],
      ['max_attempts not an integer', { max_attempts: 2.5 }, 'delivery.max_attempts'],
      ['a negative delay', { schedule: [1000, -1] }, 'delivery.schedule.1'],
      ['a delay over 7 days', { schedule: [8 * 24 * 3_600_000] }, 'delivery.schedule.0'],
      ['an empty schedule', { schedule: [] }, 'delivery.schedule'],
      ['a schedule of 101 delays', { schedule: Array(101).fill(1000) }, 'delivery.schedule'],
      ['a schedule that is a string', { schedule: 'fast' }, 'delivery.schedule'],
      ['a base of 0', { schedule: { base: 0 } }, 'delivery.schedule.base'],
      ['a factor above 10', { schedule: { base: 100, factor: 11 } }, 'delivery.schedule.factor'],
      ['a jitter above 1', { schedule: { base: 100, jitter: 2 } }, 'delivery.schedule.jitter'],
      ['an unknown schedule field', { schedule: { base: 100, max: 3 } }, 'delivery.schedule'],
      ['timeout_ms below 100', { timeout_ms: 99 }, 'delivery.timeout_ms'],
      ['timeout_ms not below the engine lease', { timeout_ms: 30_000 }, 'delivery.timeout_ms'],
      ['an unknown setting', { retries: 3 }, 'delivery.retries'],
      ['a rate limit without per_second', { rate_limit: { burst: 5 } }, 'delivery.rate_limit.per_second'],
      ['a rate limit of 0 per second', { rate_limit: { per_second: 0 } }, 'delivery.rate_limit.per_second'],
      ['a rate limit above 10,000 per second', { rate_limit: { per_second: 10_001 } }, 'delivery.rate_limit.per_second'],
      ['a burst of 0', { rate_limit: { per_second: 5, burst: 0 } }, 'delivery.rate_limit.burst'],
      ['a fractional burst', { rate_limit: { per_second: 5, burst: 1.5 } }, 'delivery.rate_limit.burst'],
      ['an ordering other than fifo', { ordering: 'lifo' }, 'delivery.ordering'],
      ['an ordering_key outside the event', { ordering: 'fifo', ordering_key: 'payload.id' }, 'delivery.ordering_key'],
      ['an ordering_key with an empty segment', { ordering: 'fifo', ordering_key: 'data..id' }, 'delivery.ordering_key'],
      ['an ordering_key without ordering', { ordering_key: 'data.id' }, 'delivery.ordering_key'],
      ['on_exhausted without ordering', { on_exhausted: 'block' }, 'delivery.on_exhausted'],
      ['an unknown on_exhausted', { ordering: 'fifo', on_exhausted: 'drop' }, 'delivery.on_exhausted'],
      ['an array', [], 'delivery'],
      ['a string', 'fast', 'delivery'],
    ]
    for (const [what, delivery, field] of invalid) {
      it(`rejects ${what} with a 422 naming ${field}, on create and on update, changing nothing`, async () => {
        const existing = await outflow.createDestination(T, hook)
        const before = await snapshot(outflow)
        const onCreate = await rejection(outflow.createDestination(T, { ...hook, delivery }))
        expect(onCreate.status).toBe(422)
        expect(onCreate.data).toHaveProperty([field])
        const onUpdate = await rejection(outflow.updateDestination(T, existing.id, { delivery }))
        expect(onUpdate.status).toBe(422)
        expect(onUpdate.data).toHaveProperty([field])
        expect(await snapshot(outflow)).toBe(before)
      })
    }

    it('merge-patches delivery on update: a setting replaced, one removed with null, the rest kept', async () => {
      const d = await outflow.createDestination(T, { ...hook, delivery: { max_attempts: 4, schedule: [100], timeout_ms: 1000 } })
      const patched = await outflow.updateDestination(T, d.id, { delivery: { max_attempts: 2, timeout_ms: null } })
      expect(patched.delivery).toEqual({ max_attempts: 2, schedule: [100] })
      const replaced = await outflow.updateDestination(T, d.id, { delivery: { schedule: { base: 250 } } })
      expect(replaced.delivery).toEqual({ max_attempts: 2, schedule: { base: 250 } })
      expect((await outflow.getDestination(T, d.id)).delivery).toEqual({ max_attempts: 2, schedule: { base: 250 } })
    })

    it('clears every setting with delivery: null on update', async () => {
      const d = await outflow.createDestination(T, { ...hook, delivery: { max_attempts: 4 } })
      const cleared = await outflow.updateDestination(T, d.id, { delivery: null })
      expect(cleared).not.toHaveProperty('delivery')
      expect(await outflow.getDestination(T, d.id)).not.toHaveProperty('delivery')
    })

    it('stores a rate limit, and merge-patches it like the other settings', async () => {
      const d = await outflow.createDestination(T, { ...hook, delivery: { rate_limit: { per_second: 50 } } })
      expect(d.delivery).toEqual({ rate_limit: { per_second: 50 } })
      expect((await outflow.updateDestination(T, d.id, { delivery: { rate_limit: { burst: 10 } } })).delivery).toEqual({ rate_limit: { per_second: 50, burst: 10 } })
      expect((await outflow.updateDestination(T, d.id, { delivery: { rate_limit: null, max_attempts: 2 } })).delivery).toEqual({ max_attempts: 2 })
    })

    it('stores FIFO ordering with its key and exhaustion rule', async () => {
      const delivery = { ordering: 'fifo', ordering_key: 'metadata.account', on_exhausted: 'block' }
      const d = await outflow.createDestination(T, { ...hook, delivery })
      expect(d.delivery).toEqual(delivery)
      expect((await outflow.updateDestination(T, d.id, { delivery: { on_exhausted: null } })).delivery).toEqual({ ordering: 'fifo', ordering_key: 'metadata.account' })
    })

    it('keeps delivery when an update does not mention it', async () => {
      const d = await outflow.createDestination(T, { ...hook, delivery: { max_attempts: 4 } })
      const updated = await outflow.updateDestination(T, d.id, { metadata: { team: 'a' } })
      expect(updated.delivery).toEqual({ max_attempts: 4 })
    })
  })
}
