import { Ajv2020 } from 'ajv/dist/2020.js'
import { describe, expect, it } from 'vitest'
import { destinationRegistry } from '../../src/destinations/registry.js'
import { errorKinds } from '../../src/model/attempt-result.js'
import { destinationTypes } from '../../src/model/destination-type.js'
import { routes } from '../../src/http/routes.js'
import type { SuiteContext } from './support.js'

/** Every operation of SPEC.md "Endpoints", plus publish and health. */
const specOperations = [
  'GET /tenants', 'GET /tenants/{tenant_id}', 'PUT /tenants/{tenant_id}', 'DELETE /tenants/{tenant_id}',
  'GET /tenants/{tenant_id}/portal', 'GET /tenants/{tenant_id}/token',
  'GET /tenants/{tenant_id}/destinations', 'POST /tenants/{tenant_id}/destinations',
  'GET /tenants/{tenant_id}/destinations/{destination_id}', 'PATCH /tenants/{tenant_id}/destinations/{destination_id}',
  'DELETE /tenants/{tenant_id}/destinations/{destination_id}', 'PUT /tenants/{tenant_id}/destinations/{destination_id}/enable',
  'PUT /tenants/{tenant_id}/destinations/{destination_id}/disable',
  'GET /tenants/{tenant_id}/destination-types', 'GET /tenants/{tenant_id}/destination-types/{type}',
  'GET /destination-types', 'GET /destination-types/{type}',
  'GET /events', 'GET /tenants/{tenant_id}/events', 'GET /tenants/{tenant_id}/events/{event_id}',
  'GET /tenants/{tenant_id}/events/{event_id}/deliveries', 'GET /tenants/{tenant_id}/destinations/{destination_id}/events',
  'GET /tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}',
  'POST /tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}/retry',
  'POST /publish', 'GET /healthz',
]

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, any> } }

