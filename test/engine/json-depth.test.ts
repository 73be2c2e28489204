import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds, rejection, snapshot } from '../support/engines.js'

/** `levels` objects nested in one another: `nested(1)` is `{}`. */
function nested(levels: number): Record<string, unknown> {
  let value: Record<string, unknown> = {}
  for (let i = 1; i < levels; i++) value = { a: value }
  return value
}

const tooDeep = 'nested deeper than 32 levels'
const url = 'https://example.com/hook'

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`engine JSON nesting limit: ${kind.name}`, () => {
    let outflow: Outflow
    let relayId: string
    beforeAll(async () => {
      outflow = await kind.create()
      await outflow.upsertTenant('acme', {})
      relayId = (await outflow.createDestination('acme', { type: 'relay', topics: '*', credentials: { token: 'relay-token' } })).id
    })
    afterAll(() => kind.cleanup())

    const cases: [name: string, field: string, call: (o: Outflow, value: unknown) => Promise<unknown>][] = [
      ['upsertTenant metadata', 'metadata', (o, v) => o.upsertTenant('acme', { metadata: { v } })],
      ['createDestination metadata', 'metadata', (o, v) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url }, metadata: { v } })],
      ['createDestination filter', 'filter', (o, v) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url }, filter: { data: v } })],
      ['createDestination config', 'config', (o, v) => o.createDestination('acme', { type: 'relay', topics: '*', config: { v }, credentials: { token: 'relay-token' } })],
      ['updateDestination config', 'config', (o, v) => o.updateDestination('acme', relayId, { config: { v } })],
      ['updateDestination filter', 'filter', (o, v) => o.updateDestination('acme', relayId, { filter: { data: v } })],
      ['updateDestination metadata', 'metadata', (o, v) => o.updateDestination('acme', relayId, { metadata: { v } })],
      ['publish data', 'data', (o, v) => o.publish({ tenant_id: 'acme', topic: 'order.created', data: { v } })],
      ['publishMany data', '1.data', (o, v) => o.publishMany([{ tenant_id: 'acme', topic: 'a', data: {} }, { tenant_id: 'acme', topic: 'b', data: { v } }])],
    ]

    it.each(cases)('%s nested 5,000 levels deep is a 422 naming %s, writing nothing', async (_, field, call) => {
      const before = await snapshot(outflow)
      const err = await rejection(call(outflow, nested(5000)))
      expect(err).toMatchObject({ status: 422, message: 'validation error' })
      expect(err.data).toEqual({ [field]: tooDeep })
      expect(await snapshot(outflow)).toBe(before)
    })

    it('createDestination credentials nested 5,000 levels deep is a 422 naming credentials', async () => {
      const err = await rejection(outflow.createDestination('acme', { type: 'relay', topics: '*', credentials: { token: 'relay-token', v: nested(5000) } }))
      expect(err).toMatchObject({ status: 422, data: { credentials: tooDeep } })
    })

    it.each(cases)('%s: 32 levels are stored, 33 are refused', async (_, field, call) => {
      // The value sits one level inside the field (`{ v }` or `{ data: v }`).
      await call(outflow, nested(31))
      expect((await rejection(call(outflow, nested(32)))).data).toEqual({ [field]: tooDeep })
    })

    it('refuses a cyclic value the same way instead of overflowing the stack', async () => {
      const cycle: Record<string, unknown> = {}
      cycle.self = cycle
      const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: cycle }))
      expect(err).toMatchObject({ status: 422, data: { data: tooDeep } })
    })

    it('stores nothing for a refused publish: the same id is new afterwards', async () => {
      await rejection(outflow.publish({ id: 'deep-1', tenant_id: 'acme', topic: 'order.created', data: nested(5000) }))
      expect(await outflow.publish({ id: 'deep-1', tenant_id: 'acme', topic: 'order.created', data: {} })).toMatchObject({ duplicate: false })
    })
  })
}
