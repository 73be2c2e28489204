import { type ConversionConfig, type JsonSchema, toJsonSchema, toJsonSchemaDefs } from '@valibot/to-json-schema'
import type * as v from 'valibot'
import { bodyShape, DateTimeSchema, JsonObjectCheck, ObjectCheck, objectOfItemsOf, RepeatedStringSchema } from '../model/common.js'
import { DeliverySettingsPatchSchema, DeliverySettingsSchema } from '../model/delivery-settings.js'
import { RecoverySchema, ReplayJobSchema, ReplaySchema, TenantReplaySchema } from '../model/replay.js'
import { CreateDestinationSchema, DestinationSchema, UpdateDestinationSchema } from '../model/destination.js'
import { DestinationTypeInfoSchema, FieldSpecSchema } from '../model/destination-type.js'
import { DeliveryAttemptSchema, EventSchema, PublishResultSchema, PublishSchema } from '../model/event.js'
import { HealthReportSchema } from '../model/health.js'
import { MetricsDataPointSchema, MetricsMetadataSchema, MetricsResponseSchema } from '../model/metrics.js'
import { PaginationSchema } from '../model/pagination.js'
import { TenantSchema, UpsertTenantSchema } from '../model/tenant.js'
import { destinationSchemas } from './openapi-destinations.js'
import { topicWebhooks, webhooksTag } from './openapi-webhooks.js'
import type { TopicInfo } from '../model/topic.js'
import type { RouteSpec } from './routes.js'
import {
  ErrorBodySchema,
  EventPageSchema,
  HealthSchema,
  PortalRedirectSchema,
  SuccessSchema,
  TenantPageSchema,
  TenantTokenSchema,
} from './schemas.js'

type Schema = v.GenericSchema
type JsonObject = Record<string, unknown>

/** Shapes named in `components.schemas`; wherever a route uses one of them the document has a `$ref`. */
const namedSchemas = {
  Tenant: TenantSchema,
  TenantPage: TenantPageSchema,
  UpsertTenant: bodyShape(UpsertTenantSchema),
  Pagination: PaginationSchema,
  Destination: DestinationSchema,
  // Replaced by one variant per destination type (openapi-destinations.ts); named here so every use is a $ref.
  CreateDestination: bodyShape(CreateDestinationSchema),
  UpdateDestination: bodyShape(UpdateDestinationSchema),
  DeliverySettings: DeliverySettingsSchema,
  DeliverySettingsPatch: DeliverySettingsPatchSchema,
  DestinationTypeSchema: DestinationTypeInfoSchema,
  DestinationTypeField: FieldSpecSchema,
  Event: EventSchema,
  EventPage: EventPageSchema,
  DeliveryAttempt: DeliveryAttemptSchema,
  Publish: bodyShape(PublishSchema),
  PublishResult: PublishResultSchema,
  Replay: bodyShape(ReplaySchema),
  TenantReplay: bodyShape(TenantReplaySchema),
  ReplayJob: ReplayJobSchema,
  Recovery: RecoverySchema,
  MetricsResponse: MetricsResponseSchema,
  MetricsDataPoint: MetricsDataPointSchema,
  MetricsMetadata: MetricsMetadataSchema,
  PortalRedirect: PortalRedirectSchema,
  TenantToken: TenantTokenSchema,
  Success: SuccessSchema,
  Health: HealthSchema,
  HealthReport: HealthReportSchema,
  Error: ErrorBodySchema,
} satisfies Record<string, Schema>

type Node = { type?: string; kind?: string; pipe?: Node[]; options?: Node[]; wrapped?: Node; item?: Node; entries?: Record<string, Node> }

/** `queryInt`'s union of a number and a digits string: on the wire it is just the bounded integer. */
function isQueryInteger(schema: Node): boolean {
  const types = schema.type === 'union' ? (schema.options ?? []).map((o) => o.type) : []
  return types.length === 2 && types.includes('number') && types.includes('string')
}

/** `union([x, array(x)])`: a value given once or as a list (the metrics API's `measures`, `filters[…]`). */
function oneOrManyItem(schema: Node): Node | undefined {
  const [one, many] = schema.type === 'union' ? (schema.options ?? []) : []
  return schema.options?.length === 2 && many?.type === 'array' && many.item === one ? one : undefined
}

/**
 * Wire types of schemas that parse strings into something else (dates, integers, repeated values):
 * the document describes what a client sends, not the engine's parsed value.
 */
