import { randomBytes } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { CredentialsError } from './credentials.js'
import type { DeliveryReporter, OutflowEvents } from './delivery/events.js'
import { EventWriter } from './delivery/event-writer.js'
import { DeliveryWorker } from './delivery/worker.js'
import { ReplayRunner } from './delivery/replay-runner.js'
import { Supervisor } from './delivery/supervisor.js'
import type { EngineContext } from './engine/context.js'
import { credentialKeys } from './engine/credential-keys.js'
import * as destinations from './engine/destinations.js'
import * as replays from './engine/replays.js'
import * as events from './engine/events.js'
import { checkHealth } from './engine/health.js'
import { publishEvents } from './engine/publish.js'
import { CommitWatcher, publishInTransaction, publishThroughConnection } from './engine/publish-in-transaction.js'
import { ensureOperatorSink, OperatorSink } from './engine/operator-sink.js'
import { reencryptCredentials, type ReencryptResult } from './engine/reencrypt.js'
import * as metrics from './engine/metrics.js'
import { Pruner, type PruneResult } from './engine/pruner.js'
import * as portal from './engine/portal.js'
import * as tenants from './engine/tenants.js'
import { SigningKeyring, type SigningKeySet } from './engine/signing-keys.js'
import { RotateSigningKeySchema } from './model/signing-keys.js'
import { OutflowError } from './errors.js'
import type { DestinationTypeSchema } from './model/destination-type.js'
import type { Destination, ListDestinationsQuery } from './model/destination.js'
import { parseInput } from './model/common.js'
import { EnableQuerySchema, type EnableQuery, type Recovery, type ReplayJob } from './model/replay.js'
import type { DeliveryAttempt, Event, ListAdminEventsQuery, ListDestinationEventsQuery, ListEventsQuery, PublishResult } from './model/event.js'
import type { HealthReport } from './model/health.js'
import type { OperatorEvent } from './model/operator-event.js'
import type { AttemptMetricsQuery, EventMetricsQuery, MetricsResponse } from './model/metrics.js'
import type { Page } from './model/pagination.js'
import type { ListTenantsQuery, Tenant } from './model/tenant.js'
import type { ResolvedOptions } from './options.js'
import type { Storage } from './storage/storage.js'
import { Telemetry } from './telemetry.js'
import type { Catalog } from './delivery/catalog.js'
import * as topics from './engine/topics.js'
import type { TopicInfo, TopicsOption } from './model/topic.js'
import type { PublishArgument } from './model/typed-publish.js'

export type { OutflowEvents, DeliveryOutcome, AlertPayload, DestinationDisabled } from './delivery/events.js'
export type { MetricsScope } from './engine/metrics.js'
export type { PruneResult } from './engine/pruner.js'

/** Builds the HTTP handler of an engine (src/http's `createHttpHandler`, passed in by `createOutflow`). */
export type HttpHandlerFactory = (outflow: Outflow) => (request: Request) => Promise<Response>

/** Options of `publish` and `publishMany`. */
export interface PublishOptions {
  /**
   * Postgres: your open transaction, in which the event is written (delivered once it commits, never if
   * it rolls back): the `tx` of postgres.js `sql.begin(async (tx) => …)`, or of drizzle's
   * `db.transaction(async (tx) => …)` over postgres.js, on the database (and server) of Outflow's storage.
   */
  tx?: object
}

