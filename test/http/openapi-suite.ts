import { describe, expect, it } from 'vitest'
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

type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, unknown> } }
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
      expect(param(paths['/tenants/{tenant_id}/destinations']!.get, 'type').schema.items.enum).toHaveLength(8)
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
  })
}
