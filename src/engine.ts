import { randomBytes } from 'node:crypto'
import { EventEmitter } from 'node:events'
import { encryptionKeyBytes } from './credentials.js'
import type { DeliveryReporter, OutflowEvents } from './delivery/events.js'
import { EventWriter } from './delivery/event-writer.js'
import { DeliveryWorker } from './delivery/worker.js'
import type { EngineContext } from './engine/context.js'
import * as destinations from './engine/destinations.js'
import * as events from './engine/events.js'
import * as metrics from './engine/metrics.js'
import { publishEvents } from './engine/publish.js'
import { Pruner, type PruneResult } from './engine/pruner.js'
import * as tenants from './engine/tenants.js'
import { OutflowError } from './errors.js'
import type { DestinationTypeSchema } from './model/destination-type.js'
import type { Destination, ListDestinationsQuery } from './model/destination.js'
import type { DeliveryAttempt, Event, ListAdminEventsQuery, ListDestinationEventsQuery, ListEventsQuery, PublishResult } from './model/event.js'
import type { AttemptMetricsQuery, EventMetricsQuery, MetricsResponse } from './model/metrics.js'
import type { Page } from './model/pagination.js'
import type { ListTenantsQuery, Tenant } from './model/tenant.js'
import type { ResolvedOptions } from './options.js'
import type { Storage } from './storage/storage.js'

export type { OutflowEvents, DeliveryOutcome, AlertPayload, DestinationDisabled } from './delivery/events.js'
export type { MetricsScope } from './engine/metrics.js'
export type { PruneResult } from './engine/pruner.js'

/** Builds the HTTP handler of an engine (src/http's `createHttpHandler`, passed in by `createOutflow`). */
export type HttpHandlerFactory = (outflow: Outflow) => (request: Request) => Promise<Response>

/**
 * The Outflow engine: the typed API of every operation, the delivery worker, and `fetch` for HTTP.
 * Create it with `createOutflow`.
 */
export class Outflow extends EventEmitter<OutflowEvents> {
  readonly options: ResolvedOptions
  readonly storage: Storage
  readonly #ctx: EngineContext
  readonly #worker: DeliveryWorker
  readonly #writer: EventWriter
  readonly #pruner: Pruner | undefined
  readonly #createHandler: HttpHandlerFactory | undefined
  #handler?: (request: Request) => Promise<Response>
  #closed = false

