import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { destinationRegistry } from '../../src/destinations/registry.js'
import { destinationTypes } from '../../src/model/destination-type.js'
import { engineKinds, rejection, snapshot } from '../support/engines.js'

const aws = { key: 'AKIAEXAMPLEKEY', secret: 'aws-secret-value' }
/** A valid create body per type, and one required inner field to remove. */
const samples: Record<string, { body: Record<string, unknown>; required: string }> = {
  webhook: { body: { config: { url: 'https://example.com/hook' } }, required: 'config.url' },
  cloudx_sqs: { body: { config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' }, credentials: aws }, required: 'config.queue_url' },
  amqp_broker: { body: { config: { server_url: 'localhost:5672', exchange: 'events' }, credentials: { username: 'guest', password: 'guest-password' } }, required: 'credentials.password' },
  relay: { body: { credentials: { token: 'relay-token-123' } }, required: 'credentials.token' },
  cloudx_kinesis: { body: { config: { stream_name: 'orders', region: 'us-east-1' }, credentials: aws }, required: 'config.stream_name' },
  cloudy_servicebus: {
    body: { config: { name: 'orders' }, credentials: { connection_string: 'Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=abc123=' } },
    required: 'config.name',
  },
  cloudx_s3: { body: { config: { bucket: 'events', region: 'us-east-1' }, credentials: aws }, required: 'config.bucket' },
  cloudz_pubsub: {
    body: {
      config: { project_id: 'my-project', topic: 'events' },
      credentials: {
        service_account_json: JSON.stringify({ type: 'service_account', project_id: 'my-project', private_key: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n', client_email: 'a@my-project.iam.gserviceaccount.com' }),
      },
    },
    required: 'config.project_id',
  },
  kafka: { body: { config: { brokers: 'kafka.example.com:9092', topic: 'orders', sasl_mechanism: 'plain' }, credentials: { username: 'outflow', password: 'kafka-password' } }, required: 'config.topic' },
  aws_eventbridge: { body: { config: { event_bus: 'orders', source: 'com.example.shop' }, credentials: aws }, required: 'config.source' },
  nats_jetstream: { body: { config: { servers: 'nats.example.com:4222', subject: 'events.orders' }, credentials: { token: 'nats-token-value' } }, required: 'config.servers' },
  redis_streams: { body: { config: { url: 'redis://cache.example.com:6379/0', stream_key: 'events:orders' }, credentials: { password: 'redis-password-value' } }, required: 'config.url' },
}

function without(body: Record<string, unknown>, path: string): Record<string, unknown> {
  const [part, field] = path.split('.') as [string, string]
  const copy = structuredClone(body)
  delete (copy[part] as Record<string, unknown>)[field]
  return copy
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`engine destinations: ${kind.name}`, () => {
    let outflow: Outflow
    const T = 'acme'
    beforeAll(async () => {
      outflow = await kind.create({ topics: ['order.created', 'order.paid', 'user.created'], encryptionKey: 'a-long-encryption-key-for-tests' })
      await outflow.upsertTenant(T, {})
      await outflow.upsertTenant('globex', {})
    })
    afterAll(() => kind.cleanup())

    /** Run a call that must fail with `status`, and check storage did not change. */
    async function rejects(call: () => Promise<unknown>, status: number) {
      const before = await snapshot(outflow)
      const err = await rejection(call())
      expect(err.status).toBe(status)
      expect(await snapshot(outflow)).toBe(before)
      return err
    }

    describe.each(destinationTypes)('type %s', (type) => {
      const sample = samples[type]!
      it('is created from a valid body and read back with the variant shape', async () => {
        const d = await outflow.createDestination(T, { type, topics: ['order.created'], ...sample.body })
        expect(d).toMatchObject({ type, topics: ['order.created'], disabled_at: null })
        expect(d.id).toMatch(/^des_/)
        expect(typeof d.config).toBe('object')
        expect(typeof d.credentials).toBe('object')
        expect(Date.parse(d.created_at)).not.toBeNaN()
        expect(Date.parse(d.updated_at)).not.toBeNaN()
        expect(await outflow.getDestination(T, d.id)).toEqual(d)
      })
      it(`rejects a body without ${sample.required} with 422 naming it`, async () => {
        const err = await rejects(() => outflow.createDestination(T, { type, topics: ['order.created'], ...without(sample.body, sample.required) }), 422)
        expect(err.data).toHaveProperty([sample.required])
      })
      if (type !== 'relay')
        it('rejects a body without config with 422', async () => {
          const { config: _c, ...rest } = sample.body
          expect((await rejects(() => outflow.createDestination(T, { type, topics: ['order.created'], ...rest }), 422)).data).toHaveProperty(['config'])
        })
      if (destinationRegistry[type].credentialsRequired)
        it('rejects a body without credentials with 422', async () => {
          const { credentials: _c, ...rest } = sample.body
          expect((await rejects(() => outflow.createDestination(T, { type, topics: ['order.created'], ...rest }), 422)).data).toHaveProperty(['credentials'])
        })
      // relay config is free-form by the spec; every other type names the unexpected field.
      if (type !== 'relay')
        it('rejects an unexpected field inside config with 422', async () => {
          const body = structuredClone(sample.body)
          body.config = { ...(body.config as object), surprise: 1 }
          const err = await rejects(() => outflow.createDestination(T, { type, topics: ['order.created'], ...body }), 422)
          expect(err.data).toHaveProperty(['config.surprise'])
        })
      it('rejects an unexpected field inside credentials with 422', async () => {
        const body = structuredClone(sample.body)
        body.credentials = { ...((body.credentials as object) ?? {}), surprise: 1 }
        const err = await rejects(() => outflow.createDestination(T, { type, topics: ['order.created'], ...body }), 422)
        expect(err.data).toHaveProperty(['credentials.surprise'])
      })
    })

    it('checks a Pub/Sub service account key against its config: a full key without an emulator endpoint', async () => {
      const base = { type: 'cloudz_pubsub', topics: '*', config: { project_id: 'my-project', topic: 'events' } }
      const err = await rejects(() => outflow.createDestination(T, { ...base, credentials: { service_account_json: '{}' } }), 422)
      expect(err.data).toHaveProperty(['credentials.service_account_json'])
      const emulated = await outflow.createDestination(T, { ...base, config: { ...base.config, endpoint: 'localhost:8085' }, credentials: { service_account_json: '{}' } })
      expect(emulated.config.endpoint).toBe('localhost:8085')
    })

    it('accepts a Pub/Sub authorized user and refuses malformed or host-reading credential JSON with 422 naming the field', async () => {
      const base = { type: 'cloudz_pubsub', topics: '*', config: { project_id: 'my-project', topic: 'events' } }
      const authorizedUser = { type: 'authorized_user', client_id: 'id.apps.googleusercontent.com', client_secret: 'client-secret-1', refresh_token: '1//refresh' }
      const created = await outflow.createDestination(T, { ...base, credentials: { service_account_json: JSON.stringify(authorizedUser) } })
      expect(created.credentials.service_account_json).toBe('{"ty****')
      // PATCH validates the merged result again.
      const patch = { credentials: { service_account_json: JSON.stringify({ ...authorizedUser, refresh_token: undefined }) } }
      expect((await rejects(() => outflow.updateDestination(T, created.id, patch), 422)).data).toEqual({
        'credentials.service_account_json': 'is not a credential Google accepts: The incoming JSON object does not contain a refresh_token field',
      })
      expect((await rejects(() => outflow.createDestination(T, { ...base, credentials: { service_account_json: '{"type": "authorized_user",' } }), 422)).data).toEqual({
        'credentials.service_account_json': 'must be a Google credential JSON (e.g. the key file of a service account)',
      })
      const hostFile = { type: 'external_account', audience: '//iam.googleapis.com/x', subject_token_type: 'urn:ietf:params:oauth:token-type:jwt', credential_source: { file: '/etc/hostname' } }
      expect((await rejects(() => outflow.createDestination(T, { ...base, credentials: { service_account_json: JSON.stringify(hostFile) } }), 422)).data).toEqual({
        'credentials.service_account_json': 'credential_source.file is not accepted: it reads a file of the Outflow host; use credential_source.url',
      })
    })

    it('accepts free-form relay config and webhook without credentials', async () => {
      const r = await outflow.createDestination(T, { type: 'relay', topics: '*', config: { url: 'https://relay.example.com', anything: { nested: true } }, credentials: { token: 'tok-123456' } })
      expect(r.config).toEqual({ url: 'https://relay.example.com', anything: { nested: true } })
      const w = await outflow.createDestination(T, { type: 'webhook', topics: '*', config: { url: 'https://example.com/x' } })
      expect(w.credentials.secret).toMatch(/^whsec_/)
      expect(Buffer.from(String(w.credentials.secret).slice(6), 'base64')).toHaveLength(32)
      expect(w.topics).toEqual(['*'])
    })

    it.each([
      ['an unknown type', { type: 'carrier_pigeon', topics: ['order.created'], config: {} }, 'type'],
      ['a missing type', { topics: ['order.created'], config: { url: 'https://e.com' } }, 'type'],
      ['missing topics', { type: 'webhook', config: { url: 'https://e.com' } }, 'topics'],
      ['an unexpected top-level field', { type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com' }, colour: 'red' }, 'colour'],
      ['target', { type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com' }, target: 'x' }, 'target'],
      ['target_url', { type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com' }, target_url: 'https://x' }, 'target_url'],
      ['topics of the wrong JSON type', { type: 'webhook', topics: 5, config: { url: 'https://e.com' } }, 'topics'],
      ['config of the wrong JSON type', { type: 'webhook', topics: ['order.created'], config: 'https://e.com' }, 'config'],
      ['an id that is too long', { id: 'x'.repeat(129), type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com' } }, 'id'],
      ['an id with bad characters', { id: 'a/b', type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com' } }, 'id'],
      ['a topic outside the configured list', { type: 'webhook', topics: ['order.created', 'invoice.sent'], config: { url: 'https://e.com' } }, 'topics.1'],
      ['"*" mixed with other topics', { type: 'webhook', topics: ['*', 'order.created'], config: { url: 'https://e.com' } }, 'topics'],
      ['an empty topics array', { type: 'webhook', topics: [], config: { url: 'https://e.com' } }, 'topics'],
      ['an invalid filter operator', { type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com' }, filter: { data: { amount: { $bigger: 5 } } } }, 'filter.data.amount.$bigger'],
      ['a body that is not an object', 'webhook', '(body)'],
    ])('rejects %s with 422 naming the field, writing nothing', async (_, body, field) => {
      const err = await rejects(() => outflow.createDestination(T, body), 422)
      expect(err.data).toHaveProperty([field])
    })

    const stars = (n: number) => Array(n).fill('*').join('.')
    const segments = (n: number) => Array(n).fill('order').join('.')
    it.each([
      ['a pattern with 17 "*" segments', [`order.${stars(17)}`], { 'topics.0': 'must have at most 16 "*" segments' }],
      ['a topic with 33 segments', ['order.created', segments(33)], { 'topics.1': 'must have at most 32 dot segments' }],
      ['101 topics', Array.from({ length: 101 }, (_, i) => `order.created.${i}`), { topics: 'must have at most 100 topics' }],
    ])('rejects %s with 422 on create and update, writing nothing', async (_, topics, data) => {
      const create = await rejects(() => outflow.createDestination(T, { type: 'webhook', topics, config: { url: 'https://e.com' } }), 422)
      expect(create.data).toEqual(data)
      const { id } = await outflow.createDestination(T, { type: 'webhook', topics: '*', config: { url: 'https://e.com/limits' } })
      const update = await rejects(() => outflow.updateDestination(T, id, { topics }), 422)
      expect(update.data).toEqual(data)
      await outflow.deleteDestination(T, id)
    })

    describe('without a topic allow-list', () => {
      let open: Outflow
      beforeAll(async () => {
        open = await kind.create()
        await open.upsertTenant(T, {})
      })

      it('accepts 16 "*" segments, 32 segments and 100 topics', async () => {
        const many = await open.createDestination(T, { type: 'webhook', topics: Array.from({ length: 100 }, (_, i) => `order.${stars(16)}.${i}`), config: { url: 'https://e.com/m' } })
        expect(many.topics).toHaveLength(100)
        const long = await open.createDestination(T, { type: 'webhook', topics: [`order.${stars(15)}.${segments(16)}`], config: { url: 'https://e.com/l' } })
        expect(long.topics[0]!.split('.')).toHaveLength(32)
        await open.deleteDestination(T, many.id)
        await open.deleteDestination(T, long.id)
      })

      it('decides the review’s worst case (a 10-segment pattern, 44-segment topics) in publish and in the listing', async () => {
        const d = await open.createDestination(T, { type: 'webhook', topics: ['*.*.*.*.*.*.*.*.*.z'], config: { url: 'https://e.com/w' } })
        const topic = Array(44).fill('a').join('.')
        expect((await open.publish({ tenant_id: T, topic, data: {} })).destination_ids).toEqual([])
        expect((await open.publish({ tenant_id: T, topic: `${topic}.z`, data: {} })).destination_ids).toEqual([d.id])
        expect(await open.listDestinations(T, { topics: Array(32).fill('a').join('.') })).toEqual([])
        const tooLong = await rejection(open.listDestinations(T, { topics: topic }))
        expect(tooLong).toMatchObject({ status: 400, data: { 'topics.0': 'must have at most 32 dot segments' } })
        const tooMany = await rejection(open.listDestinations(T, { topics: Array.from({ length: 21 }, (_, i) => `t${i}`) }))
        expect(tooMany).toMatchObject({ status: 400, data: { topics: 'must have at most 20 values' } })
      })
    })

    it('accepts topic patterns that match configured topics', async () => {
      const d = await outflow.createDestination(T, { type: 'webhook', topics: ['order.*'], config: { url: 'https://e.com/p' } })
      expect(d.topics).toEqual(['order.*'])
    })

    it('returns 409 when the destination id already exists in the tenant, and allows it in another tenant', async () => {
      await outflow.createDestination(T, { id: 'dup-1', type: 'webhook', topics: ['order.paid'], config: { url: 'https://e.com/1' } })
      const err = await rejects(() => outflow.createDestination(T, { id: 'dup-1', type: 'webhook', topics: ['order.paid'], config: { url: 'https://e.com/2' } }), 409)
      expect(err.data).toEqual({ id: 'already exists' })
      expect((await outflow.createDestination('globex', { id: 'dup-1', type: 'webhook', topics: ['order.paid'], config: { url: 'https://e.com/3' } })).id).toBe('dup-1')
      expect((await outflow.getDestination(T, 'dup-1')).config).toEqual({ url: 'https://e.com/1' })
    })

    it('returns 404 for an unknown tenant or destination on every destination call', async () => {
      await rejects(() => outflow.createDestination('ghost', { type: 'webhook', topics: '*', config: { url: 'https://e.com' } }), 404)
      await rejects(() => outflow.listDestinations('ghost'), 404)
      for (const call of [
        () => outflow.getDestination(T, 'nope'),
        () => outflow.updateDestination(T, 'nope', { topics: '*' }),
        () => outflow.deleteDestination(T, 'nope'),
        () => outflow.enableDestination(T, 'nope'),
        () => outflow.disableDestination(T, 'nope'),
        // another tenant's destination is not visible under this tenant
        () => outflow.getDestination('globex', 'des-does-not-exist'),
      ])
        await rejects(call, 404)
    })

    describe('PATCH', () => {
      it('merges config and metadata (null deletes a key), replaces topics and filter', async () => {
        const d = await outflow.createDestination(T, {
          type: 'webhook',
          topics: ['order.created'],
          config: { url: 'https://e.com/a', custom_headers: { 'x-one': '1', 'x-two': '2' } },
          metadata: { team: 'billing', tier: 'gold' },
          delivery_metadata: { source: 'shop' },
          filter: { data: { amount: { $gt: 10 } } },
        })
        const u = await outflow.updateDestination(T, d.id, {
          topics: ['order.paid'],
          config: { custom_headers: { 'x-two': null, 'x-three': '3' } },
          metadata: { tier: null },
          delivery_metadata: { region: 'eu' },
          filter: { topic: 'order.paid' },
        })
        expect(u.config).toEqual({ url: 'https://e.com/a', custom_headers: { 'x-one': '1', 'x-three': '3' } })
        expect(u.metadata).toEqual({ team: 'billing' })
        expect(u.delivery_metadata).toEqual({ source: 'shop', region: 'eu' })
        expect(u.topics).toEqual(['order.paid'])
        expect(u.filter).toEqual({ topic: 'order.paid' })
        expect(Date.parse(u.updated_at)).toBeGreaterThanOrEqual(Date.parse(d.updated_at))
        const cleared = await outflow.updateDestination(T, d.id, { filter: null })
        expect(cleared.filter).toBeUndefined()
        expect((await outflow.updateDestination(T, d.id, { filter: {} })).filter).toBeUndefined()
      })

      it.each([
        ['type', { type: 'cloudx_sqs' }],
        ['id', { id: 'other' }],
        ['target', { target: 'x' }],
        ['target_url', { target_url: 'https://x' }],
        ['colour', { colour: 'red' }],
        ['config.url', { config: { url: null } }],
        ['config.url', { config: { url: 'ftp://nope' } }],
        ['topics.0', { topics: ['not.configured'] }],
      ])('rejects a change that makes %s invalid with 422, writing nothing', async (field, body) => {
        const d = await outflow.createDestination(T, { type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com/p' } })
        const err = await rejects(() => outflow.updateDestination(T, d.id, body), 422)
        expect(err.data).toHaveProperty([field])
      })

      it('keeps stored secrets when the masked value is sent back', async () => {
        const d = await outflow.createDestination(T, { type: 'cloudx_sqs', topics: '*', ...samples.cloudx_sqs!.body })
        expect(d.credentials.secret).toBe('aws-****')
        const u = await outflow.updateDestination(T, d.id, { credentials: d.credentials })
        expect(u.credentials.secret).toBe('aws-****')
        const stored = await outflow.storage.getDestination(T, d.id)
        const { unsealCredentials, createKeyring } = await import('../../src/credentials.js')
        const keyring = createKeyring(['a-long-encryption-key-for-tests'])
        expect(unsealCredentials(stored!.credentials, keyring, { tenantId: T, destinationId: d.id }).secret).toBe('aws-secret-value')
      })
    })

    it('encrypts credentials at rest and masks sensitive values, but reveals the webhook secret', async () => {
      const d = await outflow.createDestination(T, { type: 'amqp_broker', topics: '*', ...samples.amqp_broker!.body })
      expect(d.credentials).toEqual({ username: 'guest', password: 'gues****' })
      const stored = await outflow.storage.getDestination(T, d.id)
      expect(stored!.credentials.startsWith('enc:v2:')).toBe(true)
      expect(stored!.credentials).not.toContain('guest-password')
      const w = await outflow.createDestination(T, { type: 'webhook', topics: '*', config: { url: 'https://e.com/w' }, credentials: { secret: 'whsec_' + Buffer.alloc(32, 7).toString('base64') } })
      expect(w.credentials.secret).toBe('whsec_' + Buffer.alloc(32, 7).toString('base64'))
    })

    it.each([
      ['kafka', 'password', 'kafk****', 'kafka-password'],
      ['aws_eventbridge', 'secret', 'aws-****', 'aws-secret-value'],
    ] as const)('encrypts %s credentials at rest and masks its %s', async (type, field, masked, secret) => {
      const d = await outflow.createDestination(T, { type, topics: '*', ...samples[type]!.body })
      expect(d.credentials[field]).toBe(masked)
      const stored = await outflow.storage.getDestination(T, d.id)
      expect(stored!.credentials.startsWith('enc:v2:')).toBe(true)
      expect(stored!.credentials).not.toContain(secret)
    })

    it('rotates a webhook secret: the old one becomes previous_secret, valid for 24 h by default', async () => {
      const w = await outflow.createDestination(T, { type: 'webhook', topics: '*', config: { url: 'https://e.com/r' } })
      const before = Date.now()
      const r = await outflow.updateDestination(T, w.id, { credentials: { rotate_secret: true } })
      expect(r.credentials.secret).toMatch(/^whsec_/)
      expect(r.credentials.secret).not.toBe(w.credentials.secret)
      expect(r.credentials.previous_secret).toBe(w.credentials.secret)
      const invalidAt = Date.parse(String(r.credentials.previous_secret_invalid_at))
      expect(invalidAt).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1000)
      expect(invalidAt).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 1000)
      expect(r.credentials).not.toHaveProperty('rotate_secret')
    })

    it('disables and enables idempotently; disabling twice keeps the first time', async () => {
      const d = await outflow.createDestination(T, { type: 'webhook', topics: '*', config: { url: 'https://e.com/d' } })
      const off = await outflow.disableDestination(T, d.id)
      expect(off.disabled_at).toEqual(expect.any(String))
      await new Promise((r) => setTimeout(r, 5))
      expect((await outflow.disableDestination(T, d.id)).disabled_at).toBe(off.disabled_at)
      expect((await outflow.enableDestination(T, d.id)).disabled_at).toBeNull()
      expect((await outflow.enableDestination(T, d.id)).disabled_at).toBeNull()
    })

    it('lists by type and by topics; deletes', async () => {
      await outflow.upsertTenant('lister', {})
      const a = await outflow.createDestination('lister', { type: 'webhook', topics: ['order.created'], config: { url: 'https://e.com/1' } })
      const b = await outflow.createDestination('lister', { type: 'cloudx_s3', topics: ['user.created'], ...samples.cloudx_s3!.body })
      const c = await outflow.createDestination('lister', { type: 'webhook', topics: '*', config: { url: 'https://e.com/2' } })
      expect((await outflow.listDestinations('lister')).map((d) => d.id)).toEqual([a.id, b.id, c.id])
      expect((await outflow.listDestinations('lister', { type: 'cloudx_s3' })).map((d) => d.id)).toEqual([b.id])
      expect((await outflow.listDestinations('lister', { type: ['cloudx_s3', 'webhook'] })).map((d) => d.id)).toEqual([a.id, b.id, c.id])
      expect((await outflow.listDestinations('lister', { topics: 'user.created' })).map((d) => d.id)).toEqual([b.id, c.id])
      expect((await rejection(outflow.listDestinations('lister', { type: 'nope' } as never))).status).toBe(400)
      expect(await outflow.deleteDestination('lister', a.id)).toEqual({ success: true })
      expect((await rejection(outflow.getDestination('lister', a.id))).status).toBe(404)
      expect(b.target).toBe('events')
    })

    it('describes every destination type with every field', async () => {
      const types = await outflow.listDestinationTypes()
      expect(types.map((t) => t.type)).toEqual([...destinationTypes])
      for (const t of types) {
        expect(t.label.length).toBeGreaterThan(0)
        expect(t.description.length).toBeGreaterThan(0)
        expect(t.icon.trim().startsWith('<svg')).toBe(true)
        expect(t.instructions.length).toBeGreaterThan(20)
        for (const f of [...t.config_fields, ...t.credential_fields]) {
          expect(f).toMatchObject({ key: expect.any(String), label: expect.any(String), description: expect.any(String), required: expect.any(Boolean), sensitive: expect.any(Boolean) })
          expect(['text', 'checkbox', 'number', 'key_value_map']).toContain(f.type)
        }
        expect(t.credential_fields.length).toBeGreaterThan(0)
      }
      expect((await outflow.getDestinationType('cloudx_s3')).config_fields.map((f) => f.key)).toContain('bucket')
      expect((await rejection(outflow.getDestinationType('fax'))).status).toBe(404)
    })
  })
}