const aws = { key: 'AKIAOPENAPITEST', secret: 'openapi-secret-value' }
/** A valid create body of each type (nothing is sent anywhere on create). */
const createBodies: Record<string, { config?: unknown; credentials?: unknown }> = {
  webhook: {
    config: { url: 'https://hooks.example.com/outflow', custom_headers: { 'x-team': 'ops' }, compatible_signature: 'custom', compatible_signature_header: 'X-Signature', compatible_signature_template: 'sha256={signature}' },
    credentials: { compatible_signature_secret: 'receiver-secret-value' },
  },
  cloudx_sqs: { config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' }, credentials: aws },
  amqp_broker: { config: { server_url: 'rabbit.example.com:5672', exchange: 'events' }, credentials: { username: 'outflow', password: 'broker-password' } },
  relay: { config: { url: 'https://relay.example.com/in', extra: { free: 'form' } }, credentials: { token: 'relay-token-value' } },
  cloudx_kinesis: { config: { stream_name: 'orders', region: 'us-east-1', partition_key_template: 'data.id' }, credentials: { ...aws, session: 'session-token' } },
  cloudy_servicebus: { config: { name: 'orders' }, credentials: { connection_string: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0' } },
  cloudx_s3: { config: { bucket: 'orders-archive', region: 'eu-west-1', storage_class: 'STANDARD_IA' }, credentials: aws },
  cloudz_pubsub: {
    config: { project_id: 'acme-project', topic: 'orders' },
    credentials: { service_account_json: JSON.stringify({ type: 'authorized_user', client_id: 'id.apps.googleusercontent.com', client_secret: 'client-secret', refresh_token: '1//refresh' }) },
  },
  kafka: { config: { brokers: 'kafka-1.example.com:9092,kafka-2.example.com:9092', topic: 'orders', key_template: 'data.customer', tls: true, sasl_mechanism: 'scram-sha-512' }, credentials: { username: 'outflow', password: 'kafka-password' } },
  aws_eventbridge: { config: { event_bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/orders', source: 'com.example.shop' }, credentials: aws },
  nats_jetstream: { config: { servers: 'nats-1.example.com:4222, tls://nats-2.example.com:4222', subject: 'events', subject_template: 'topic', stream: 'EVENTS' }, credentials: { username: 'outflow', password: 'nats-password' } },
  redis_streams: { config: { url: 'rediss://cache.example.com:6380/1', stream_key: 'events', stream_key_template: 'topic', max_length: 100000 }, credentials: { password: 'redis-password' } },
}

/** A validator of values against the document's components (OpenAPI 3.1 schemas are JSON Schema 2020-12). */
function validatorOf(doc: Doc) {
  // `discriminator` is an OpenAPI annotation; oneOf alone decides, since each variant fixes `type`.
  const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true })
  ajv.addSchema({ $id: 'outflow.json', components: doc.components })
  return (name: string, value: unknown) => {
    const validate = ajv.getSchema(`outflow.json#/components/schemas/${name}`)!
    return validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`)
  }
}
const param = (op: any, name: string) => op.parameters.find((p: { name: string }) => p.name === name)

/** `GET /openapi.json`: a 3.1 document generated from the route table and its valibot schemas. */
export function describeOpenApi(ctx: SuiteContext): void {
  describe('GET /openapi.json', () => {
    let doc: Doc
    const load = async () => (doc ??= (await ctx.api('GET', '/openapi.json', { as: null })).body)

    it('is an OpenAPI 3.1 document served without credentials', async () => {
      const res = await ctx.api('GET', '/openapi.json', { as: null })
      expect(res.status).toBe(200)
      expect(res.body.openapi).toBe('3.1.0')
      expect(res.body.servers).toEqual([{ url: '/api/v1' }])
    })

    it('documents every operation of the spec and every route the handler serves', async () => {
      const { paths } = await load()
      const documented = Object.entries(paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`))
      expect(documented).toEqual(expect.arrayContaining(specOperations))
      expect(documented.sort()).toEqual(routes.map((r) => `${r.method} ${r.path}`).sort())
    })

    it('marks exactly the three by-destination event routes deprecated', async () => {
      const { paths } = await load()
      const deprecated = Object.entries(paths).flatMap(([path, ops]) => Object.entries(ops).filter(([, op]) => op.deprecated).map(([m]) => `${m.toUpperCase()} ${path}`))
      expect(deprecated.sort()).toEqual(specOperations.filter((o) => o.includes('/destinations/{destination_id}/events')).sort())
    })

    it('carries the query bounds, defaults and enums of the spec', async () => {
      const { paths } = await load()
      const tenants = paths['/tenants']!.get
      expect(param(tenants, 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 })
      expect(param(tenants, 'dir').schema).toMatchObject({ enum: ['asc', 'desc'], default: 'desc' })
      expect(param(tenants, 'order_by').schema).toMatchObject({ enum: ['created_at'], default: 'created_at' })
      expect(param(tenants, 'created_at[gte]').schema).toEqual({ type: 'string', format: 'date-time' })
      expect(param(tenants, 'created_at[lte]').schema).toEqual({ type: 'string', format: 'date-time' })
      const events = paths['/events']!.get
      expect(param(events, 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 1000, default: 100 })
      for (const name of ['destination_id', 'topic', 'tenant_id']) expect(param(events, name)).toMatchObject({ in: 'query', schema: { type: 'array' }, explode: true })
      expect(param(events, 'status')).toBeUndefined()
      expect(param(paths['/tenants/{tenant_id}/events']!.get, 'status').schema).toMatchObject({ enum: ['success', 'failed'] })
      expect(param(paths['/tenants/{tenant_id}/portal']!.get, 'theme').schema).toMatchObject({ enum: ['light', 'dark'] })
      expect(param(paths['/tenants/{tenant_id}/destinations']!.get, 'type').schema.items.enum).toEqual([...destinationTypes])
    })

    it('documents the metrics API with the parameters and response of Outpost’s', async () => {
      const { paths, components } = await load()
      const names = (path: string) => paths[path]!.get.parameters.map((p: { name: string }) => p.name)
      expect(names('/metrics/events')).toEqual(['time', 'granularity', 'measures', 'dimensions', 'filters[topic]', 'filters[destination_id]', 'filters[tenant_id]'])
      expect(names('/metrics/attempts')).toEqual([
        'time', 'granularity', 'measures', 'dimensions', 'filters[destination_id]', 'filters[destination_type]', 'filters[topic]',
        'filters[status]', 'filters[code]', 'filters[manual]', 'filters[attempt_number]', 'filters[tenant_id]',
      ])
      const events = paths['/metrics/events']!.get
      expect(events.operationId).toBe('getEventMetrics')
      expect(param(events, 'time')).toMatchObject({ required: true, style: 'deepObject', explode: true, schema: { type: 'object', required: ['start', 'end'] } })
      expect(param(events, 'measures')).toMatchObject({ required: true, schema: { oneOf: [{ type: 'string', enum: ['count', 'rate'] }, { type: 'array', items: { enum: ['count', 'rate'] } }] } })
      expect(param(events, 'dimensions').schema.oneOf[0].enum).toEqual(['tenant_id', 'topic', 'destination_id'])
      const attempts = paths['/metrics/attempts']!.get
      expect(param(attempts, 'measures').schema.oneOf[0].enum).toHaveLength(11)
      expect(param(attempts, 'dimensions').schema.oneOf[0].enum).toEqual(['tenant_id', 'destination_id', 'destination_type', 'topic', 'status', 'code', 'manual', 'attempt_number'])
      expect(param(attempts, 'filters[manual]').schema).toMatchObject({ type: 'string', enum: ['true', 'false'] })
      expect(attempts.responses['200'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/MetricsResponse' })
      expect(Object.keys(attempts.responses)).toEqual(expect.arrayContaining(['200', '400', '401', '403']))
      expect(attempts.security).toEqual([{ adminKey: [] }, { tenantToken: [] }])
      expect(components.schemas.MetricsMetadata).toMatchObject({ properties: { granularity: {}, query_time_ms: {}, row_count: {}, row_limit: {}, truncated: {} } })
      expect(components.schemas.MetricsDataPoint).toMatchObject({ properties: { time_bucket: { format: 'date-time' }, dimensions: {}, metrics: {} } })
    })

    it('restricts the {type} path parameter to the six values of the spec', async () => {
      const { paths } = await load()
      for (const path of ['/destination-types/{type}', '/tenants/{tenant_id}/destination-types/{type}'])
        expect(param(paths[path]!.get, 'type')).toMatchObject({ in: 'path', required: true, schema: { enum: ['webhook', 'cloudx_sqs', 'amqp_broker', 'relay', 'cloudx_kinesis', 'cloudx_s3'] } })
    })

    it('documents bodies, statuses and security, every $ref resolving', async () => {
      const loaded = await load()
      const create = loaded.paths['/tenants/{tenant_id}/destinations']!.post
      expect(create.requestBody.content['application/json'].schema).toEqual({ $ref: '#/components/schemas/CreateDestination' })
      expect(Object.keys(create.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '404', '409', '413', '415', '422']))
      expect(Object.keys(loaded.paths['/tenants/{tenant_id}']!.put.responses)).toEqual(expect.arrayContaining(['200', '201']))
      expect(loaded.paths['/publish']!.post.responses['202']).toBeDefined()
      expect(loaded.paths['/tenants']!.get.security).toEqual([{ adminKey: [] }])
      expect(loaded.paths['/tenants/{tenant_id}']!.get.security).toEqual([{ adminKey: [] }, { tenantToken: [] }])
      expect(loaded.paths['/healthz']!.get.security).toEqual([])
      const refs = JSON.stringify(loaded).match(/"#\/components\/schemas\/[^"]+"/g) ?? []
      expect(refs.length).toBeGreaterThan(10)
      for (const ref of new Set(refs)) expect(loaded.components.schemas).toHaveProperty([ref.slice(22, -1)])
    })

    it('describes Destination and CreateDestination as one variant per type, discriminated on type', async () => {
      const { components } = await load()
      const types = Object.keys(destinationRegistry)
      for (const [union, stem] of [['Destination', (t: string) => `${t}Destination`], ['CreateDestination', (t: string) => `Create${t}Destination`]] as const) {
        const schema = components.schemas[union]
        expect(schema.discriminator.propertyName).toBe('type')
        expect(Object.keys(schema.discriminator.mapping)).toEqual(types)
        expect(schema.oneOf).toHaveLength(types.length)
        for (const type of types) {
          const name = stem(type.replace(/(^|_)([a-z])/g, (_m: string, _s: string, c: string) => c.toUpperCase()))
          expect(schema.discriminator.mapping[type]).toBe(`#/components/schemas/${name}`)
          expect(components.schemas[name].properties.type).toEqual({ type: 'string', const: type })
        }
      }
    })

    it.each(Object.values(destinationRegistry).map((def) => [def.type, def] as const))('documents the config and credential fields of %s as its schemas and field specs say', async (type, def) => {
      const { components } = await load()
      const stem = type.replace(/(^|_)([a-z])/g, (_m: string, _s: string, c: string) => c.toUpperCase())
      const create = components.schemas[`Create${stem}Destination`]
      const response = components.schemas[`${stem}Destination`]
      for (const [part, fields] of [['config', def.config_fields], ['credentials', def.credential_fields]] as const) {
        const documented = create.properties[part]
        expect(Object.keys(documented.properties).sort()).toEqual(fields.map((f) => f.key).sort())
        for (const field of fields) expect(documented.properties[field.key].description).toBe(field.description)
        // Free-form relay config aside, what the field specs require is what the schema requires.
        if (type !== 'relay') expect([...documented.required].sort()).toEqual(fields.filter((f) => f.required).map((f) => f.key).sort())
      }
      expect(create.required.includes('config')).toBe(def.configRequired)
      expect(create.required.includes('credentials')).toBe(def.credentialsRequired)
      const revealed = new Set(def.revealedCredentials ?? [])
      for (const field of def.credential_fields.filter((f) => f.sensitive && !revealed.has(f.key))) {
        expect(response.properties.credentials.properties[field.key]).toEqual({ type: 'string', description: expect.stringContaining('Masked in responses') })
      }
    })

    it('types the compatible signature fields of webhooks: the presets and encodings as enums, the secret masked', async () => {
      const { components } = await load()
      const create = components.schemas.CreateWebhookDestination.properties
      expect(create.config.properties.compatible_signature).toMatchObject({ enum: ['svix', 'github', 'stripe', 'outpost', 'custom'] })
      expect(create.config.properties.compatible_signature_encoding).toMatchObject({ enum: ['hex', 'base64'] })
      for (const key of ['compatible_signature_header', 'compatible_signature_template', 'compatible_signed_content']) expect(create.config.properties[key]).toMatchObject({ type: 'string' })
      expect(create.credentials.properties.compatible_signature_secret).toMatchObject({ type: 'string', maxLength: 1024 })
      const response = components.schemas.WebhookDestination.properties
      expect(response.credentials.properties.compatible_signature_secret).toEqual({ type: 'string', description: expect.stringContaining('Masked in responses') })
    })

    it('describes error_kind with every kind and what it means', async () => {
      const { components } = await load()
      const kind = components.schemas.DeliveryAttempt.properties.error_kind.anyOf[0]
      expect(kind.enum).toEqual(Object.keys(errorKinds))
      for (const [name, meaning] of Object.entries(errorKinds)) expect(kind.description).toContain(`\`${name}\`: ${meaning}`)
    })

    it('matches what the API accepts and answers for every type: bodies validate against CreateDestination, responses against Destination', async () => {
      const doc = await load()
      const errorsOf = validatorOf(doc)
      const tenant = 'openapi-variants'
      expect((await ctx.api('PUT', `/tenants/${tenant}`)).status).toBe(201)
      try {
        for (const [type, body] of Object.entries(createBodies)) {
          const request = { id: `${type}-1`, type, topics: ['order.created'], ...body }
          expect(errorsOf('CreateDestination', request), type).toEqual([])
          const created = await ctx.api('POST', `/tenants/${tenant}/destinations`, { json: request })
          expect(created.status, JSON.stringify(created.body)).toBe(201)
          expect(errorsOf('Destination', created.body), type).toEqual([])
          // The document refuses what the API refuses: another type's config (relay's is free-form), a missing required part.
          const other = type === 'webhook' ? createBodies.cloudx_s3! : createBodies.webhook!
          if (type !== 'relay') expect(errorsOf('CreateDestination', { ...request, config: other.config }), type).not.toEqual([])
          if (destinationRegistry[type as keyof typeof destinationRegistry].credentialsRequired) {
            const { credentials: _dropped, ...withoutCredentials } = request
            expect(errorsOf('CreateDestination', withoutCredentials), type).not.toEqual([])
            expect((await ctx.api('POST', `/tenants/${tenant}/destinations`, { json: withoutCredentials })).status).toBe(422)
          }
        }
        const listed = await ctx.api('GET', `/tenants/${tenant}/destinations`)
        expect(listed.body).toHaveLength(Object.keys(createBodies).length)
        for (const destination of listed.body) expect(errorsOf('Destination', destination), destination.type).toEqual([])
        const patched = await ctx.api('PATCH', `/tenants/${tenant}/destinations/webhook-1`, { json: { config: { custom_headers: null } } })
        expect(errorsOf('UpdateDestination', { config: { custom_headers: null } })).toEqual([])
        expect(errorsOf('Destination', patched.body)).toEqual([])
      } finally {
        await ctx.api('DELETE', `/tenants/${tenant}`)
      }
    })
  })
}