/** What `createOutflow` hands the engine besides storage and options. */
export interface EngineServices {
  createHandler?: HttpHandlerFactory
  /** Spans and metrics (see src/telemetry.ts); off when absent. */
  telemetry?: Telemetry
  /** The compiled topic catalog (`compileCatalog` of the `topics` option); none: every topic allowed, nothing validated. */
  catalog?: Catalog
}

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
  readonly #worker: DeliveryWorker
  readonly #writer: EventWriter
  readonly #replays: ReplayRunner
  readonly #supervisor: Supervisor
  readonly #operatorSink: OperatorSink
  readonly #pruner: Pruner | undefined
  /** Wakes the worker after a host's SQLite transaction with new deliveries committed (publishSync). */
  readonly #commits: CommitWatcher
  readonly #createHandler: HttpHandlerFactory | undefined
  #handler?: (request: Request) => Promise<Response>
  #closed = false
  #stopObservingQueue?: () => void

  /** Prefer `createOutflow`, which also migrates, starts the worker and serves HTTP. */
  constructor(storage: Storage, options: ResolvedOptions, { createHandler, telemetry, catalog }: EngineServices = {}) {
    super()
    this.options = options
    this.storage = storage
    this.telemetry = telemetry ?? new Telemetry(undefined, options.telemetry)
    this.#createHandler = createHandler
    let jwtSecret = options.jwtSecret
    if (!jwtSecret) {
      jwtSecret = randomBytes(32).toString('base64url')
      options.logger.warn({}, 'no jwtSecret configured: tenant tokens are signed with a random per-process secret and stop working on restart')
    }
    // API requests and typed-API calls give up on a paused database sooner than the worker does (Storage.forCallers).
    const forCallers = storage.forCallers ?? storage
    const keys = credentialKeys(options, storage)
    this.#ctx = {
      storage: forCallers,
      options,
      credentialKeys: keys,
      signingKeys: new SigningKeyring(storage, options, keys, () => new Date()),
      jwtSecret,
      telemetry: this.telemetry,
      catalog,
      now: () => new Date(),
      destinationChanged: (tenantId, destinationId) => this.#worker.destinationChanged(tenantId, destinationId),
      stopDeliveries: (tenantId, destinationId) => this.#worker.stopDeliveries(tenantId, destinationId),
    }
    const { now, signingKeys } = this.#ctx
    const supervisor = (this.#supervisor = new Supervisor(options.supervisor, options.logger))
    this.#worker = new DeliveryWorker({
      storage,
      options,
      credentialKeys: keys,
      now,
      telemetry: this.telemetry,
      reporter: this.#reporter(),
      signers: () => signingKeys.signers(),
      supervisor,
    })
    this.#writer = new EventWriter(forCallers, this.#worker, now)
    this.#replays = new ReplayRunner({ storage, options, now, wakeWorker: () => this.#worker.wake(), supervisor })
    this.#operatorSink = new OperatorSink(this.#ctx, this.#writer)
    this.#commits = new CommitWatcher(() => this.#worker.wake(), options.delivery.pollIntervalMs)
    const { retention } = options
    if (retention)
      this.#pruner = new Pruner(storage, {
        windowMs: retention.events,
        batchSize: retention.batchSize,
        intervalMs: retention.intervalMs,
        // Live work: deliveries in flight, or a publish in the last second.
        busy: () => this.#worker.inFlight > 0 || performance.now() - this.#writer.lastWriteAt < 1000,
        logger: options.logger,
        supervisor,
        now,
      })
  }

  /** Turns what delivery reports (storage records) into API shapes and host events. */
  #reporter(): DeliveryReporter {
    return {
      attempted: (attempt) => {
        const name = attempt.status === 'success' ? 'delivery.succeeded' : 'delivery.failed'
        if (this.listenerCount(name) > 0)
          this.emit(name, { tenant_id: attempt.tenant_id, event_id: attempt.event_id, destination_id: attempt.destination_id, attempt: events.toDeliveryAttempt(attempt) })
      },
      alert: (alert) => this.emit('alert', alert),
      wants: (topic) => this.listenerCount(topic) > 0 || this.#operatorSink.accepts(topic),
      operatorEvent: (topic, data) => {
        const event = OperatorSink.envelope(topic, data, this.#ctx.now())
        // Each topic's listeners get that topic's envelope (OutflowEvents); the compiler cannot follow the pairing.
        if (this.listenerCount(topic) > 0) (this.emit as (name: string, event: OperatorEvent) => boolean)(topic, event)
        if (this.#operatorSink.accepts(topic)) this.#operatorSink.publish(event)
      },
      destinationDisabled: (event) => this.emit('destination.disabled', event),
      publicDestination: (record) => {
        // An alert about a destination whose credentials cannot be read still goes out, without the destination.
        try {
          return destinations.toDestination(this.#ctx, record)
        } catch (err) {
          if (err instanceof CredentialsError) return null
          throw err
        }
      },
    }
  }

  /** Set up the operator sink and start the delivery worker (createOutflow does this; the worker unless `delivery.worker` is false). */
  async start(): Promise<void> {
    await this.#ctx.signingKeys.start()
    await ensureOperatorSink(this.#ctx)
    if (this.options.delivery.worker) {
      this.#worker.start()
      this.#replays.start()
    }
    this.#pruner?.start()
    this.#stopObservingQueue ??= this.telemetry.observeQueue(async () => {
      const now = this.#ctx.now()
      const { due, oldest_due_at } = await this.storage.queueStats(now)
      return { depth: due, lagSeconds: oldest_due_at ? Math.max(0, now.getTime() - oldest_due_at.getTime()) / 1000 : 0 }
    })
    this.options.logger.info({ storage: this.storage.dialect, worker: this.options.delivery.worker, worker_id: this.#worker.id }, 'outflow started')
  }

  /** Apply pending storage migrations (createOutflow does this unless `migrate` is false). */
  migrate(): Promise<void> {
    return this.storage.migrate()
  }

  /**
   * Serve the `/api/v1` HTTP API from a Web-standard Request.
   *
   * @example
   * Bun.serve({ fetch: (req) => outflow.fetch(req) })
   */
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
    return this.#noteDeprecatedTopics(await destinations.createDestination(this.#ctx, tenantId, body), 'created')
  }
  /** One destination of a tenant, credentials masked. */
  getDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return destinations.getDestination(this.#ctx, tenantId, destinationId)
  }
  /** PATCH: JSON merge patch for config, credentials, metadata and delivery_metadata; topics and filter are replaced. */
  async updateDestination(tenantId: string, destinationId: string, body: unknown): Promise<Destination> {
    return this.#noteDeprecatedTopics(await destinations.updateDestination(this.#ctx, tenantId, destinationId, body), 'updated')
  }
  /** A destination subscribed to deprecated topics still works: its answer and the log say what replaces them. */
  #noteDeprecatedTopics(destination: Destination, change: 'created' | 'updated'): Destination {
    const deprecated = topics.deprecatedTopics(this.#ctx, destination.topics)
    if (deprecated.length === 0) return destination
    const replaced = deprecated.map((t) => (t.replaced_by ? `"${t.name}" (replaced by "${t.replaced_by}")` : `"${t.name}"`)).join(', ')
    this.options.logger.warn({ destination_id: destination.id, deprecated_topics: deprecated }, `destination ${change} with deprecated topics: ${replaced}`)
    return { ...destination, deprecated_topics: deprecated }
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
    const { replay } = parseInput(EnableQuerySchema, query, { code: 'bad_request' })
    const destination: Destination & { recovery?: Recovery } = await destinations.setDestinationDisabled(this.#ctx, tenantId, destinationId, false)
    const recovery = await replays.recoveryAfterEnable(this.#ctx, tenantId, destinationId, replay === 'skipped')
    if (recovery) destination.recovery = recovery
    return destination
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
  async replayDestination(tenantId: string, destinationId: string, body: unknown): Promise<ReplayJob> {
    const job = await replays.replayDestination(this.#ctx, tenantId, destinationId, body)
    this.#replays.wake()
    return job
  }
  /** `replayDestination` for several destinations of a tenant (`destination_id`, default every enabled one): one job each. */
  async replayTenant(tenantId: string, body: unknown): Promise<ReplayJob[]> {
    const jobs = await replays.replayTenant(this.#ctx, tenantId, body)
    this.#replays.wake()
    return jobs
  }
  /** A replay job's progress. */
  getReplay(tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
    return replays.getReplay(this.#ctx, tenantId, destinationId, jobId)
  }
  /** Cancel a replay job; what it already handed to the worker (one batch at most) is still attempted. */
  cancelReplay(tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
    return replays.cancelReplay(this.#ctx, tenantId, destinationId, jobId)
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
    if (this.#closed) return Promise.reject(new OutflowError('unavailable', 'the Outflow engine is closed'))
    if (tx !== undefined) return publishInTransaction(this.#ctx, inputs, single, tx)
    return publishEvents(this.#ctx, this.#writer, inputs, single)
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
    if (this.#closed) throw new OutflowError('unavailable', 'the Outflow engine is closed')
    return publishThroughConnection(this.#ctx, inputs, single, db, (host, event) => this.#commits.watch(host, event))
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
  /** Enqueue one manual attempt now, whatever the automatic schedule. */
  async retryDelivery(tenantId: string, destinationId: string, eventId: string): Promise<{ success: true }> {
    const result = await events.retryDelivery(this.#ctx, tenantId, destinationId, eventId)
    this.#worker.wake()
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
    const { overlap } = parseInput(RotateSigningKeySchema, body ?? {})
    return this.#ctx.signingKeys.rotate(overlap)
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
    return checkHealth(this.#ctx, { enabled: this.options.delivery.worker, running: this.#worker.running }, this.#supervisor, options)
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
   * `locked: true` means another instance is pruning.
   *
   * @example
   * const { events } = await outflow.prune()
   */
  prune(): Promise<PruneResult> {
    if (!this.#pruner) return Promise.reject(new OutflowError('validation', 'retention is not configured: createOutflow({ retention: { events: "30d" } })'))
    if (this.#closed) return Promise.reject(new OutflowError('unavailable', 'the Outflow engine is closed'))
    return this.#pruner.prune()
  }

  /** Stop claiming, drain in-flight attempts (bounded), release leases, close connections. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#stopObservingQueue?.()
    this.#commits.close()
    // Publishes already accepted are committed before the worker stops.
    await this.#writer.drain()
    await this.#pruner?.close()
    await this.#replays.close()
    await this.#worker.close()
    this.#ctx.signingKeys.close()
    // Operator events raised by the last results are committed too (delivered after a restart).
    await this.#writer.drain()
    await this.storage.close()
    this.options.logger.info({ worker_id: this.#worker.id }, 'outflow stopped')
  }

  /** Whether `close()` has been called. */
  get closed(): boolean {
    return this.#closed
  }
}
