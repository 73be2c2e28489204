import { OutflowError } from '../errors.js'
import type { HealthSchema, OpenApiDocumentSchema, PortalRedirectSchema, TenantTokenSchema } from '../http/schemas.js'
import type { DestinationTypeSchema } from '../model/destination-type.js'
import type { CreateDestinationInput, Destination, ListDestinationsQuery, UpdateDestinationInput } from '../model/destination.js'
import type { DeliveryAttempt, Event, GetEventQuery, ListAdminEventsQuery, ListDestinationEventsQuery, ListEventsQuery, PublishInput, PublishResult } from '../model/event.js'
import type { ExpungeAnswer, ExpungeInput, ExpungeJob } from '../model/expunge.js'
import type { HealthReport } from '../model/health.js'
import type { AttemptMetricsQuery, EventMetricsQuery, MetricsResponse } from '../model/metrics.js'
import type { Page } from '../model/pagination.js'
import type { EnableQuery, Recovery, ReplayInput, ReplayJob, TenantReplayInput } from '../model/replay.js'
import type { RotateSigningKeyInput, SigningKeySet } from '../model/signing-keys.js'
import type { ListTenantsQuery, PortalQuery, PortalSessionInput, Tenant, UpsertTenantInput } from '../model/tenant.js'
import type { TopicInfo, TopicsOption } from '../model/topic.js'
import type { PublishArgument } from '../model/typed-publish.js'
import type * as v from 'valibot'
import { items } from './paging.js'
import { path, queryString } from './query.js'
import { retryPolicy, type RetryOptions } from './retry.js'
import { Transport, type Call } from './transport.js'

/** How an `OutflowClient` reaches the API and as whom. Give `apiKey` or `token`, not both (neither: public routes only). */
export interface OutflowClientOptions<T extends TopicsOption | undefined = undefined> {
  /** The API's URL with its prefix, e.g. `https://outflow.example.com/api/v1` (what `outflow serve` logs as `api`). */
  baseUrl: string | URL
  /** The admin API key (`apiKey`, `OUTFLOW_API_KEY`): every route. */
  apiKey?: string
  /** A tenant token (`getTenantToken`, 24 h), or a function giving the current one, read before each request. */
  token?: string | (() => string | Promise<string>)
  /** The fetch to send with (default `globalThis.fetch`): a host's instrumented one, a test's. */
  fetch?: typeof fetch
  /** Headers sent with every request (a gateway's key, a trace header). */
  headers?: Record<string, string>
  /** How long a request may take, answer included, in ms (default 30 000); past it the call fails with status 0. */
  timeoutMs?: number
  /** Retries of idempotent calls (GET, PUT, DELETE, `publish` with an `id`); `false` for none. */
  retry?: RetryOptions | false
  /** The engine's event catalog, for the types of `publish` only (never sent); or give its type: `OutflowClient<typeof topics>`. */
  topics?: T
}

/** What `publish` takes: with a catalog, the engine's typed `publish` argument; without one, any `PublishInput`. */
export type ClientPublishInput<T extends TopicsOption | undefined> = unknown extends PublishArgument<T> ? PublishInput : PublishArgument<T>

type TenantToken = v.InferOutput<typeof TenantTokenSchema>
type PortalRedirect = v.InferOutput<typeof PortalRedirectSchema>
/** `GET /healthz` without details: what a load balancer reads. */
export type HealthStatus = v.InferOutput<typeof HealthSchema>
type OpenApiDocument = v.InferOutput<typeof OpenApiDocumentSchema>
type Cursorless<Q> = Omit<NonNullable<Q>, 'next' | 'prev'>

/**
 * A typed client of a running Outflow's `/api/v1` (`outflow serve`, or an engine mounted in a host),
 * with the engine's method names and types. `fetch` only: it runs in Node, Deno, Bun, browsers and
 * edge runtimes. A non-2xx answer is an `OutflowError` with the status, code, message and data of the
 * API's error body; idempotent calls are retried on network failures, 429, 502, 503 and 504.
 *
 * @example
 * const client = new OutflowClient({ baseUrl: 'https://outflow.internal/api/v1', apiKey: process.env.OUTFLOW_API_KEY })
 * await client.publish({ id: `order-${order.id}`, tenant_id: 'acme', topic: 'order.created', data: order })
 */
export class OutflowClient<const T extends TopicsOption | undefined = undefined> {
  readonly #transport: Transport

