import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { apiKey, engineKinds, rejection, snapshot } from '../support/engines.js'

// What the route-table fuzz suite found (test/http/fuzz): input every storage must accept or refuse
// alike, and keep exactly as sent when it accepts it. Each case ran into a 500 on Postgres, a value
// stored differently than sent, or a crash in the HTTP layer.

const textRule = 'must not contain NUL characters (U+0000) or unpaired UTF-16 surrogates'
const dateRule = 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z'
const deadUrl = 'http://127.0.0.1:9/hook'
/** Strings Postgres refuses in text and jsonb (NUL) or cannot encode (lone surrogates). */
const unstorable: [name: string, text: string][] = [
  ['a NUL character', 'a\u0000b'],
  ['a lone high surrogate', 'x\ud800'],
  ['a lone low surrogate', '\udc00y'],
]

/** JSON text parsed: an object with an own `__proto__` key, as a request body has it. */
const parsed = (text: string) => JSON.parse(text) as Record<string, unknown>

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`storable input: ${kind.name}`, () => {
    let outflow: Outflow
    beforeAll(async () => {
      outflow = await kind.create({ delivery: { pollIntervalMs: 20 } })
      await outflow.upsertTenant('acme', {})
      await outflow.createDestination('acme', { id: 'hook', type: 'webhook', topics: '*', config: { url: deadUrl } })
      await outflow.createDestination('acme', { id: 'relay', type: 'relay', topics: ['never.*'], credentials: { token: 'relay-token' } })
    })
    afterAll(() => kind.cleanup())

    /** One API call through the engine's HTTP handler, as the admin. */
    async function api(method: string, path: string, body?: string): Promise<{ status: number; body: any }> {
      const headers: Record<string, string> = { authorization: `Bearer ${apiKey}` }
      if (body !== undefined) headers['content-type'] = 'application/json'
      const res = await outflow.fetch(new Request(`http://outflow.test/api/v1${path}`, { method, headers, body }))
      return { status: res.status, body: JSON.parse(await res.text()) }
    }

    /** An event once its first (failed, final) attempt is logged: the event views show it from then on. */
    async function attempted(id: string) {
      return vi.waitFor(() => outflow.getEvent('acme', id, { destination_id: 'hook' }), { timeout: 15_000, interval: 25 })
    }

    describe('text with NUL characters or unpaired surrogates is refused alike on every storage', () => {
      const writes: [name: string, field: string, call: (o: Outflow, s: string) => Promise<unknown>][] = [
        ['tenant metadata value', 'metadata.note', (o, s) => o.upsertTenant('acme', { metadata: { note: s } })],
        ['tenant metadata key', 'metadata.k<text>', (o, s) => o.upsertTenant('acme', { metadata: { [`k${s}`]: 1 } })],
        ['nested tenant metadata', 'metadata.a.0.b', (o, s) => o.upsertTenant('acme', { metadata: { a: [{ b: s }] } })],
        ['destination topic', 'topics.0', (o, s) => o.createDestination('acme', { type: 'webhook', topics: [`a${s}`], config: { url: deadUrl } })],
        ['destination metadata', 'metadata.m', (o, s) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url: deadUrl }, metadata: { m: s } })],
        ['destination filter', 'filter.data.x', (o, s) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url: deadUrl }, filter: { data: { x: s } } })],
        ['destination config', 'config.note', (o, s) => o.createDestination('acme', { type: 'relay', topics: '*', config: { note: s }, credentials: { token: 't' } })],
        ['destination delivery_metadata', 'delivery_metadata.d', (o, s) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url: deadUrl }, delivery_metadata: { d: s } })],
        ['PATCH metadata', 'metadata.m', (o, s) => o.updateDestination('acme', 'relay', { metadata: { m: s } })],
        ['PATCH delivery_metadata', 'delivery_metadata.d', (o, s) => o.updateDestination('acme', 'relay', { delivery_metadata: { d: s } })],
        ['PATCH credentials', 'credentials.token', (o, s) => o.updateDestination('acme', 'relay', { credentials: { token: s } })],
        ['published data', 'data.x', (o, s) => o.publish({ tenant_id: 'acme', topic: 'order.created', data: { x: s } })],
        ['published metadata', 'metadata.m', (o, s) => o.publish({ tenant_id: 'acme', topic: 'order.created', data: {}, metadata: { m: s } })],
        ['published topic', 'topic', (o, s) => o.publish({ tenant_id: 'acme', topic: `order${s}`, data: {} })],
      ]
      for (const [what, text] of unstorable)
        it.each(writes)(`%s with ${what} is a 422 naming %s, writing nothing`, async (_, field, call) => {
          const before = await snapshot(outflow)
          const err = await rejection(call(outflow, text))
          expect(err).toMatchObject({ status: 422, message: 'validation error' })
          expect(err.data).toEqual({ [field.replace('<text>', text)]: textRule })
          expect(await snapshot(outflow)).toBe(before)
        })

      const reads: [name: string, param: string, call: (o: Outflow) => Promise<unknown>][] = [
        ['admin event listing by topic', 'topic', (o) => o.listAdminEvents({ topic: 'a\u0000' })],
        ['admin event listing by tenant', 'tenant_id', (o) => o.listAdminEvents({ tenant_id: ['acme', '\u0000'] })],
        ['event listing by destination', 'destination_id', (o) => o.listEvents('acme', { destination_id: '\u0000' })],
        ['destination listing by topic', 'topics', (o) => o.listDestinations('acme', { topics: 'a\u0000' })],
        ['event metrics by topic', 'filters[topic][0]', (o) => o.eventMetrics({ time: { start: '2024-01-01T00:00:00Z', end: '2024-01-02T00:00:00Z' }, measures: ['count'], filters: { topic: ['\u0000'] } })],
      ]
      it.each(reads)('%s with a NUL character is a 400 naming %s (Postgres refuses it as a parameter too)', async (_, param, call) => {
        const err = await rejection(call(outflow))
        expect(err.status).toBe(400)
        expect(err.data).toHaveProperty([param])
      })

      it('the same over HTTP: a JSON \\u0000 escape in a body is a 422, a %00 in a query a 400', async () => {
        expect(await api('PUT', '/tenants/acme', '{"metadata":{"k":"\\u0000"}}')).toMatchObject({ status: 422, body: { data: { 'metadata.k': textRule } } })
        expect(await api('POST', '/publish', '{"tenant_id":"acme","topic":"t","data":{"k":"\\ud800"}}')).toMatchObject({ status: 422, body: { data: { 'data.k': textRule } } })
        expect(await api('GET', '/events?topic=%00')).toMatchObject({ status: 400, body: { data: { topic: textRule } } })
      })
    })

    describe('date-times are years 0001 to 9999 and read back as written', () => {
      it.each([
        ['year 0', '0000-12-31T23:59:59Z'],
        ['year 0001 written with an offset that makes it year 0', '0001-01-01T00:30:00+01:00'],
        ['year 9999 written with an offset that makes it year 10000', '9999-12-31T23:30:00-01:00'],
      ])('a published time in %s is a 422 naming time', async (_, time) => {
        const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: {}, time }))
        expect(err).toMatchObject({ status: 422, data: { time: dateRule } })
      })

      it('a Date before year 1 from a typed caller is a 422 too', async () => {
        const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: {}, time: new Date(Date.parse('0001-01-01T00:00:00Z') - 1) }))
        expect(err).toMatchObject({ status: 422, data: { time: dateRule } })
      })

      it('a time[gte] or time[lte] query outside the range is a 400 naming it', async () => {
        expect(await rejection(outflow.listAdminEvents({ 'time[gte]': '0000-01-01T00:00:00Z' }))).toMatchObject({ status: 400, data: { 'time[gte]': dateRule } })
        expect(await rejection(outflow.listEvents('acme', { 'time[lte]': '+010000-01-01T00:00:00Z' }))).toMatchObject({ status: 400 })
      })

      it.each(['0001-01-01T00:00:00.000Z', '0050-06-15T12:00:00.000Z', '0099-12-31T23:59:59.999Z', '9999-12-31T23:59:59.999Z'])(
        'an event at %s reads back at that instant, not in the 1900s',
        async (time) => {
          const id = `at-${time.slice(0, 4)}`
          await outflow.publish({ id, tenant_id: 'acme', topic: 'order.created', data: {}, time, eligible_for_retry: false })
          expect((await attempted(id)).time).toBe(time)
          const listed = await outflow.listEvents('acme', { 'time[gte]': time, 'time[lte]': time })
          expect(listed.models.map((e) => [e.id, e.time])).toContainEqual([id, time])
        },
      )
    })

    describe('cursors the server did not write are a 400 "malformed cursor"', () => {
      const b64 = (json: unknown) => Buffer.from(JSON.stringify(json)).toString('base64url')
      const at = Date.parse('2024-01-01T00:00:00Z')
      const forged: [name: string, cursor: string][] = [
        ['a sort key past year 9999', b64({ l: 'events', d: 'desc', p: [1e20, 'e1', 'hook'] })],
        ['a fractional sort key', b64({ l: 'events', d: 'desc', p: [at + 0.5, 'e1', 'hook'] })],
        ['a NUL in an id', b64({ l: 'events', d: 'desc', p: [at, '\u0000', 'hook'] })],
        ['too few ids', b64({ l: 'events', d: 'desc', p: [at, 'e1'] })],
        ['too many ids', b64({ l: 'events', d: 'desc', p: [at, 'e1', 'hook', 'x'] })],
        ['an id that is not a string', b64({ l: 'events', d: 'desc', p: [at, 5, 'hook'] })],
        ['an unknown dir', b64({ l: 'events', d: 'sideways', p: [at, 'e1', 'hook'] })],
        ['JSON null', b64(null)],
        ['bytes that are not JSON', 'not-a-cursor!'],
      ]
      it.each(forged)('an events cursor with %s', async (_, cursor) => {
        expect(await rejection(outflow.listEvents('acme', { next: cursor }))).toMatchObject({ status: 400, data: { next: 'malformed cursor' } })
        expect(await rejection(outflow.listEvents('acme', { prev: cursor }))).toMatchObject({ status: 400, data: { prev: 'malformed cursor' } })
      })

      it('a tenants cursor with an events position, or a sort key before year 1', async () => {
        for (const cursor of [b64({ l: 'tenants', d: 'desc', p: [at, 'acme', 'x'] }), b64({ l: 'tenants', d: 'desc', p: [-1e16, 'acme'] })])
          expect(await rejection(outflow.listTenants({ next: cursor }))).toMatchObject({ status: 400, data: { next: 'malformed cursor' } })
      })
    })

    describe('query parameter names that are Object.prototype members are parameters like any other', () => {
      it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty'])('?%s=1 is a 400 naming it, on every route kind', async (name) => {
        for (const path of [`/tenants?${name}=1`, `/tenants/acme?${name}=1`, `/metrics/events?${name}[x]=1&time[start]=2024-01-01T00:00:00Z&time[end]=2024-01-02T00:00:00Z&measures=count`]) {
          const res = await api('GET', path)
          expect(res.status, path).toBe(400)
          expect(Object.keys(res.body.data), path).toEqual([name])
        }
        expect(({} as Record<string, unknown>).x).toBeUndefined()
      })

      it('a repeated __proto__ does not replace the prototype of the parsed query', async () => {
        const res = await api('GET', '/tenants?__proto__=a&__proto__=b&limit=1')
        expect(res.status).toBe(400)
        expect(Object.entries(res.body.data)).toEqual([['__proto__', 'unexpected field']])
      })
    })

    describe('every key of a JSON object is kept', () => {
      const keys = '{"constructor":"c","__proto__":{"p":1},"prototype":2,"toString":"t","":"empty"}'
      it('tenant metadata', async () => {
        const { tenant } = await outflow.upsertTenant('keys', { metadata: parsed(keys) })
        expect(Object.keys(tenant.metadata).sort()).toEqual(['', '__proto__', 'constructor', 'prototype', 'toString'])
        expect(tenant.metadata).toEqual(parsed(keys))
        expect((await outflow.getTenant('keys')).metadata).toEqual(parsed(keys))
      })

      it('destination metadata, filter and delivery_metadata, and a PATCH that merges into them', async () => {
        const created = await outflow.createDestination('acme', {
          type: 'webhook',
          topics: ['never.*'],
          config: { url: deadUrl },
          metadata: parsed(keys),
          filter: parsed('{"data":{"constructor":"c"}}'),
          delivery_metadata: parsed('{"constructor":"c","__proto__":"p"}'),
        })
        const stored = await outflow.getDestination('acme', created.id)
        expect(stored.metadata).toEqual(parsed(keys))
        expect(stored.filter).toEqual(parsed('{"data":{"constructor":"c"}}'))
        expect(stored.delivery_metadata).toEqual(parsed('{"constructor":"c","__proto__":"p"}'))
        const patched = await outflow.updateDestination('acme', created.id, { metadata: parsed('{"__proto__":{"q":2},"constructor":null}') })
        expect(patched.metadata).toEqual(parsed('{"__proto__":{"p":1,"q":2},"prototype":2,"toString":"t","":"empty"}'))
        expect((await outflow.getDestination('acme', created.id)).metadata).toEqual(patched.metadata)
      })

      it('relay config, published data and metadata', async () => {
        const relay = await outflow.createDestination('acme', { type: 'relay', topics: ['never.*'], config: parsed('{"constructor":"c"}'), credentials: { token: 't' } })
        expect(relay.config).toEqual(parsed('{"constructor":"c"}'))
        await outflow.publish({ id: 'keys-1', tenant_id: 'acme', topic: 'order.created', data: parsed(keys), metadata: parsed('{"constructor":"c"}'), eligible_for_retry: false })
        const event = await attempted('keys-1')
        expect(event.data).toEqual(parsed(keys))
        expect(event.metadata).toEqual(parsed('{"constructor":"c"}'))
      })
    })

    describe('an empty field or parameter name is named "" in the error', () => {
      it('an empty body field, metadata key with bad text, and query parameter', async () => {
        expect((await rejection(outflow.upsertTenant('acme', { '': 1 }))).data).toEqual({ '""': 'unexpected field' })
        expect((await rejection(outflow.upsertTenant('acme', { metadata: { '': '\u0000' } }))).data).toEqual({ 'metadata.""': textRule })
        expect(await api('GET', '/tenants?=1')).toMatchObject({ status: 400, body: { data: { '""': 'unexpected field' } } })
      })
    })

    describe('fields the spec makes objects take plain objects only', () => {
      const cases: [name: string, field: string, call: (o: Outflow) => Promise<unknown>][] = [
        ['relay config as an array', 'config', (o) => o.createDestination('acme', { type: 'relay', topics: '*', config: ['a'], credentials: { token: 't' } })],
        ['webhook custom_headers as an array', 'config.custom_headers', (o) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url: deadUrl, custom_headers: ['x'] } })],
        ['delivery_metadata as an array', 'delivery_metadata', (o) => o.createDestination('acme', { type: 'webhook', topics: '*', config: { url: deadUrl }, delivery_metadata: ['a'] })],
        ['PATCH delivery_metadata as an array', 'delivery_metadata', (o) => o.updateDestination('acme', 'relay', { delivery_metadata: ['a'] })],
        ['published metadata as an array', 'metadata', (o) => o.publish({ tenant_id: 'acme', topic: 'order.created', data: {}, metadata: ['a'] })],
        ['published data as an array', 'data', (o) => o.publish({ tenant_id: 'acme', topic: 'order.created', data: [1] })],
        ['tenant metadata as an array', 'metadata', (o) => o.upsertTenant('acme', { metadata: [1] })],
      ]
      it.each(cases)('%s is a 422 naming %s, writing nothing', async (_, field, call) => {
        const before = await snapshot(outflow)
        const err = await rejection(call(outflow))
        expect(err.status).toBe(422)
        expect(Object.keys(err.data!)).toEqual([field])
        expect(await snapshot(outflow)).toBe(before)
      })
    })
  })
}
