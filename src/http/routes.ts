import * as v from 'valibot'
import type { Outflow } from '../engine.js'
import { CreateDestinationSchema, DestinationSchema, ListDestinationsQuerySchema, UpdateDestinationSchema } from '../model/destination.js'
import { DeliveryAttemptSchema, EventSchema, GetEventQuerySchema, ListAdminEventsQuerySchema, ListDestinationEventsQuerySchema, ListEventsQuerySchema, PublishResultSchema, PublishSchema } from '../model/event.js'
import { ExpungeJobSchema, ExpungeResultSchema, ExpungeSchema, type ExpungeInput } from '../model/expunge.js'
import { AttemptMetricsQuerySchema, EventMetricsQuerySchema, MetricsResponseSchema, type AttemptMetricsQuery, type EventMetricsQuery } from '../model/metrics.js'
import { ListTenantsQuerySchema, PortalSessionSchema, TenantSchema, UpsertTenantSchema } from '../model/tenant.js'
import { DestinationTypeInfoSchema, SchemaPathTypeSchema } from '../model/destination-type.js'
import { HealthQuerySchema, HealthReportSchema } from '../model/health.js'
import { TopicInfoSchema } from '../model/topic.js'
import { RotateSigningKeySchema, SigningKeySetSchema } from '../model/signing-keys.js'
import { EnableQuerySchema, ReplayJobSchema, ReplaySchema, TenantReplaySchema, type EnableQuery } from '../model/replay.js'
import { nestQuery, type QueryRecord } from './query.js'
import { Reply, type RouteContext, type RouteSpec, type Schema } from './route-spec.js'
import { payloadRoute } from './payload-route.js'
import {
  EnabledDestinationSchema,
  EventPageSchema,
  HealthSchema,
  NoQuerySchema,
  OpenApiDocumentSchema,
  PathIdSchema,
  PortalQuerySchema,
  PortalRedirectSchema,
  SuccessSchema,
  TenantPageSchema,
  TenantTokenSchema,
} from './schemas.js'

export { Reply, type Access, type HttpMethod, type RouteContext, type RouteSpec } from './route-spec.js'

/** How long receivers and caches may keep the key set: a rotation overlaps by far longer. */
export const signingKeysCacheControl = 'public, max-age=300'


const tenantParams = { tenant_id: PathIdSchema }
const destinationParams = { ...tenantParams, destination_id: PathIdSchema }
const eventParams = { ...tenantParams, event_id: PathIdSchema }
const destinationEventParams = { ...destinationParams, event_id: PathIdSchema }
const typeParam = { type: SchemaPathTypeSchema }
const replayParams = { ...destinationParams, job_id: PathIdSchema }
const destinationDisabled = { status: 409, description: 'The destination is disabled' }
const replayJobNotFound = { status: 404, description: 'Tenant, destination or replay job not found' }
/** A topic name in a path: any non-empty name without white space (`order.created`). */
const TopicNameParamSchema = v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(255, 'must be at most 255 characters'), v.regex(/^\S+$/, 'must not contain white space'))

const listDestinationTypes: RouteSpec = {
  method: 'GET', path: '/destination-types', operationId: 'listDestinationTypes', summary: 'List Destination Type Schemas (JWT Auth)', tag: 'Destination types', access: 'token',
  params: {}, query: NoQuerySchema,
  responses: [{ status: 200, description: 'List of destination type schemas', schema: v.array(DestinationTypeInfoSchema) }],
  handle: ({ outflow }) => outflow.listDestinationTypes(),
}
const getDestinationType: RouteSpec = {
  method: 'GET', path: '/destination-types/{type}', operationId: 'getDestinationType', summary: 'Get Destination Type Schema', tag: 'Destination types', access: 'token',
  params: typeParam, query: NoQuerySchema,
  responses: [{ status: 200, description: 'Destination type schema', schema: DestinationTypeInfoSchema }],
  handle: ({ outflow, params }) => outflow.getDestinationType(params.type!),
}

/** `route` under `/tenants/{tenant_id}`, for the tenant's own callers: 404 when the tenant does not exist, else the same answer. */
function forTenant(route: RouteSpec, operationId: string, summary: string): RouteSpec {
  return {
    ...route,
    path: `/tenants/{tenant_id}${route.path}`, operationId, summary, access: 'tenant',
    params: { ...tenantParams, ...route.params },
    handle: async (ctx) => (await ctx.outflow.getTenant(ctx.params.tenant_id!), route.handle(ctx)),
  }
}