function overrideSchema({ valibotSchema }: { valibotSchema: unknown }): JsonSchema | undefined {
  if (valibotSchema === DateTimeSchema.pipe[0]) return { type: 'string', format: 'date-time' }
  // A free-form JSON object; objectBody's strict objects are documented through bodyShape instead.
  if (valibotSchema === ObjectCheck || valibotSchema === JsonObjectCheck) return { type: 'object' }
  // objectOf: documented as the record it replaces (a record schema drops some keys; see common.ts).
  const map = objectOfItemsOf(valibotSchema)
  if (map) return { type: 'object', propertyNames: convertInline(map.key), additionalProperties: convertInline(map.value) }
  if (valibotSchema === RepeatedStringSchema.pipe[0]) return { type: 'array', items: { type: 'string' } }
  const item = oneOrManyItem(valibotSchema as Node)
  if (item) {
    const one = convert(item as unknown as Schema)
    return { oneOf: [one, { type: 'array', items: one }] }
  }
  // The integer and bound actions that follow in the pipe supply the type.
  if (isQueryInteger(valibotSchema as Node)) return {}
  return undefined
}

const config: ConversionConfig = {
  target: 'draft-2020-12',
  typeMode: 'input',
  errorMode: 'ignore',
  definitions: namedSchemas,
  overrideSchema,
  overrideRef: ({ referenceId }) => `#/components/schemas/${referenceId}`,
}

/**
 * JSON Schema of a schema inside another's override (an objectOf's key or value), without the named
 * definitions: converting with them converts every named shape again, and those contain objectOf schemas.
 */
function convertInline(schema: Schema): JsonSchema {
  const { definitions: _named, ...inline } = config
  const { $schema: _dialect, ...json } = toJsonSchema(schema, inline)
  return json
}

/** JSON Schema of one valibot schema, named shapes as `$ref`s into `components.schemas`. */
function convert(schema: Schema): JsonSchema {
  const { $schema: _dialect, $defs: _definitions, ...json } = toJsonSchema(schema, config)
  return json
}

/** A repeated parameter narrowed by a later schema (e.g. destination `type`) documents the narrowed array. */
function queryParameterSchema(schema: Schema): JsonSchema {
  const node = schema as unknown as Node
  const inner = node.type === 'optional' ? node.wrapped : node
  const pipe = inner?.pipe
  if (pipe?.[0] === (RepeatedStringSchema as unknown as Node)) {
    const narrowed = pipe.findLast((item, i) => i > 0 && item.kind === 'schema')
    if (narrowed) return convert(narrowed as unknown as Schema)
  }
  return convert(schema)
}

type Entries = Record<string, Schema & { type: string }>
const entriesOf = (schema: Schema) => (schema as unknown as { entries?: Entries }).entries ?? {}

/**
 * deepObject queries, documented as Outpost documents them: a required object is one `deepObject`
 * parameter (`time` for `time[start]`, `time[end]`); an optional one is a parameter per field
 * (`filters[topic]`, `filters[status]`, …).
 */
function deepObjectParameters(name: string, schema: Schema & { type: string }): JsonObject[] {
  const inner = (schema.type === 'optional' ? (schema as unknown as Node).wrapped : schema) as unknown as Node
  const object = inner.type === 'object' || inner.type === 'strict_object' ? inner : inner.pipe?.[0]
  if (object?.entries && schema.type !== 'optional') return [{ name, in: 'query', required: true, style: 'deepObject', explode: true, schema: convert(schema) }]
  if (object?.entries)
    return Object.entries(object.entries as unknown as Entries).map(([key, field]) => ({ name: `${name}[${key}]`, in: 'query', required: false, schema: convert(field) }))
  return [{ name, in: 'query', required: schema.type !== 'optional', schema: convert(schema) }]
}

function queryParameters(route: RouteSpec): JsonObject[] {
  const entries = entriesOf(route.query)
  if (route.queryStyle === 'deepObject') return Object.entries(entries).flatMap(([name, schema]) => deepObjectParameters(name, schema))
  return Object.entries(entries).map(([name, schema]) => {
    const json = queryParameterSchema(schema)
    const parameter: JsonObject = { name, in: 'query', required: schema.type !== 'optional', schema: json }
    if (json.type === 'array') Object.assign(parameter, { style: 'form', explode: true })
    return parameter
  })
}

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } })

