import { EventEmitter } from 'node:events'
import type { OutflowEvents } from './delivery/events.js'
import type { EngineContext } from './engine/context.js'
import * as destinations from './engine/destinations.js'
import * as replays from './engine/replays.js'
import * as expunge from './engine/expunge.js'
import * as events from './engine/events.js'
import { checkHealth } from './engine/health.js'
import { readPayload } from './engine/payloads.js'
import { publishEvents, type PublishOptions } from './engine/publish.js'
import { publishInTransaction, publishThroughConnection } from './engine/publish-in-transaction.js'
import { reencryptCredentials, type ReencryptResult } from './engine/reencrypt.js'
import * as metrics from './engine/metrics.js'
import type { PruneResult } from './engine/pruner.js'
import { deliveryReporter } from './engine/reporter.js'
import { EngineRuntime } from './engine/runtime.js'
import type { EngineServices, HandlerFactory } from './engine/services.js'
import * as portal from './engine/portal.js'
import * as tenants from './engine/tenants.js'
import { rotateSigningKey, type SigningKeySet } from './engine/signing-keys.js'
import { OutflowError } from './errors.js'
import type { DestinationTypeSchema } from './model/destination-type.js'
import type { Destination, ListDestinationsQuery } from './model/destination.js'
import type { EnableQuery, Recovery, ReplayJob } from './model/replay.js'
import type { DeliveryAttempt, Event, ListAdminEventsQuery, ListDestinationEventsQuery, ListEventsQuery, PublishResult } from './model/event.js'
import type { HealthReport } from './model/health.js'
import type { AttemptMetricsQuery, EventMetricsQuery, MetricsResponse } from './model/metrics.js'
import type { Page } from './model/pagination.js'
import type { ListTenantsQuery, Tenant } from './model/tenant.js'
import type { ResolvedOptions } from './options.js'
import type { Storage } from './storage/storage.js'
import { Telemetry } from './telemetry.js'
import * as topics from './engine/topics.js'
import type { TopicInfo, TopicsOption } from './model/topic.js'
import type { PublishArgument } from './model/typed-publish.js'

/** Builds the HTTP handler of an engine (src/http's `createHttpHandler`, passed in by `createOutflow`). */
export type HttpHandlerFactory = HandlerFactory<Outflow>

/**
 * The Outflow engine: the typed API of every operation, the delivery worker, and `fetch` for HTTP.
 * Create it with `createOutflow`. `T` is the `topics` option: with a catalog, `publish` takes only its
 * topics, each with `data` typed from its schema. `Outflow` without a type argument is any engine (what
 * the HTTP adapters take), and its `publish` takes any input, checked at run time.
 */