/** A metrics route (deepObject query): a tenant token reads its own tenant's numbers (`scope`) and may not name another. */
function metricsRoute<Query>(spec: {
  path: string
  operationId: string
  summary: string
  /** Of the 200 answer. */
  description: string
  query: Schema
  read: (outflow: Outflow, query: Query, scope: { tenantId: string } | undefined) => Promise<unknown>
}): RouteSpec {
  return {
    method: 'GET', path: spec.path, operationId: spec.operationId, summary: spec.summary, tag: 'Metrics', access: 'token',
    params: {}, query: spec.query, queryStyle: 'deepObject',
    responses: [{ status: 200, description: spec.description, schema: MetricsResponseSchema }],
    errors: [{ status: 403, description: 'A tenant token used the admin-only tenant_id dimension, or filters[tenant_id] naming another tenant' }],
    handle: ({ outflow, query, tenantScope }) => spec.read(outflow, nestQuery(query) as Query, tenantScope ? { tenantId: tenantScope } : undefined),
  }
}

/** Every route of SPEC.md plus publish, health and the OpenAPI document. Order only matters for docs. */
export const routes: RouteSpec[] = [
  {
    method: 'GET', path: '/tenants', operationId: 'listTenants', summary: 'List Tenants', tag: 'Tenants', access: 'admin',
    params: {}, query: ListTenantsQuerySchema,
    responses: [{ status: 200, description: 'Tenant list page', schema: TenantPageSchema }],
    handle: ({ outflow, query }) => outflow.listTenants(query),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}', operationId: 'getTenant', summary: 'Get Tenant', tag: 'Tenants', access: 'tenant',
    params: tenantParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Tenant', schema: TenantSchema }],
    handle: ({ outflow, params }) => outflow.getTenant(params.tenant_id!),
  },
  {
    method: 'PUT', path: '/tenants/{tenant_id}', operationId: 'upsertTenant', summary: 'Create or Update Tenant', tag: 'Tenants', access: 'admin',
    params: tenantParams, query: NoQuerySchema, body: { schema: UpsertTenantSchema, required: false },
    responses: [
      { status: 201, description: 'Tenant created', schema: TenantSchema },
      { status: 200, description: 'Tenant updated', schema: TenantSchema },
    ],
    handle: async ({ outflow, params, body }) => {
      const { tenant, created } = await outflow.upsertTenant(params.tenant_id!, body)
      return new Reply(created ? 201 : 200, tenant)
    },
  },
  {
    method: 'DELETE', path: '/tenants/{tenant_id}', operationId: 'deleteTenant', summary: 'Delete Tenant', tag: 'Tenants', access: 'admin',
    params: tenantParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Success result', schema: SuccessSchema }],
    handle: ({ outflow, params }) => outflow.deleteTenant(params.tenant_id!),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/portal', operationId: 'getPortalRedirect', summary: 'Get Portal Redirect URL', tag: 'Tenants', access: 'admin',
    params: tenantParams, query: PortalQuerySchema,
    responses: [{ status: 200, description: 'Portal redirect', schema: PortalRedirectSchema }],
    handle: ({ outflow, params, query, portalUrl }) => outflow.getPortalRedirect(params.tenant_id!, query, { portalUrl }),
  },
  {
    method: 'POST', path: '/portal/sessions', operationId: 'createPortalSession', summary: 'Exchange a Portal Code for a Tenant Token', tag: 'Tenants', access: 'public',
    params: {}, query: NoQuerySchema, body: { schema: PortalSessionSchema, required: true },
    responses: [{ status: 200, description: 'Tenant token (the code is used up)', schema: TenantTokenSchema }],
    errors: [{ status: 401, description: 'The code is unknown, expired (after 5 minutes) or already used' }],
    handle: ({ outflow, body }) => outflow.exchangePortalCode(body),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/token', operationId: 'getTenantToken', summary: 'Get Tenant JWT Token', tag: 'Tenants', access: 'admin',
    params: tenantParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Tenant token', schema: TenantTokenSchema }],
    handle: ({ outflow, params }) => outflow.getTenantToken(params.tenant_id!),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/destinations', operationId: 'listDestinations', summary: 'List Destinations', tag: 'Destinations', access: 'tenant',
    params: tenantParams, query: ListDestinationsQuerySchema,
    responses: [{ status: 200, description: 'List of destinations', schema: v.array(DestinationSchema) }],
    handle: ({ outflow, params, query }) => outflow.listDestinations(params.tenant_id!, query),
  },
  {
    method: 'POST', path: '/tenants/{tenant_id}/destinations', operationId: 'createDestination', summary: 'Create Destination', tag: 'Destinations', access: 'tenant',
    params: tenantParams, query: NoQuerySchema, body: { schema: CreateDestinationSchema, required: true },
    responses: [{ status: 201, description: 'Destination created', schema: DestinationSchema }],
    errors: [{ status: 409, description: 'A destination with this id exists' }],
    handle: ({ outflow, params, body }) => outflow.createDestination(params.tenant_id!, body),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/destinations/{destination_id}', operationId: 'getDestination', summary: 'Get Destination', tag: 'Destinations', access: 'tenant',
    params: destinationParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Destination', schema: DestinationSchema }],
    handle: ({ outflow, params }) => outflow.getDestination(params.tenant_id!, params.destination_id!),
  },
  {
    method: 'PATCH', path: '/tenants/{tenant_id}/destinations/{destination_id}', operationId: 'updateDestination', summary: 'Update Destination', tag: 'Destinations', access: 'tenant',
    params: destinationParams, query: NoQuerySchema, body: { schema: UpdateDestinationSchema, required: true },
    responses: [{ status: 200, description: 'Destination', schema: DestinationSchema }],
    handle: ({ outflow, params, body }) => outflow.updateDestination(params.tenant_id!, params.destination_id!, body),
  },
  {
    method: 'DELETE', path: '/tenants/{tenant_id}/destinations/{destination_id}', operationId: 'deleteDestination', summary: 'Delete Destination', tag: 'Destinations', access: 'tenant',
    params: destinationParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Success result', schema: SuccessSchema }],
    handle: ({ outflow, params }) => outflow.deleteDestination(params.tenant_id!, params.destination_id!),
  },
  {
    method: 'PUT', path: '/tenants/{tenant_id}/destinations/{destination_id}/enable', operationId: 'enableDestination', summary: 'Enable Destination', tag: 'Destinations', access: 'tenant',
    params: destinationParams, query: EnableQuerySchema,
    responses: [{ status: 200, description: 'Destination; with `recovery` (how to replay, or the replay started by `replay=skipped`) when deliveries were skipped while it was disabled', schema: EnabledDestinationSchema }],
    handle: ({ outflow, params, query }) => outflow.enableDestination(params.tenant_id!, params.destination_id!, query as EnableQuery),
  },
  {
    method: 'PUT', path: '/tenants/{tenant_id}/destinations/{destination_id}/disable', operationId: 'disableDestination', summary: 'Disable Destination', tag: 'Destinations', access: 'tenant',
    params: destinationParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Destination', schema: DestinationSchema }],
    handle: ({ outflow, params }) => outflow.disableDestination(params.tenant_id!, params.destination_id!),
  },
  {
    method: 'POST', path: '/tenants/{tenant_id}/destinations/{destination_id}/replay', operationId: 'replayDestination', summary: 'Replay Destination Deliveries', tag: 'Replays', access: 'tenant',
    params: destinationParams, query: NoQuerySchema, body: { schema: ReplaySchema, required: true },
    responses: [{ status: 202, description: 'Replay job started', schema: ReplayJobSchema }],
    errors: [destinationDisabled],
    handle: async ({ outflow, params, body }) => new Reply(202, await outflow.replayDestination(params.tenant_id!, params.destination_id!, body)),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/destinations/{destination_id}/replays/{job_id}', operationId: 'getReplay', summary: 'Get Replay Job', tag: 'Replays', access: 'tenant',
    params: replayParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Replay job and its progress', schema: ReplayJobSchema }],
    errors: [replayJobNotFound],
    handle: ({ outflow, params }) => outflow.getReplay(params.tenant_id!, params.destination_id!, params.job_id!),
  },
  {
    method: 'DELETE', path: '/tenants/{tenant_id}/destinations/{destination_id}/replays/{job_id}', operationId: 'cancelReplay', summary: 'Cancel Replay Job', tag: 'Replays', access: 'tenant',
    params: replayParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Replay job, cancelled (or as it ended)', schema: ReplayJobSchema }],
    errors: [replayJobNotFound],
    handle: ({ outflow, params }) => outflow.cancelReplay(params.tenant_id!, params.destination_id!, params.job_id!),
  },
  {
    method: 'POST', path: '/tenants/{tenant_id}/replay', operationId: 'replayTenant', summary: 'Replay Tenant Deliveries', tag: 'Replays', access: 'tenant',
    params: tenantParams, query: NoQuerySchema, body: { schema: TenantReplaySchema, required: true },
    responses: [{ status: 202, description: 'One replay job per destination', schema: v.array(ReplayJobSchema) }],
    errors: [{ status: 409, description: 'A destination named in destination_id is disabled' }],
    handle: async ({ outflow, params, body }) => new Reply(202, await outflow.replayTenant(params.tenant_id!, body)),
  },
  forTenant(listDestinationTypes, 'listTenantDestinationTypes', 'List Destination Type Schemas (for Tenant)'),
  forTenant(getDestinationType, 'getTenantDestinationType', 'Get Destination Type Schema (for Tenant)'),
  listDestinationTypes,
  getDestinationType,
  {
    method: 'GET', path: '/topics', operationId: 'listTopics', summary: 'List Topics', tag: 'Topics', access: 'token',
    params: {}, query: NoQuerySchema,
    responses: [{ status: 200, description: 'The topic catalog: each topic with its payload schema, validation mode and deprecation', schema: v.array(TopicInfoSchema) }],
    handle: ({ outflow }) => outflow.listTopics(),
  },
  {
    method: 'GET', path: '/topics/{name}', operationId: 'getTopic', summary: 'Get Topic', tag: 'Topics', access: 'token',
    params: { name: TopicNameParamSchema }, query: NoQuerySchema,
    responses: [{ status: 200, description: 'One topic of the catalog', schema: TopicInfoSchema }],
    errors: [{ status: 404, description: 'No topic of that name in the catalog' }],
    handle: ({ outflow, params }) => outflow.getTopic(params.name!),
  },
  {
    method: 'POST', path: '/publish', operationId: 'publish', summary: 'Publish Event', tag: 'Events', access: 'admin',
    params: {}, query: NoQuerySchema, body: { schema: PublishSchema, required: true },
    responses: [{ status: 202, description: 'Event accepted', schema: PublishResultSchema }],
    handle: ({ outflow, body }) => outflow.publish(body),
  },
  {
    method: 'GET', path: '/events', operationId: 'listAdminEvents', summary: 'List Events (Admin)', tag: 'Events', access: 'admin',
    params: {}, query: ListAdminEventsQuerySchema,
    responses: [{ status: 200, description: 'Event list page', schema: EventPageSchema }],
    handle: ({ outflow, query }) => outflow.listAdminEvents(query),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/events', operationId: 'listEvents', summary: 'List Events', tag: 'Events', access: 'tenant',
    params: tenantParams, query: ListEventsQuerySchema,
    responses: [{ status: 200, description: 'Event list page', schema: EventPageSchema }],
    handle: ({ outflow, params, query }) => outflow.listEvents(params.tenant_id!, query),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/events/{event_id}', operationId: 'getEvent', summary: 'Get Event', tag: 'Events', access: 'tenant',
    params: eventParams, query: GetEventQuerySchema,
    responses: [{ status: 200, description: 'Event', schema: EventSchema }],
    handle: ({ outflow, params, query }) => outflow.getEvent(params.tenant_id!, params.event_id!, query),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/events/{event_id}/deliveries', operationId: 'listDeliveries', summary: 'List Event Delivery Attempts', tag: 'Events', access: 'tenant',
    params: eventParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'List of delivery attempts, newest first', schema: v.array(DeliveryAttemptSchema) }],
    handle: ({ outflow, params }) => outflow.listDeliveries(params.tenant_id!, params.event_id!),
  },
  {
    method: 'POST', path: '/tenants/{tenant_id}/events/expunge', operationId: 'expungeEvents', summary: 'Expunge Events', tag: 'Events', access: 'tenant',
    params: tenantParams, query: NoQuerySchema, body: { schema: ExpungeSchema, required: true },
    responses: [
      { status: 200, description: '`ids`: erased at once; per id `expunged` or `not_found`', schema: ExpungeResultSchema },
      { status: 202, description: 'A time range (`from`, `to`, `topic`): the erasure job started', schema: ExpungeJobSchema },
    ],
    handle: async ({ outflow, params, body }) => {
      const answer = await outflow.expungeEvents(params.tenant_id!, body as ExpungeInput)
      return 'results' in answer ? answer : new Reply(202, answer)
    },
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/expunges/{job_id}', operationId: 'getExpungeJob', summary: 'Get Expunge Job', tag: 'Events', access: 'tenant',
    params: { ...tenantParams, job_id: PathIdSchema }, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Erasure job and its progress', schema: ExpungeJobSchema }],
    errors: [{ status: 404, description: 'Tenant or expunge job not found' }],
    handle: ({ outflow, params }) => outflow.getExpungeJob(params.tenant_id!, params.job_id!),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/destinations/{destination_id}/events', operationId: 'listDestinationEvents', summary: 'List Events by Destination', tag: 'Events', access: 'tenant', deprecated: true,
    params: destinationParams, query: ListDestinationEventsQuerySchema,
    responses: [{ status: 200, description: 'Event list page', schema: EventPageSchema }],
    handle: ({ outflow, params, query }) => outflow.listDestinationEvents(params.tenant_id!, params.destination_id!, query),
  },
  {
    method: 'GET', path: '/tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}', operationId: 'getDestinationEvent', summary: 'Get Event by Destination', tag: 'Events', access: 'tenant', deprecated: true,
    params: destinationEventParams, query: NoQuerySchema,
    responses: [{ status: 200, description: 'Event', schema: EventSchema }],
    handle: ({ outflow, params }) => outflow.getDestinationEvent(params.tenant_id!, params.destination_id!, params.event_id!),
  },
  {
    method: 'POST', path: '/tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}/retry', operationId: 'retryDelivery', summary: 'Retry Event Delivery', tag: 'Events', access: 'tenant', deprecated: true,
    params: destinationEventParams, query: NoQuerySchema,
    responses: [{ status: 202, description: 'Retry enqueued', schema: SuccessSchema }],
    errors: [destinationDisabled],
    handle: ({ outflow, params }) => outflow.retryDelivery(params.tenant_id!, params.destination_id!, params.event_id!),
  },
  metricsRoute({
    path: '/metrics/events', operationId: 'getEventMetrics', summary: 'Get Event Metrics', description: 'Aggregated event metrics', query: EventMetricsQuerySchema,
    read: (outflow, query: EventMetricsQuery, scope) => outflow.eventMetrics(query, scope),
  }),
  metricsRoute({
    path: '/metrics/attempts', operationId: 'getAttemptMetrics', summary: 'Get Attempt Metrics', description: 'Aggregated attempt metrics', query: AttemptMetricsQuerySchema,
    read: (outflow, query: AttemptMetricsQuery, scope) => outflow.attemptMetrics(query, scope),
  }),
  payloadRoute,
  {
    method: 'GET', path: '/healthz', operationId: 'health', summary: 'Health check', tag: 'Service', access: 'public',
    params: {}, query: HealthQuerySchema,
    responses: [
      { status: 200, description: 'Storage answers. `{ status: "ok" }` for load balancers; the full report with `details=1` (admin key)', schema: v.union([HealthSchema, HealthReportSchema]) },
      { status: 503, description: 'Storage is unreachable (`unavailable`), or a loop of the engine failed (`unhealthy`, naming it)', schema: v.union([HealthSchema, HealthReportSchema]) },
    ],
    errors: [
      { status: 401, description: 'details=1 without credentials' },
      { status: 403, description: 'details=1 with a tenant token (details need the admin key)' },
    ],
    handle: async ({ outflow, query, authorize }) => {
      if (query.details === '1' || query.details === 'true') {
        await authorize('admin')
        const report = await outflow.health()
        return new Reply(report.status === 'ok' ? 200 : 503, report)
      }
      const { status, loops } = await outflow.health({ queue: false })
      const failed = loops.filter((l) => l.status === 'failed').map((l) => l.name)
      return new Reply(status === 'ok' ? 200 : 503, status === 'unhealthy' ? { status, failed_loops: failed } : { status })
    },
  },
  {
    method: 'GET', path: '/signing-keys', operationId: 'getSigningKeys', summary: 'Public keys of Ed25519 (v1a) webhook signatures, as a JWK Set', tag: 'Service', access: 'public',
    params: {}, query: NoQuerySchema,
    responses: [{ status: 200, description: 'JWK Set: the active key and previous keys still signing during a rotation (Cache-Control: public, max-age=300)', schema: SigningKeySetSchema }],
    handle: async ({ outflow }) => new Reply(200, await outflow.getSigningKeys(), { 'Cache-Control': signingKeysCacheControl }),
  },
  {
    method: 'POST', path: '/signing-keys/rotate', operationId: 'rotateSigningKey', summary: 'Rotate the Ed25519 signing key', tag: 'Service', access: 'admin',
    params: {}, query: NoQuerySchema, body: { schema: RotateSigningKeySchema, required: false },
    responses: [{ status: 200, description: 'The key set after the rotation: a new active key, the old one previous until its overlap ends', schema: SigningKeySetSchema }],
    errors: [{ status: 409, description: 'The keys are configured (signing.keys): rotate them in the configuration' }],
    handle: ({ outflow, body }) => outflow.rotateSigningKey(body),
  },
  {
    method: 'GET', path: '/openapi.json', operationId: 'openapi', summary: 'OpenAPI 3.1 document of this API', tag: 'Service', access: 'public',
    params: {}, query: NoQuerySchema,
    responses: [{ status: 200, description: 'OpenAPI document', schema: OpenApiDocumentSchema }],
    handle: async ({ openapi }) => openapi(),
  },
]