  constructor(options: OutflowClientOptions<T>) {
    const { apiKey, token } = options
    if (apiKey !== undefined && token !== undefined) throw new OutflowError('validation', 'invalid OutflowClient options: give apiKey or token, not both', { data: { token: 'cannot be combined with apiKey' } })
    this.#transport = new Transport({
      baseUrl: String(options.baseUrl).replace(/\/+$/, ''),
      credential: typeof token === 'function' ? token : () => apiKey ?? token,
      fetch: options.fetch ?? ((input, init) => globalThis.fetch(input, init)),
      headers: options.headers ?? {},
      timeoutMs: options.timeoutMs ?? 30_000,
      retry: retryPolicy(options.retry),
    })
  }

  async #call<R>(call: Call): Promise<R> {
    return (await this.#transport.send(call)).body as R
  }
  #get<R>(url: string): Promise<R> {
    return this.#call({ method: 'GET', path: url, idempotent: true })
  }
  #delete<R>(url: string): Promise<R> {
    return this.#call({ method: 'DELETE', path: url, idempotent: true })
  }
  #post<R>(url: string, body: unknown, idempotent = false): Promise<R> {
    return this.#call({ method: 'POST', path: url, body, idempotent })
  }

  // --- tenants ---
  /** `GET /tenants` (admin): tenants a page at a time, newest first by default, with the total `count`. */
  listTenants(query?: ListTenantsQuery): Promise<Page<Tenant> & { count: number }> {
    return this.#get(`/tenants${queryString(query)}`)
  }
  /** Every tenant, page after page: `for await (const tenant of client.listAllTenants())`. */
  listAllTenants(query?: Cursorless<ListTenantsQuery>): AsyncGenerator<Tenant, void, undefined> {
    return items((next) => this.listTenants({ ...query, next }))
  }
  /** `GET /tenants/{tenant_id}`: one tenant; 404 when it does not exist. */
  getTenant(tenantId: string): Promise<Tenant> {
    return this.#get(path`/tenants/${tenantId}`)
  }
  /** `PUT /tenants/{tenant_id}` (admin): create or update a tenant; `created` tells which (201 or 200). */
  async upsertTenant(tenantId: string, body?: UpsertTenantInput): Promise<{ tenant: Tenant; created: boolean }> {
    const { status, body: tenant } = await this.#transport.send({ method: 'PUT', path: path`/tenants/${tenantId}`, body, idempotent: true })
    return { tenant: tenant as Tenant, created: status === 201 }
  }
  /** `DELETE /tenants/{tenant_id}` (admin): the tenant with its destinations, events, deliveries and attempts. */
  deleteTenant(tenantId: string): Promise<{ success: true }> {
    return this.#delete(path`/tenants/${tenantId}`)
  }
  /** `GET /tenants/{tenant_id}/portal` (admin): a portal URL carrying a single-use code (5 minutes). */
  getPortalRedirect(tenantId: string, query?: PortalQuery): Promise<PortalRedirect> {
    return this.#get(path`/tenants/${tenantId}/portal` + queryString(query))
  }
  /** `POST /portal/sessions` (public): exchange a portal URL's code for a tenant token, once. */
  exchangePortalCode(body: PortalSessionInput): Promise<TenantToken> {
    return this.#post('/portal/sessions', body)
  }
  /** `GET /tenants/{tenant_id}/token` (admin): a tenant token (HS256 JWT, 24 h) for the tenant's own part of the API. */
  getTenantToken(tenantId: string): Promise<TenantToken> {
    return this.#get(path`/tenants/${tenantId}/token`)
  }

  // --- destinations ---
  /** `GET /tenants/{tenant_id}/destinations`: a tenant's destinations, optionally only some `type`s or `topics`. */
  listDestinations(tenantId: string, query?: ListDestinationsQuery): Promise<Destination[]> {
    return this.#get(path`/tenants/${tenantId}/destinations` + queryString(query))
  }
  /** `POST /tenants/{tenant_id}/destinations` (201): not retried; 409 when its `id` exists. */
  createDestination(tenantId: string, body: CreateDestinationInput): Promise<Destination> {
    return this.#post(path`/tenants/${tenantId}/destinations`, body)
  }
  /** `GET /tenants/{tenant_id}/destinations/{destination_id}`: credentials masked. */
  getDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return this.#get(path`/tenants/${tenantId}/destinations/${destinationId}`)
  }
  /** `PATCH …/destinations/{destination_id}`: a merge patch of config, credentials, metadata and delivery_metadata; topics and filter replaced. Not retried. */
  updateDestination(tenantId: string, destinationId: string, body: UpdateDestinationInput): Promise<Destination> {
    return this.#call({ method: 'PATCH', path: path`/tenants/${tenantId}/destinations/${destinationId}`, body, idempotent: false })
  }
  /** `DELETE …/destinations/{destination_id}`: the destination, its pending deliveries cancelled. */
  deleteDestination(tenantId: string, destinationId: string): Promise<{ success: true }> {
    return this.#delete(path`/tenants/${tenantId}/destinations/${destinationId}`)
  }
  /** `PUT …/enable`: with skipped deliveries the answer's `recovery` says how to replay them; `{ replay: 'skipped' }` starts that replay (then not retried). */
  enableDestination(tenantId: string, destinationId: string, query: EnableQuery = {}): Promise<Destination & { recovery?: Recovery }> {
    return this.#call({ method: 'PUT', path: path`/tenants/${tenantId}/destinations/${destinationId}/enable` + queryString(query), idempotent: query.replay === undefined })
  }
  /** `PUT …/disable`: queued deliveries wait; events published meanwhile are recorded as skipped. */
  disableDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return this.#call({ method: 'PUT', path: path`/tenants/${tenantId}/destinations/${destinationId}/disable`, idempotent: true })
  }
  /** `POST …/replay` (202): send a destination's past deliveries again, as a durable job. Not retried. */
  replayDestination(tenantId: string, destinationId: string, body: ReplayInput): Promise<ReplayJob> {
    return this.#post(path`/tenants/${tenantId}/destinations/${destinationId}/replay`, body)
  }
  /** `POST /tenants/{tenant_id}/replay` (202): one replay job per destination. Not retried. */
  replayTenant(tenantId: string, body: TenantReplayInput): Promise<ReplayJob[]> {
    return this.#post(path`/tenants/${tenantId}/replay`, body)
  }
  /** `GET …/replays/{job_id}`: a replay job's progress. */
  getReplay(tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
    return this.#get(path`/tenants/${tenantId}/destinations/${destinationId}/replays/${jobId}`)
  }
  /** `DELETE …/replays/{job_id}`: cancel a replay job. */
  cancelReplay(tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
    return this.#delete(path`/tenants/${tenantId}/destinations/${destinationId}/replays/${jobId}`)
  }
  /**
   * `POST /tenants/{tenant_id}/events/expunge`: erase events' payloads, `{ ids }` (at most 1,000) answered per id,
   * or `{ from, to?, topic? }` as a durable job (202). Not retried.
   */
  expungeEvents<B extends ExpungeInput>(tenantId: string, body: B): Promise<ExpungeAnswer<B>> {
    return this.#post(path`/tenants/${tenantId}/events/expunge`, body)
  }
  /** `GET /tenants/{tenant_id}/expunges/{job_id}`: an erasure job's progress. */
  getExpungeJob(tenantId: string, jobId: string): Promise<ExpungeJob> {
    return this.#get(path`/tenants/${tenantId}/expunges/${jobId}`)
  }
  /** `GET /payloads/{token}`: a thin delivery's data, by the token of its `payload_url` (the engine's `readPayload` gives the JSON text). */
  readPayload(token: string): Promise<unknown> {
    return this.#get(path`/payloads/${token}`)
  }
  /** `GET /destination-types`: every destination type with its fields, icon and instructions. */
  listDestinationTypes(): Promise<DestinationTypeSchema[]> {
    return this.#get('/destination-types')
  }
  /** `GET /destination-types/{type}`. */
  getDestinationType(type: string): Promise<DestinationTypeSchema> {
    return this.#get(path`/destination-types/${type}`)
  }
  /** `GET /tenants/{tenant_id}/destination-types`: `listDestinationTypes` under a tenant (404 when it does not exist). */
  listTenantDestinationTypes(tenantId: string): Promise<DestinationTypeSchema[]> {
    return this.#get(path`/tenants/${tenantId}/destination-types`)
  }
  /** `GET /tenants/{tenant_id}/destination-types/{type}`. */
  getTenantDestinationType(tenantId: string, type: string): Promise<DestinationTypeSchema> {
    return this.#get(path`/tenants/${tenantId}/destination-types/${type}`)
  }

  // --- topics ---
  /** `GET /topics`: the event catalog, each topic with its schema, validation mode and deprecation. */
  listTopics(): Promise<TopicInfo[]> {
    return this.#get('/topics')
  }
  /** `GET /topics/{name}`: one topic; 404 when the catalog has none of that name. */
  getTopic(name: string): Promise<TopicInfo> {
    return this.#get(path`/topics/${name}`)
  }

  // --- events ---
  /**
   * `POST /publish` (admin, 202): record an event and deliver it. Idempotent on (tenant_id, id), so a
   * publish with an `id` is retried like a GET; one without is sent once.
   *
   * @example
   * const { id, duplicate } = await client.publish({ id: 'order-1', tenant_id: 'acme', topic: 'order.created', data: { total: 42 } })
   */
  publish(input: ClientPublishInput<T>): Promise<PublishResult> {
    return this.#post('/publish', input, typeof (input as { id?: unknown }).id === 'string')
  }
  /** `GET /events` (admin): events across tenants, a page at a time. */
  listAdminEvents(query?: ListAdminEventsQuery): Promise<Page<Event>> {
    return this.#get(`/events${queryString(query)}`)
  }
  /** Every event of `listAdminEvents`, page after page. */
  listAllAdminEvents(query?: Cursorless<ListAdminEventsQuery>): AsyncGenerator<Event, void, undefined> {
    return items((next) => this.listAdminEvents({ ...query, next }))
  }
  /** `GET /tenants/{tenant_id}/events`: one row per event and destination, by status, topic, destination or time. */
  listEvents(tenantId: string, query?: ListEventsQuery): Promise<Page<Event>> {
    return this.#get(path`/tenants/${tenantId}/events` + queryString(query))
  }
  /** Every event of `listEvents`, page after page: `for await (const event of client.listAllEvents('acme', { status: 'failed' }))`. */
  listAllEvents(tenantId: string, query?: Cursorless<ListEventsQuery>): AsyncGenerator<Event, void, undefined> {
    return items((next) => this.listEvents(tenantId, { ...query, next }))
  }
  /** `GET /tenants/{tenant_id}/events/{event_id}` (for one destination with `destination_id`). */
  getEvent(tenantId: string, eventId: string, query?: GetEventQuery): Promise<Event> {
    return this.#get(path`/tenants/${tenantId}/events/${eventId}` + queryString(query))
  }
  /** `GET …/events/{event_id}/deliveries`: every attempt of an event, newest first (one list, not paged). */
  listDeliveries(tenantId: string, eventId: string): Promise<DeliveryAttempt[]> {
    return this.#get(path`/tenants/${tenantId}/events/${eventId}/deliveries`)
  }
  /** @deprecated Use `listEvents(tenantId, { destination_id })`. */
  listDestinationEvents(tenantId: string, destinationId: string, query?: ListDestinationEventsQuery): Promise<Page<Event>> {
    return this.#get(path`/tenants/${tenantId}/destinations/${destinationId}/events` + queryString(query))
  }
  /** @deprecated Use `getEvent(tenantId, eventId, { destination_id })`. */
  getDestinationEvent(tenantId: string, destinationId: string, eventId: string): Promise<Event> {
    return this.#get(path`/tenants/${tenantId}/destinations/${destinationId}/events/${eventId}`)
  }
  /** `POST …/events/{event_id}/retry` (202): one manual attempt now. Not retried; 409 when the destination is disabled. */
  retryDelivery(tenantId: string, destinationId: string, eventId: string): Promise<{ success: true }> {
    return this.#post(path`/tenants/${tenantId}/destinations/${destinationId}/events/${eventId}/retry`, undefined)
  }

  // --- metrics ---
  /** `GET /metrics/events`: published events per time bucket and dimension (a tenant token: its own). */
  eventMetrics(query: EventMetricsQuery): Promise<MetricsResponse> {
    return this.#get(`/metrics/events${queryString(query, 'deepObject')}`)
  }
  /** `GET /metrics/attempts`: delivery attempts per time bucket and dimension. */
  attemptMetrics(query: AttemptMetricsQuery): Promise<MetricsResponse> {
    return this.#get(`/metrics/attempts${queryString(query, 'deepObject')}`)
  }

  // --- service ---
  /**
   * `GET /healthz?details=1` (admin): the engine's health report, also when it is not `ok` (a 503);
   * `{ details: false }` is the public probe, `{ status }` alone.
   */
  health(options?: { details?: true }): Promise<HealthReport>
  /** `GET /healthz` (public): `{ status }` alone, what a load balancer reads. */
  health(options: { details: false }): Promise<HealthStatus>
  health({ details = true }: { details?: boolean } = {}): Promise<HealthReport | HealthStatus> {
    return this.#call({ method: 'GET', path: details ? '/healthz?details=1' : '/healthz', idempotent: true, accept: [503] })
  }
  /** `GET /signing-keys` (public): the Ed25519 public keys of `v1a` webhook signatures, a JWK Set. */
  getSigningKeys(): Promise<SigningKeySet> {
    return this.#get('/signing-keys')
  }
  /** `POST /signing-keys/rotate` (admin): a new active signing key. Not retried; 409 with configured keys. */
  rotateSigningKey(body?: RotateSigningKeyInput): Promise<SigningKeySet> {
    return this.#post('/signing-keys/rotate', body)
  }
  /** `GET /openapi.json` (public): the OpenAPI 3.1 document of the API this engine serves. */
  openapi(): Promise<OpenApiDocument> {
    return this.#get('/openapi.json')
  }
}
