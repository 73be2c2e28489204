import { Ajv2020 } from 'ajv/dist/2020.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { catalog, order, orderSchema } from '../support/catalog.js'
import { encryptionKey } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import type { StorageKind } from '../support/storages.js'
import type { Mount, MountedApi } from './mounts.js'
import { adminKey, jwtSecret } from './support.js'

/**
 * The event catalog over HTTP, through one mount on one storage: `GET /topics`, `GET /topics/{name}`,
 * validation at `POST /publish`, `schema_valid` on events, deprecated topics on destinations and the
 * OpenAPI `webhooks` section. Its own engine, created with the catalog.
 *
 * @example
 * describeTopicsHttp(expressMount, storageKind('postgres'))
 */
export function describeTopicsHttp(mount: Mount, storage: StorageKind): void {
  describe.runIf(storage.available)(`topic catalog over HTTP via ${mount.name} on ${storage.name}`, () => {
    let outflow: Outflow
    let mounted: MountedApi
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let tenantToken: string
    const call = async (method: string, path: string, { json, token = adminKey }: { json?: unknown; token?: string | null } = {}) => {
      const headers: Record<string, string> = json === undefined ? {} : { 'content-type': 'application/json' }
      if (token) headers.authorization = `Bearer ${token}`
      const response = await fetch(`${mounted.baseUrl}${path}`, { method, headers, body: json === undefined ? undefined : JSON.stringify(json) })
      expect(response.headers.get('content-type')).toMatch(/^application\/json/)
      return { status: response.status, body: (await response.json()) as any }
    }

    beforeAll(async () => {
      const store = await storage.open()
      receiver = await startReceiver()
      outflow = await createOutflow({
        storage: store,
        apiKey: adminKey,
        jwtSecret,
        allowPrivateNetworks: true,
        topics: catalog,
        ...(store.dialect === 'postgres' ? { encryptionKey } : {}),
      })
      mounted = await mount.start(outflow)
      expect((await call('PUT', '/tenants/acme')).status).toBe(201)
      expect((await call('POST', '/tenants/acme/destinations', { json: { id: 'all', type: 'webhook', topics: '*', config: { url: `${receiver.url}/all` } } })).status).toBe(201)
      tenantToken = (await call('GET', '/tenants/acme/token')).body.token
    })
    afterAll(async () => {
      await mounted?.close()
      await outflow?.close()
      await receiver?.close()
      await storage.cleanup()
    })

    it('GET /topics lists the catalog in Outpost v2 topic shape, for the admin key and a tenant token', async () => {
      for (const token of [adminKey, tenantToken]) {
        const res = await call('GET', '/topics', { token })
        expect(res.status).toBe(200)
        expect(res.body.map((t: { name: string }) => t.name)).toEqual(Object.keys(catalog))
        expect(res.body[0]).toEqual({
          name: 'order.created',
          description: 'An order was placed',
          payload_schema: orderSchema,
          validation: 'enforce',
          deprecated: false,
          replaced_by: null,
          examples: [order('o-1')],
        })
      }
      expect((await call('GET', '/topics', { token: null })).status).toBe(401)
    })

    it('GET /topics/{name} answers one topic, 404 for a name outside the catalog', async () => {
      const res = await call('GET', '/topics/order.placed', { token: tenantToken })
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ name: 'order.placed', description: 'Old name of order.created', payload_schema: null, validation: 'off', deprecated: true, replaced_by: 'order.created' })
      const missing = await call('GET', '/topics/order.nope')
      expect(missing.status).toBe(404)
      expect(missing.body.message).toBe('topic not found: order.nope')
    })

    it('POST /publish: enforce answers 422 naming each failing path, and stores nothing', async () => {
      const body = { id: 'http-bad', tenant_id: 'acme', topic: 'order.created', data: { ...order('x'), total: 'ten', items: [{ quantity: 0 }] } }
      const res = await call('POST', '/publish', { json: body })
      expect(res.status).toBe(422)
      expect(res.body).toEqual({
        status: 422,
        message: 'validation error',
        data: { 'data.total': 'must be number', 'data.items.0.sku': 'required', 'data.items.0.quantity': 'must be >= 1' },
      })
      expect((await call('GET', '/tenants/acme/events/http-bad')).status).toBe(404)
      expect((await call('POST', '/publish', { json: { ...body, data: order('x') } })).body).toEqual({ id: 'http-bad', duplicate: false, destination_ids: ['all'] })
    })

    it('POST /publish: warn stores and delivers, the event showing schema_valid: false', async () => {
      const res = await call('POST', '/publish', { json: { id: 'http-warn', tenant_id: 'acme', topic: 'order.updated', data: { id: 'x' } } })
      expect(res.status).toBe(202)
      const event = await waitFor(async () => {
        const got = await call('GET', '/tenants/acme/events/http-warn', { token: tenantToken })
        return got.status === 200 && got.body
      })
      expect(event).toMatchObject({ id: 'http-warn', topic: 'order.updated', schema_valid: false, status: 'success' })
      expect(receiver.received.some((r) => r.headers['webhook-id'] === 'http-warn')).toBe(true)
    })

    it('creating and updating a destination on a deprecated topic works, its answer naming the replacement', async () => {
      const created = await call('POST', '/tenants/acme/destinations', { token: tenantToken, json: { id: 'legacy', type: 'webhook', topics: ['order.placed'], config: { url: `${receiver.url}/legacy` } } })
      expect(created.status).toBe(201)
      expect(created.body.deprecated_topics).toEqual([{ name: 'order.placed', replaced_by: 'order.created' }])
      const updated = await call('PATCH', '/tenants/acme/destinations/legacy', { token: tenantToken, json: { topics: ['order.created'] } })
      expect(updated.status).toBe(200)
      expect(updated.body).not.toHaveProperty('deprecated_topics')
    })

    it('GET /openapi.json has a webhooks entry per topic, its body the topic schema, the Standard Webhooks headers and the optional compatible ones', async () => {
      const doc = (await call('GET', '/openapi.json', { token: null })).body
      expect(Object.keys(doc.webhooks)).toEqual(Object.keys(catalog))
      const created = doc.webhooks['order.created'].post
      expect(created.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/OrderCreatedData' })
      expect(doc.components.schemas.OrderCreatedData).toEqual(orderSchema)
      expect(created.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['webhook-id', 'webhook-timestamp', 'webhook-signature']))
      const optional = created.parameters.filter((p: { required: boolean }) => !p.required).map((p: { name: string }) => p.name)
      expect(optional).toEqual(['svix-id', 'svix-timestamp', 'svix-signature', 'x-hub-signature-256', 'stripe-signature', 'x-outpost-signature'])
      expect(doc.webhooks['order.placed'].post).toMatchObject({ deprecated: true, 'x-outflow-replaced-by': 'order.created' })
      expect(doc.paths['/topics'].get.operationId).toBe('listTopics')
    })

    it('answers what the document says: /topics, /topics/{name}, a destination with deprecated_topics and an event with schema_valid validate against it', async () => {
      const doc = (await call('GET', '/openapi.json', { token: null })).body
      const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
      ajv.addSchema({ $id: 'outflow.json', paths: doc.paths, components: doc.components })
      const check = (pointer: string, value: unknown) => {
        const validate = ajv.getSchema(`outflow.json#${pointer}`)!
        expect(validate(value), `${pointer}: ${JSON.stringify(validate.errors)}`).toBe(true)
      }
      const json = (path: string) => `/paths/${path.replace(/~/g, '~0').replace(/\//g, '~1')}/get/responses/200/content/application~1json/schema`
      check(json('/topics'), (await call('GET', '/topics')).body)
      check(json('/topics/{name}'), (await call('GET', '/topics/order.created')).body)
      const created = await call('POST', '/tenants/acme/destinations', { json: { type: 'webhook', topics: ['order.placed'], config: { url: `${receiver.url}/doc` } } })
      expect(created.body.deprecated_topics).toHaveLength(1)
      check('/components/schemas/Destination', created.body)
      check('/components/schemas/Event', (await call('GET', '/tenants/acme/events/http-warn')).body)
      // And a wrong shape does not pass, so the checks above test something.
      expect(ajv.getSchema(`outflow.json#${json('/topics/{name}')}`)!({ name: 'x' })).toBe(false)
    })
  })
}