  /** Prefer `createOutflow`, which also migrates, starts the worker and serves HTTP. */
  constructor(storage: Storage, options: ResolvedOptions, createHandler?: HttpHandlerFactory) {
    super()
    this.options = options
    this.storage = storage
    this.#createHandler = createHandler
    let jwtSecret = options.jwtSecret
    if (!jwtSecret) {
      jwtSecret = randomBytes(32).toString('base64url')
      options.logger.warn('no jwtSecret configured: tenant tokens are signed with a random per-process secret and stop working on restart')
    }
    this.#ctx = {
      storage,
      options,
      encryptionKey: options.encryptionKey ? encryptionKeyBytes(options.encryptionKey) : undefined,
      jwtSecret,
      now: () => new Date(),
      destinationChanged: (tenantId, destinationId) => this.#worker.destinationChanged(tenantId, destinationId),
    }
    const { encryptionKey, now } = this.#ctx
    this.#worker = new DeliveryWorker({ storage, options, encryptionKey, now, reporter: this.#reporter() })
    this.#writer = new EventWriter(storage, this.#worker, now)
    const { retention } = options
    if (retention)
      this.#pruner = new Pruner(storage, { windowMs: retention.events, batchSize: retention.batchSize, intervalMs: retention.intervalMs, logger: options.logger, now })
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
      destinationDisabled: (event) => this.emit('destination.disabled', event),
      publicDestination: (record) => destinations.toDestination(this.#ctx, record),
    }
  }

  /** Start the delivery worker (unless `delivery.worker` is false) and the pruner (with `retention`); createOutflow does this. */
  start(): void {
    if (this.options.delivery.worker) this.#worker.start()
    this.#pruner?.start()
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
  listTenants(query?: ListTenantsQuery): Promise<Page<Tenant> & { count: number }> {
    return tenants.listTenants(this.#ctx, query)
  }
  getTenant(tenantId: string): Promise<Tenant> {
    return tenants.getTenant(this.#ctx, tenantId)
  }
  /** Create or update a tenant; `created` tells which. */
  upsertTenant(tenantId: string, body?: unknown): Promise<{ tenant: Tenant; created: boolean }> {
    return tenants.upsertTenant(this.#ctx, tenantId, body)
  }
  deleteTenant(tenantId: string): Promise<{ success: true }> {
    return tenants.deleteTenant(this.#ctx, tenantId)
  }
  getPortalRedirect(tenantId: string, query?: { theme?: unknown }): Promise<{ redirect_url: string; tenant_id: string }> {
    return tenants.getPortalRedirect(this.#ctx, tenantId, query)
  }
  getTenantToken(tenantId: string): Promise<{ token: string; tenant_id: string }> {
    return tenants.getTenantToken(this.#ctx, tenantId)
  }
  /** The secret tenant tokens are signed with (for the HTTP layer's verification). */
  get jwtSecret(): string {
    return this.#ctx.jwtSecret
  }

  // --- destinations ---
  listDestinations(tenantId: string, query?: ListDestinationsQuery): Promise<Destination[]> {
    return destinations.listDestinations(this.#ctx, tenantId, query)
  }
  createDestination(tenantId: string, body: unknown): Promise<Destination> {
    return destinations.createDestination(this.#ctx, tenantId, body)
  }
  getDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return destinations.getDestination(this.#ctx, tenantId, destinationId)
  }
  /** PATCH: JSON merge patch for config, credentials, metadata and delivery_metadata; topics and filter are replaced. */
  updateDestination(tenantId: string, destinationId: string, body: unknown): Promise<Destination> {
    return destinations.updateDestination(this.#ctx, tenantId, destinationId, body)
  }
  deleteDestination(tenantId: string, destinationId: string): Promise<{ success: true }> {
    return destinations.deleteDestination(this.#ctx, tenantId, destinationId)
  }
  enableDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return destinations.setDestinationDisabled(this.#ctx, tenantId, destinationId, false)
  }
  disableDestination(tenantId: string, destinationId: string): Promise<Destination> {
    return destinations.setDestinationDisabled(this.#ctx, tenantId, destinationId, true)
  }
  async listDestinationTypes(): Promise<DestinationTypeSchema[]> {
    return destinations.listDestinationTypes()
  }
  async getDestinationType(type: string): Promise<DestinationTypeSchema> {
    return destinations.getDestinationType(type)
  }

  // --- events ---
  /** Record an event and its deliveries durably, then deliver. Idempotent on (tenant_id, id). */
  async publish(input: unknown): Promise<PublishResult> {
    const [result] = await this.publishMany([input], { single: true })
    return result!
  }
  /** Publish a batch in one transaction. */
  publishMany(inputs: unknown[], { single = false }: { single?: boolean } = {}): Promise<PublishResult[]> {
    if (this.#closed) return Promise.reject(new OutflowError('unavailable', 'the Outflow engine is closed'))
    return publishEvents(this.#ctx, this.#writer, inputs, single)
  }
  /** Admin listing of events across tenants. */
  listAdminEvents(query?: ListAdminEventsQuery): Promise<Page<Event>> {
    return events.listAdminEvents(this.#ctx, query)
  }
  listEvents(tenantId: string, query?: ListEventsQuery): Promise<Page<Event>> {
    return events.listEvents(this.#ctx, tenantId, query)
  }
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
    // Publishes already accepted are committed before the worker stops.
    await this.#writer.drain()
    await this.#pruner?.close()
    await this.#worker.close()
    await this.storage.close()
  }

  get closed(): boolean {
    return this.#closed
  }
}