// `any` by default: `publish` makes T contravariant, so no narrower default would accept every engine.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export class Outflow<T extends TopicsOption | undefined = any> extends EventEmitter<OutflowEvents> {
  /** The options the engine runs with, defaults filled in. */
  readonly options: ResolvedOptions
  /** The storage the engine was given, opened and migrated. */
  readonly storage: Storage
  /** The engine's spans and metrics; the HTTP layer records API latency through it. */
  readonly telemetry: Telemetry
  readonly #ctx: EngineContext
  /** The worker, writer, replay runner, pruner and the rest, with their start and stop (src/engine/runtime.ts). */
  readonly #runtime: EngineRuntime
  readonly #createHandler: HttpHandlerFactory | undefined
  #handler?: (request: Request) => Promise<Response>

  /** Prefer `createOutflow`, which also migrates, starts the worker and serves HTTP. */
  constructor(storage: Storage, options: ResolvedOptions, { createHandler, telemetry, catalog }: EngineServices<Outflow> = {}) {
    super()
    this.options = options
    this.storage = storage
    this.telemetry = telemetry ?? new Telemetry(undefined, options.telemetry)
    this.#createHandler = createHandler
    this.#runtime = new EngineRuntime(storage, options, this.telemetry, catalog, (ctx, sink) => deliveryReporter(this, ctx, sink))
    this.#ctx = this.#runtime.ctx
  }

  /** Set up the operator sink and start the delivery worker (createOutflow does this; the worker unless `delivery.worker` is false). */
  start(): Promise<void> {
    return this.#runtime.start()
  }

  /** Apply pending storage migrations (createOutflow does this unless `migrate` is false). */
  migrate(): Promise<void> {
    return this.storage.migrate()
  }

  /** Serve the `/api/v1` HTTP API from a Web-standard Request, e.g. `Bun.serve({ fetch: (req) => outflow.fetch(req) })`. */
  fetch(request: Request): Promise<Response> {
    if (!this.#createHandler) return Promise.reject(new OutflowError('unavailable', 'this engine was constructed without an HTTP handler: create it with createOutflow'))
    const handler = (this.#handler ??= this.#createHandler(this))
    return handler(request)
  }

  // --- tenants ---
  /** Tenants a page at a time, newest first by default, with the total `count`. */
  listTenants(query?: ListTenantsQuery): Promise<Page<Tenant> & { count: number }> {
    return tenants.listTenants(this.#ctx, query)
  }
  /** One tenant; a 404 `not_found` when it does not exist. */
  getTenant(tenantId: string): Promise<Tenant> {
    return tenants.getTenant(this.#ctx, tenantId)
  }
  /** Create or update a tenant; `created` tells which. */
  upsertTenant(tenantId: string, body?: unknown): Promise<{ tenant: Tenant; created: boolean }> {
    return tenants.upsertTenant(this.#ctx, tenantId, body)
  }
  /** Delete a tenant with its destinations, events, deliveries and attempts, atomically. */
  deleteTenant(tenantId: string): Promise<{ success: true }> {
    return tenants.deleteTenant(this.#ctx, tenantId)
  }
  /**
   * A portal URL for the tenant carrying a single-use code (5 minutes) that the page exchanges for a
   * tenant token: `portal.url` when configured, else `at.portalUrl` (the HTTP route passes the
   * built-in portal's URL).
   *
   * @example
   * const { redirect_url } = await outflow.getPortalRedirect('acme', { theme: 'dark' }, { portalUrl: 'https://api.example.com/portal/' })
   */
  getPortalRedirect(tenantId: string, query?: { theme?: unknown }, at?: { portalUrl?: string }): Promise<{ redirect_url: string; tenant_id: string }> {
    return portal.getPortalRedirect(this.#ctx, tenantId, query, at)
  }
  /**
   * Exchange the code of a portal redirect URL for a tenant token, once (`POST /portal/sessions`);
   * a used, expired or unknown code is a 401.
   *
   * @example
   * const { token, tenant_id } = await outflow.exchangePortalCode({ code })
   */
  exchangePortalCode(body: unknown): Promise<{ token: string; tenant_id: string }> {
    return portal.exchangePortalCode(this.#ctx, body)
  }
  /** A tenant token (an HS256 JWT for 24 hours) that lets the tenant use its own part of the API. */
  getTenantToken(tenantId: string): Promise<{ token: string; tenant_id: string }> {
    return tenants.getTenantToken(this.#ctx, tenantId)
  }
  /**
   * The tenant id a tenant token grants, or null: a bad signature, no `exp`, a lifetime over 24 h,
   * expired, or its tenant deleted since it was issued (re-creating the id does not revive it).
   *
   * @example
   * const tenantId = await outflow.verifyTenantToken(token) // 'acme' or null
   */
  verifyTenantToken(token: string): Promise<string | null> {
    return tenants.verifyTenantToken(this.#ctx, token)
  }

  // --- destinations ---
  /** A tenant's destinations, optionally only some `type`s or `topics`. */
  listDestinations(tenantId: string, query?: ListDestinationsQuery): Promise<Destination[]> {
    return destinations.listDestinations(this.#ctx, tenantId, query)
  }
  /** Create a destination; the answer's `deprecated_topics` names deprecated catalog topics it subscribes to, and their replacements. */
  async createDestination(tenantId: string, body: unknown): Promise<Destination> {
    return topics.noteDeprecatedTopics(this.#ctx, await destinations.createDestination(this.#ctx, tenantId, body), 'created')
  }
  /** One destination of a tenant, credentials masked. */
  getDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return destinations.getDestination(this.#ctx, tenantId, destinationId)
  }
  /** PATCH: JSON merge patch for config, credentials, metadata and delivery_metadata; topics and filter are replaced. */
  async updateDestination(tenantId: string, destinationId: string, body: unknown): Promise<Destination> {
    return topics.noteDeprecatedTopics(this.#ctx, await destinations.updateDestination(this.#ctx, tenantId, destinationId, body), 'updated')
  }
  /** Delete a destination and cancel its pending deliveries. */
  deleteDestination(tenantId: string, destinationId: string): Promise<{ success: true }> {
    return destinations.deleteDestination(this.#ctx, tenantId, destinationId)
  }
  /**
   * Enable a destination. When it has skipped deliveries the answer's `recovery` says how to replay them;
   * `{ replay: 'skipped' }` also starts that replay (its job in `recovery.replay_job`).
   *
   * @example
   * const { recovery } = await outflow.enableDestination('acme', 'des_1', { replay: 'skipped' })
   */
  async enableDestination(tenantId: string, destinationId: string, query: EnableQuery = {}): Promise<Destination & { recovery?: Recovery }> {
    return replays.enableDestination(this.#ctx, tenantId, destinationId, query)
  }
  /** Disable a destination: its queued deliveries wait, and events published meanwhile are recorded as skipped. */
  disableDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return destinations.setDestinationDisabled(this.#ctx, tenantId, destinationId, true)
  }
  /**
   * Send a destination's past deliveries again — `failed` ones by default, or `success`, `skipped`, `all` —
   * of events with `since` ≤ time ≤ `until`, as a durable job that any instance's worker runs (202).
   *
   * @example
   * const job = await outflow.replayDestination('acme', 'des_1', { since: '2026-11-01T00:00:00Z', status: 'skipped' })
   */
  replayDestination(tenantId: string, destinationId: string, body: unknown): Promise<ReplayJob> {
    return replays.replayDestination(this.#ctx, tenantId, destinationId, body)
  }
  /** `replayDestination` for several destinations of a tenant (`destination_id`, default every enabled one): one job each. */
  replayTenant(tenantId: string, body: unknown): Promise<ReplayJob[]> {
    return replays.replayTenant(this.#ctx, tenantId, body)
  }
  /** A replay job's progress. */
  getReplay(tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
    return replays.getReplay(this.#ctx, tenantId, destinationId, jobId)
  }
  /** Cancel a replay job; what it already handed to the worker (one batch at most) is still attempted. */
  cancelReplay(tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
    return replays.cancelReplay(this.#ctx, tenantId, destinationId, jobId)
  }
  /** Erase events of a tenant: `{ ids }` (at most 1,000) answered per id, or `{ from, to?, topic? }` as a durable job (docs/delivery.md › Erasure). */
  expungeEvents<B extends expunge.ExpungeInput>(tenantId: string, body: B): Promise<expunge.ExpungeAnswer<B>> {
    return expunge.expungeEvents(this.#ctx, tenantId, body) as Promise<expunge.ExpungeAnswer<B>>
  }
  /** An erasure job's progress. */
  getExpungeJob(tenantId: string, jobId: string): Promise<expunge.ExpungeJob> {
    return expunge.getExpungeJob(this.#ctx, tenantId, jobId)
  }
  /** Every destination type with its fields, icon and instructions, for forms. */
  async listDestinationTypes(): Promise<DestinationTypeSchema[]> {
    return destinations.listDestinationTypes()
  }
  /** One destination type's fields, icon and instructions. */
  async getDestinationType(type: string): Promise<DestinationTypeSchema> {
    return destinations.getDestinationType(type)
  }

  // --- topics ---
  /**
   * The topic catalog: each topic with its description, JSON Schema, validation mode and deprecation
   * (empty without `topics`; names only, unchecked, with an array of names).
   *
   * @example
   * const [first] = await outflow.listTopics() // { name: 'order.created', payload_schema: { … }, validation: 'enforce', … }
   */
  async listTopics(): Promise<TopicInfo[]> {
    return topics.listTopics(this.#ctx)
  }
  /** One topic of the catalog; 404 when it has none of that name. */
  async getTopic(name: string): Promise<TopicInfo> {
    return topics.getTopic(this.#ctx, name)
  }

  // --- events ---
  /**
   * Record an event and its deliveries durably, then deliver. Idempotent on (tenant_id, id). With `tx`
   * (Postgres), the event is written by your own transaction and delivered only once it commits.
   *
   * @example
   * await sql.begin(async (tx) => {
   *   await tx`insert into orders ${tx(order)}`
   *   await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: order }, { tx })
   * })
   */
  async publish(input: PublishArgument<T>, options: PublishOptions = {}): Promise<PublishResult> {
    const [result] = await this.publishMany([input], { ...options, single: true })
    return result!
  }
  /** Publish a batch in one transaction (with `tx`: in yours, all or none). */
  publishMany(inputs: PublishArgument<T>[], { single = false, tx }: PublishOptions & { single?: boolean } = {}): Promise<PublishResult[]> {
    if (this.#runtime.closed) return Promise.reject(new OutflowError('unavailable', 'the Outflow engine is closed'))
    if (tx !== undefined) return publishInTransaction(this.#ctx, inputs, single, tx)
    return publishEvents(this.#ctx, this.#runtime.writer, inputs, single)
  }
  /**
   * SQLite: publish inside your own better-sqlite3 transaction, synchronously (better-sqlite3 transactions
   * cannot await). `db` is your connection to the engine's database file (a better-sqlite3 Database, or a
   * drizzle database or transaction over one); the event commits or rolls back with your rows and is
   * delivered once your transaction commits.
   *
   * @example
   * db.transaction(() => {
   *   db.prepare('insert into orders (id, total) values (?, ?)').run(order.id, order.total)
   *   outflow.publishSync({ tenant_id: 'acme', topic: 'order.created', data: order }, { db })
   * })()
   */
  publishSync(input: PublishArgument<T>, options: { db: object }): PublishResult {
    return this.publishManySync([input], { ...options, single: true })[0]!
  }
  /** `publishSync` for a batch: all or none, in your transaction. */
  publishManySync(inputs: PublishArgument<T>[], { db, single = false }: { db: object; single?: boolean }): PublishResult[] {
    if (this.#runtime.closed) throw new OutflowError('unavailable', 'the Outflow engine is closed')
    return publishThroughConnection(this.#ctx, inputs, single, db, (host, event) => this.#runtime.commits.watch(host, event))
  }
  /** Admin listing of events across tenants. */
  listAdminEvents(query?: ListAdminEventsQuery): Promise<Page<Event>> {
    return events.listAdminEvents(this.#ctx, query)
  }
  /** A tenant's event log a page at a time: one row per event and destination, filtered by status, topic, destination or time. */
  listEvents(tenantId: string, query?: ListEventsQuery): Promise<Page<Event>> {
    return events.listEvents(this.#ctx, tenantId, query)
  }
  /** One event of a tenant (for one destination with `destination_id`). */
  getEvent(tenantId: string, eventId: string, query?: { destination_id?: unknown }): Promise<Event> {
    return events.getEvent(this.#ctx, tenantId, eventId, query)
  }
  /** Every attempt of an event, newest first. */
  listDeliveries(tenantId: string, eventId: string): Promise<DeliveryAttempt[]> {
    return events.listDeliveries(this.#ctx, tenantId, eventId)
  }
  /** @deprecated Use `listEvents(tenantId, { destination_id })`. */
  listDestinationEvents(tenantId: string, destinationId: string, query?: ListDestinationEventsQuery): Promise<Page<Event>> {
    return events.listDestinationEvents(this.#ctx, tenantId, destinationId, query)
  }
  /** @deprecated Use `getEvent(tenantId, eventId, { destination_id })`. */
  getDestinationEvent(tenantId: string, destinationId: string, eventId: string): Promise<Event> {
    return events.getEvent(this.#ctx, tenantId, eventId, { destination_id: destinationId }, true)
  }
  /** What a thin delivery's payload link answers: the event's data as canonical JSON, or a 404 for any link not valid now. */
  readPayload(token: string): Promise<string> {
    return readPayload(this.#ctx, token)
  }
  /** Enqueue one manual attempt now, whatever the automatic schedule. */
  async retryDelivery(tenantId: string, destinationId: string, eventId: string): Promise<{ success: true }> {
    const result = await events.retryDelivery(this.#ctx, tenantId, destinationId, eventId)
    this.#runtime.worker.wake()
    return result
  }

  // --- credentials at rest ---
  /**
   * Move every destination's stored credentials to the newest encryption key (`encryptionKey`), including
   * rows written with an older key, the old `enc:v1:` format or plain JSON, `batchSize` rows at a time.
   *
   * @example
   * await outflow.reencryptCredentials() // { scanned: 120, reencrypted: 118, failed: 0, signing_keys: { scanned: 2, reencrypted: 2, failed: 0 } }
   */
  reencryptCredentials({ batchSize = 500 }: { batchSize?: number } = {}): Promise<ReencryptResult> {
    return reencryptCredentials(this.#ctx, batchSize)
  }

  // --- Ed25519 signing keys ---
  /**
   * The public keys receivers verify `v1a` signatures with, as a JWK Set (`GET /signing-keys`, public):
   * the active key and the previous keys still signing during a rotation's overlap.
   *
   * @example
   * const { keys } = await outflow.getSigningKeys() // [{ kty: 'OKP', crv: 'Ed25519', kid, x, whpk: 'whpk_…', status: 'active', … }]
   */
  getSigningKeys(): Promise<SigningKeySet> {
    return this.#ctx.signingKeys.keySet()
  }
  /**
   * Make a new active signing key. The current one keeps signing beside it (two `v1a` signatures) and
   * stays in the key set for `overlap` (`30m`, `24h`, `7d`; default `signing.overlap`). 409 when the keys
   * are configured with `signing.keys`.
   *
   * @example
   * const { keys } = await outflow.rotateSigningKey({ overlap: '48h' })
   */
  async rotateSigningKey(body: unknown = {}): Promise<SigningKeySet> {
    return rotateSigningKey(this.#ctx.signingKeys, body)
  }

  // --- operations ---
  /**
   * Storage reachable (within 2 s), queue depth, age of the oldest due delivery, worker running.
   * `{ queue: false }` only checks that storage answers (what `GET /healthz` does for load balancers).
   *
   * @example
   * const report = await outflow.health() // { status: 'ok', storage: { reachable: true, … }, queue: { depth: 0, … }, worker: { … } }
   */
  health(options?: { queue?: boolean }): Promise<HealthReport> {
    return checkHealth(this.#ctx, { enabled: this.options.delivery.worker, running: this.#runtime.worker.running }, this.#runtime.supervisor, options)
  }

  // --- metrics ---
  /**
   * Published events over time (Outpost's `GET /metrics/events`): `count` and `rate` per time bucket
   * and dimension. `scope` limits the query to one tenant, as a tenant token is.
   *
   * @example
   * await outflow.eventMetrics({ time: { start: '2026-03-02T00:00:00Z', end: '2026-03-03T00:00:00Z' }, granularity: '1h', measures: ['count'] })
   */
  eventMetrics(query: EventMetricsQuery, scope?: metrics.MetricsScope): Promise<MetricsResponse> {
    return metrics.eventMetrics(this.#ctx, query, scope)
  }
  /**
   * Delivery attempts over time (Outpost's `GET /metrics/attempts`): counts, error rate, retries and
   * rates per time bucket and dimension.
   *
   * @example
   * await outflow.attemptMetrics({ time: { start, end }, granularity: '1d', measures: ['count', 'error_rate'], dimensions: ['destination_id'] })
   */
  attemptMetrics(query: AttemptMetricsQuery, scope?: metrics.MetricsScope): Promise<MetricsResponse> {
    return metrics.attemptMetrics(this.#ctx, query, scope)
  }

  // --- retention ---
  /**
   * Run one pruning pass now: delete events older than `retention.events` with their deliveries and
   * attempts, keeping any with a delivery still pending. The engine does this every `retention.intervalMs`;
   * `locked: true` means another instance is pruning; `estimated: true` that a day dropped whole (partitioned
   * layout) was counted from the planner's statistics rather than scanned.
   *
   * @example
   * const { events } = await outflow.prune()
   */
  prune(): Promise<PruneResult> {
    return this.#runtime.prune()
  }

  /** Stop claiming, drain in-flight attempts (bounded), release leases, close connections. Idempotent. */
  close(): Promise<void> {
    return this.#runtime.close()
  }

  /** Whether `close()` has been called. */
  get closed(): boolean {
    return this.#runtime.closed
  }
}
