import { describe, expect, it } from 'vitest'
import type { SuiteContext } from './support.js'

const sixTypes = ['webhook', 'cloudx_sqs', 'amqp_broker', 'relay', 'cloudx_kinesis', 'cloudx_s3']

/** Destinations (CRUD, enable/disable, list query) and the destination type schemas. */
export function describeDestinations(ctx: SuiteContext): void {
  const webhook = (extra: Record<string, unknown> = {}) => ({ type: 'webhook', topics: ['order.created'], config: { url: `${ctx.receiverUrl}/ok` }, ...extra })

  describe('destinations', () => {
    it('POST creates a destination: 201 with the stored shape', async () => {
      const res = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook({ metadata: { team: 'a' } }) })
      expect(res.status).toBe(201)
      expect(res.body).toMatchObject({ type: 'webhook', topics: ['order.created'], disabled_at: null, config: { url: `${ctx.receiverUrl}/ok` }, metadata: { team: 'a' } })
      expect(res.body.id).toMatch(/^des_/)
      expect(res.body.credentials.secret).toMatch(/^whsec_/)
      await ctx.api('DELETE', `/tenants/acme/destinations/${res.body.id}`)
    })

    it('POST with an existing destination id is 409', async () => {
      const res = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook({ id: ctx.destinations.acmeOk }) })
      expect(res.status).toBe(409)
      expect(res.body.status).toBe(409)
    })

    it('POST with an invalid body is 422 naming each field', async () => {
      const missing = await ctx.api('POST', '/tenants/acme/destinations', { json: { type: 'webhook', topics: [], config: {} } })
      expect(missing.status).toBe(422)
      expect(missing.body).toMatchObject({ status: 422, message: expect.any(String) })
      expect(Object.keys(missing.body.data)).toEqual(expect.arrayContaining(['topics']))
      const badUrl = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook({ config: { url: 'not a url' } }) })
      expect(badUrl.status).toBe(422)
      expect(badUrl.body.data).toHaveProperty(['config.url'])
      const unexpected = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook({ target: 'x' }) })
      expect(unexpected.status).toBe(422)
      expect(unexpected.body.data).toHaveProperty('target')
    })

    it('POST with a body that is not an object is 422, with no body at all 422', async () => {
      expect((await ctx.api('POST', '/tenants/acme/destinations', { json: [1, 2] })).status).toBe(422)
      expect((await ctx.api('POST', '/tenants/acme/destinations')).status).toBe(422)
    })

    it('POST for an unknown tenant is 404', async () => {
      expect((await ctx.api('POST', '/tenants/nobody/destinations', { json: webhook() })).status).toBe(404)
    })

    it('GET lists the tenant’s destinations only', async () => {
      const res = await ctx.api('GET', '/tenants/acme/destinations')
      expect(res.status).toBe(200)
      const ids = res.body.map((d: { id: string }) => d.id)
      expect(ids).toEqual(expect.arrayContaining([ctx.destinations.acmeOk, ctx.destinations.acmeFailing]))
      expect(ids).not.toContain(ctx.destinations.globexOk)
    })

    it('GET filters by type, repeated, and rejects a type outside the enum', async () => {
      const one = await ctx.api('GET', '/tenants/acme/destinations?type=webhook')
      expect(one.status).toBe(200)
      expect(one.body.length).toBeGreaterThanOrEqual(2)
      expect((await ctx.api('GET', '/tenants/acme/destinations?type=cloudx_sqs')).body).toEqual([])
      const two = await ctx.api('GET', '/tenants/acme/destinations?type=cloudx_sqs&type=webhook')
      expect(two.body.length).toBe(one.body.length)
      const bad = await ctx.api('GET', '/tenants/acme/destinations?type=fax')
      expect(bad.status).toBe(400)
      expect(Object.keys(bad.body.data).some((k) => k.startsWith('type'))).toBe(true)
    })

    it('GET filters by topics, repeated', async () => {
      const created = await ctx.api('GET', '/tenants/acme/destinations?topics=order.created')
      expect(created.status).toBe(200)
      expect(created.body.map((d: { id: string }) => d.id)).toContain(ctx.destinations.acmeOk)
      expect(created.body.map((d: { id: string }) => d.id)).not.toContain(ctx.destinations.acmeFailing)
      const both = await ctx.api('GET', '/tenants/acme/destinations?topics=order.created&topics=order.failed')
      expect(both.body.map((d: { id: string }) => d.id)).toEqual(expect.arrayContaining([ctx.destinations.acmeOk, ctx.destinations.acmeFailing]))
      const unknown = await ctx.api('GET', '/tenants/acme/destinations?topic=order.created')
      expect(unknown.status).toBe(400)
      expect(unknown.body.data).toHaveProperty('topic')
    })

    it('bounds topics: 422 naming the field on POST and PATCH, 400 naming the query parameter on GET', async () => {
      const star17 = `order.${Array(17).fill('*').join('.')}`
      const post = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook({ topics: ['order.created', star17] }) })
      expect(post.status).toBe(422)
      expect(post.body.data).toEqual({ 'topics.1': 'must have at most 16 "*" segments' })
      const many = await ctx.api('PATCH', `/tenants/acme/destinations/${ctx.destinations.acmeOk}`, { json: { topics: Array.from({ length: 101 }, (_, i) => `t.${i}`) } })
      expect(many.status).toBe(422)
      expect(many.body.data).toEqual({ topics: 'must have at most 100 topics' })
      const long = await ctx.api('GET', `/tenants/acme/destinations?topics=${Array(44).fill('a').join('.')}`)
      expect(long.status).toBe(400)
      expect(long.body.data).toEqual({ 'topics.0': 'must have at most 32 dot segments' })
      const query = Array.from({ length: 21 }, (_, i) => `topics=t.${i}`).join('&')
      expect((await ctx.api('GET', `/tenants/acme/destinations?${query}`)).body.data).toEqual({ topics: 'must have at most 20 values' })
    })

    it('GET /{destination_id} returns it; unknown is 404', async () => {
      const res = await ctx.api('GET', `/tenants/acme/destinations/${ctx.destinations.acmeOk}`)
      expect(res.status).toBe(200)
      expect(res.body).toMatchObject({ id: ctx.destinations.acmeOk, type: 'webhook', target_url: `${ctx.receiverUrl}/ok` })
      expect((await ctx.api('GET', '/tenants/acme/destinations/des_missing')).status).toBe(404)
    })

    it('PATCH updates topics, merges config and rejects immutable fields', async () => {
      const { body } = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook() })
      const path = `/tenants/acme/destinations/${body.id}`
      const res = await ctx.api('PATCH', path, { json: { topics: ['order.created', 'order.paid'], config: { custom_headers: { 'x-a': '1' } } } })
      expect(res.status).toBe(200)
      expect(res.body.topics).toEqual(['order.created', 'order.paid'])
      expect(res.body.config).toMatchObject({ url: `${ctx.receiverUrl}/ok`, custom_headers: { 'x-a': '1' } })
      const typeChange = await ctx.api('PATCH', path, { json: { type: 'cloudx_sqs' } })
      expect(typeChange.status).toBe(422)
      expect(typeChange.body.data).toHaveProperty('type')
      expect((await ctx.api('PATCH', '/tenants/acme/destinations/des_missing', { json: { topics: '*' } })).status).toBe(404)
      await ctx.api('DELETE', path)
    })

    it('PUT …/disable sets disabled_at and PUT …/enable clears it', async () => {
      const { body } = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook() })
      const path = `/tenants/acme/destinations/${body.id}`
      const disabled = await ctx.api('PUT', `${path}/disable`)
      expect(disabled.status).toBe(200)
      expect(Date.parse(disabled.body.disabled_at)).not.toBeNaN()
      expect((await ctx.api('PUT', `${path}/disable`)).body.disabled_at).toBe(disabled.body.disabled_at)
      const enabled = await ctx.api('PUT', `${path}/enable`)
      expect(enabled.status).toBe(200)
      expect(enabled.body.disabled_at).toBeNull()
      expect((await ctx.api('PUT', '/tenants/acme/destinations/des_missing/enable')).status).toBe(404)
      expect((await ctx.api('PUT', '/tenants/acme/destinations/des_missing/disable')).status).toBe(404)
      await ctx.api('DELETE', path)
    })

    it('DELETE answers { success: true }, then the destination is 404', async () => {
      const { body } = await ctx.api('POST', '/tenants/acme/destinations', { json: webhook() })
      const path = `/tenants/acme/destinations/${body.id}`
      const res = await ctx.api('DELETE', path)
      expect(res.status).toBe(200)
      expect(res.body).toEqual({ success: true })
      expect((await ctx.api('GET', path)).status).toBe(404)
      expect((await ctx.api('DELETE', path)).status).toBe(404)
    })

    it('never reaches another tenant’s destination through its own path', async () => {
      const foreign = ctx.destinations.globexOk
      const asAcme = { as: ctx.tokens.acme }
      for (const as of ['admin', ctx.tokens.acme]) {
        expect((await ctx.api('GET', `/tenants/acme/destinations/${foreign}`, { as })).status).toBe(404)
        expect((await ctx.api('PATCH', `/tenants/acme/destinations/${foreign}`, { as, json: { topics: '*' } })).status).toBe(404)
        expect((await ctx.api('PUT', `/tenants/acme/destinations/${foreign}/disable`, { as })).status).toBe(404)
        expect((await ctx.api('PUT', `/tenants/acme/destinations/${foreign}/enable`, { as })).status).toBe(404)
        expect((await ctx.api('DELETE', `/tenants/acme/destinations/${foreign}`, { as })).status).toBe(404)
        expect((await ctx.api('GET', `/tenants/acme/destinations/${foreign}/events`, { as })).status).toBe(404)
      }
      expect((await ctx.api('GET', '/tenants/globex/destinations', asAcme)).status).toBe(403)
      expect((await ctx.api('POST', '/tenants/globex/destinations', { ...asAcme, json: webhook() })).status).toBe(403)
      const intact = await ctx.api('GET', `/tenants/globex/destinations/${foreign}`)
      expect(intact.status).toBe(200)
      expect(intact.body).toMatchObject({ topics: ['order.created'], disabled_at: null })
    })
  })

  describe('destination types', () => {
    it.each(['/destination-types', '/tenants/acme/destination-types'])('GET %s lists every type schema', async (path) => {
      const res = await ctx.api('GET', path, { as: ctx.tokens.acme })
      expect(res.status).toBe(200)
      expect(res.body.map((t: { type: string }) => t.type)).toEqual(expect.arrayContaining(sixTypes))
      for (const t of res.body) expect(t).toMatchObject({ label: expect.any(String), description: expect.any(String), icon: expect.any(String), instructions: expect.any(String), config_fields: expect.any(Array), credential_fields: expect.any(Array) })
    })

    it.each(sixTypes)('GET /destination-types/%s and its tenant variant return the schema', async (type) => {
      const plain = await ctx.api('GET', `/destination-types/${type}`, { as: ctx.tokens.acme })
      expect(plain.status).toBe(200)
      expect(plain.body.type).toBe(type)
      const tenant = await ctx.api('GET', `/tenants/acme/destination-types/${type}`, { as: ctx.tokens.acme })
      expect(tenant.status).toBe(200)
      expect(tenant.body).toEqual(plain.body)
    })

    it.each(['cloudy_servicebus', 'cloudz_pubsub', 'fax', 'WEBHOOK'])('{type}=%s is outside the path enum: 400 naming type', async (type) => {
      for (const path of [`/destination-types/${type}`, `/tenants/acme/destination-types/${type}`]) {
        const res = await ctx.api('GET', path)
        expect(res.status).toBe(400)
        expect(res.body.data).toHaveProperty('type')
      }
    })

    it('the tenant variant of an unknown tenant is 404', async () => {
      expect((await ctx.api('GET', '/tenants/nobody/destination-types')).status).toBe(404)
      expect((await ctx.api('GET', '/tenants/nobody/destination-types/webhook')).status).toBe(404)
    })
  })
}