function errorResponses(route: RouteSpec): JsonObject {
  const errors: JsonObject = { 400: errorResponse('Invalid path or query parameter, or malformed JSON body') }
  if (route.access !== 'public') errors[401] = errorResponse('Missing or invalid credentials')
  if (route.access === 'admin' || route.access === 'tenant') errors[403] = errorResponse('The credentials do not grant access to this route or tenant')
  if (Object.keys(route.params).some((name) => name !== 'type') || route.body) errors[404] = errorResponse('Tenant, destination or event not found')
  for (const extra of route.errors ?? []) errors[extra.status] = errorResponse(extra.description)
  if (route.body) {
    errors[413] = errorResponse('Request body over the size limit')
    errors[415] = errorResponse('Request body is not application/json')
    errors[422] = errorResponse('Request body is invalid; `data` maps each field to what is wrong')
  }
  return errors
}

const tagDescriptions: Record<RouteSpec['tag'], string> = {
  Tenants: 'Tenants own destinations and events. Creating, listing and deleting them, portal redirects and tenant tokens need the admin key.',
  Destinations: 'Where a tenant\'s events go: one of the destination types, with its topics, filter, config and credentials.',
  'Destination types': 'The types a destination can have, with the fields of their config and credentials and setup instructions.',
  Topics: 'The event catalog: which topics exist, what each carries (a JSON Schema of `data`), how publish checks it, and which are deprecated. Receivers find each topic\'s webhook request in the `webhooks` section.',
  Events: 'Published events, their delivery to each destination and every attempt, and manual retries.',
  Metrics: 'Aggregated event and attempt counts and rates over time, as Outpost\'s metrics API serves them. A tenant token sees its own tenant.',
  Service: 'Publishing events, health checks and this document.',
  Replays: 'Sending a destination\'s past deliveries again (failed, successful or skipped ones of a time range) as durable jobs, and their progress.',
}

function operation(route: RouteSpec): JsonObject {
  const security = { public: [], admin: [{ adminKey: [] }], tenant: [{ adminKey: [] }, { tenantToken: [] }], token: [{ adminKey: [] }, { tenantToken: [] }] }
  const responses: JsonObject = {}
  for (const r of route.responses) {
    responses[r.status] = r.schema ? { description: r.description, content: { 'application/json': { schema: convert(r.schema) } } } : { description: r.description }
  }
  const op: JsonObject = {
    operationId: route.operationId,
    summary: route.summary,
    tags: [route.tag],
    security: security[route.access],
    parameters: [
      ...Object.entries(route.params).map(([name, schema]) => ({ name, in: 'path', required: true, schema: convert(schema) })),
      ...queryParameters(route),
    ],
    responses: { ...responses, ...errorResponses(route) },
  }
  if (route.body) op.requestBody = { required: route.body.required, content: { 'application/json': { schema: convert(bodyShape(route.body.schema)) } } }
  if (route.deprecated) op.deprecated = true
  return op
}

/**
 * The OpenAPI 3.1 document of the route table, its schemas converted from the valibot schemas the
 * routes validate with, so the document cannot drift from the handler.
 *
 * @example
 * const doc = buildOpenApiDocument(routes, { serverUrl: '/api/v1' })
 */
export function buildOpenApiDocument(specs: RouteSpec[], { serverUrl = '/api/v1', topics = [] }: { serverUrl?: string; topics?: TopicInfo[] } = {}): JsonObject {
  const paths: Record<string, JsonObject> = {}
  for (const route of specs) (paths[route.path] ??= {})[route.method.toLowerCase()] = operation(route)
  const { definitions: _self, ...defsConfig } = config
  const schemas: Record<string, JsonSchema> = Object.fromEntries(
    Object.entries(toJsonSchemaDefs(namedSchemas, defsConfig)).map(([name, { $schema: _dialect, ...json }]) => [name, json]),
  )
  Object.assign(schemas, destinationSchemas(convert, schemas.UpdateDestination!))
  // The catalog's topics, for receivers: the request a webhook destination sends for each.
  const { webhooks, schemas: payloads } = topicWebhooks(topics, new Set(Object.keys(schemas)))
  Object.assign(schemas, payloads)
  const tags = [...new Set(specs.map((r) => r.tag))].map((name) => ({ name, description: tagDescriptions[name] }))
  return {
    openapi: '3.1.0',
    info: {
      title: 'Outflow API',
      version: '1.0.0',
      description: 'Multi-tenant event delivery: tenants, destinations, destination type schemas, events and delivery attempts.',
      license: { name: 'MIT', identifier: 'MIT' },
    },
    servers: [{ url: serverUrl }],
    tags: topics.length ? [...tags, webhooksTag] : tags,
    paths,
    ...(topics.length ? { webhooks } : {}),
    components: {
      schemas,
      securitySchemes: {
        adminKey: { type: 'http', scheme: 'bearer', description: 'The admin API key' },
        tenantToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A tenant token from GET /tenants/{tenant_id}/token' },
      },
    },
  }
}
