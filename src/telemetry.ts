import type * as OtelApi from '@opentelemetry/api'
import { loadPeer } from './load-peer.js'

// OpenTelemetry through @opentelemetry/api only, an optional peer dependency: without it, or without
// an SDK registered by the host, every method here returns at once and allocates nothing. No public
// signature names an @opentelemetry/api type, so the declarations need not resolve the package.

type Api = typeof OtelApi

export interface TelemetrySettings {
  /** Send the attempt's W3C trace context (`traceparent`, `tracestate`) with webhook requests. */
  propagateTraceContext: boolean
}

/** The trace context of the publish that created a delivery, carried in memory to its attempt spans. */
export interface TraceLink {
  readonly traceId: string
  readonly spanId: string
  readonly traceFlags: number
}

/** The fields of a published event that spans and metrics carry. */
export type PublishedEvent = { tenant_id: string; id: string; topic: string }

/** What a publish call recorded, per event (same order as the events). */
export interface PublishOutcome {
  duplicate: boolean
  destination_ids: string[]
}

export interface AttemptSpanAttributes {
  tenant_id: string
  destination_id: string
  destination_type: string
  event_id: string
  attempt_number: number
}

export interface AttemptOutcome {
  status: 'success' | 'failed'
  response_status_code: number | null
  error_kind: string | null
}

/** An attempt in progress: headers to propagate, then `end` with its outcome. */
export interface AttemptSpan {
  /** `traceparent` (and `tracestate`) of this attempt when propagation is on. */
  readonly headers: Record<string, string> | undefined
  end(outcome: AttemptOutcome): void
}

/** Queue figures for the observable gauges (`outflow.queue.depth`, `outflow.queue.lag`). */
export type QueueObserver = () => Promise<{ depth: number; lagSeconds: number }>

interface Instruments {
  published: OtelApi.Counter
  schemaInvalid: OtelApi.Counter
  eligible: OtelApi.Counter
  delivered: OtelApi.Counter
  deliveryLatency: OtelApi.Histogram
  apiLatency: OtelApi.Histogram
  queueDepth: OtelApi.ObservableGauge
  queueLag: OtelApi.ObservableGauge
}

const scope = { name: 'outflow', version: '0.1.0' }

/**
 * Import @opentelemetry/api when it is installed; undefined otherwise (telemetry stays off).
 *
 * @example
 * const telemetry = new Telemetry(await loadOpenTelemetry(), { propagateTraceContext: false })
 */
export async function loadOpenTelemetry(): Promise<unknown> {
  try {
    return await loadPeer<unknown>('@opentelemetry/api', 'telemetry')
  } catch {
    return undefined
  }
}

/**
 * The engine's spans and metrics. Metric names follow Hookdeck Outpost's (`published_events`,
 * `eligible_events`, `delivered_events`, `delivery_latency`, `api_response_latency`); the queue
 * gauges are Outflow's own. Instruments come from the meter provider registered when the engine is
 * created; spans from the tracer provider registered at the time of each span.
 */
export class Telemetry {
  readonly #api: Api | undefined
  readonly #settings: TelemetrySettings
  readonly #tracer: OtelApi.Tracer | undefined
  readonly #noopTracerProvider: OtelApi.TracerProvider | undefined
  readonly #instruments: Instruments | undefined
  readonly #meter: OtelApi.Meter | undefined

  /** `api`: the @opentelemetry/api module (see `loadOpenTelemetry`), or undefined for no telemetry. */
  constructor(otel: unknown, settings: TelemetrySettings) {
    const api = otel as Api | undefined
    this.#api = api
    this.#settings = settings
    if (!api) return
    this.#tracer = api.trace.getTracer(scope.name, scope.version)
    // A fresh proxy's delegate is the API's no-op provider: the global one is that until an SDK registers.
    this.#noopTracerProvider = new api.ProxyTracerProvider().getDelegate()
    const meter = api.metrics.getMeter(scope.name, scope.version)
    if (meter.constructor === api.createNoopMeter().constructor) return
    this.#meter = meter
    this.#instruments = {
      published: meter.createCounter('published_events', { description: 'Events published (duplicates excluded)' }),
      schemaInvalid: meter.createCounter('schema_invalid_events', { description: 'Published events whose data did not match their topic schema, by topic and validation mode (warn: stored; enforce: refused)' }),
      eligible: meter.createCounter('eligible_events', { description: 'Published events that matched at least one destination' }),
      delivered: meter.createCounter('delivered_events', { description: 'Delivery attempts, by status and destination type' }),
      deliveryLatency: meter.createHistogram('delivery_latency', { unit: 'ms', description: 'From publish to the end of an attempt' }),
      apiLatency: meter.createHistogram('api_response_latency', { unit: 'ms', description: 'HTTP API response time, by method, route and status' }),
      queueDepth: meter.createObservableGauge('outflow.queue.depth', { unit: '{delivery}', description: 'Deliveries due now and not yet attempted' }),
      queueLag: meter.createObservableGauge('outflow.queue.lag', { unit: 's', description: 'Age of the oldest due delivery' }),
    }
  }

  /** Whether a tracer provider is registered (checked per span, so a host may register late). */
  #tracing(): boolean {
    const provider = this.#api?.trace.getTracerProvider() as OtelApi.ProxyTracerProvider | undefined
    return provider !== undefined && provider.getDelegate() !== this.#noopTracerProvider
  }

  /**
   * Run a publish inside an `outflow.publish` span (child of the caller's active span) and count it.
   * `write` gets the span's context to carry to the attempt spans of the deliveries it creates.
   */
  async publish<R extends PublishOutcome>(events: PublishedEvent[], write: (link: TraceLink | undefined) => Promise<R[]>): Promise<R[]> {
    const span = this.#startPublish(events)
    let results: R[]
    try {
      results = await write(span?.spanContext())
    } catch (err) {
      this.#failPublish(span, err)
      throw err
    }
    return this.#endPublish(span, events, results)
  }

  /** `publish` for a synchronous write (publishSync inside a host's SQLite transaction). */
  publishSync<R extends PublishOutcome>(events: PublishedEvent[], write: (link: TraceLink | undefined) => R[]): R[] {
    const span = this.#startPublish(events)
    let results: R[]
    try {
      results = write(span?.spanContext())
    } catch (err) {
      this.#failPublish(span, err)
      throw err
    }
    return this.#endPublish(span, events, results)
  }

  /** Count events whose `data` failed their topic's schema (`warn`: stored and delivered; `enforce`: refused). */
  countSchemaInvalid(topic: string, validation: 'warn' | 'enforce', count = 1): void {
    this.#instruments?.schemaInvalid.add(count, { topic, validation })
  }

  #startPublish(events: PublishedEvent[]): OtelApi.Span | undefined {
    const api = this.#api
    return api && this.#tracing() ? this.#tracer!.startSpan('outflow.publish', { kind: api.SpanKind.PRODUCER, attributes: publishAttributes(events) }, api.context.active()) : undefined
  }

  #failPublish(span: OtelApi.Span | undefined, err: unknown): void {
    if (!span) return
    span.setStatus({ code: this.#api!.SpanStatusCode.ERROR, message: err instanceof Error ? err.name : 'error' })
    span.end()
  }

  #endPublish<R extends PublishOutcome>(span: OtelApi.Span | undefined, events: PublishedEvent[], results: R[]): R[] {
    if (span) {
      span.setAttribute('outflow.destination.matched_count', results.reduce((n, r) => n + r.destination_ids.length, 0))
      if (results.length === 1) span.setAttribute('outflow.event.duplicate', results[0]!.duplicate)
      span.end()
    }
    const m = this.#instruments
    if (m)
      results.forEach((r, i) => {
        if (r.duplicate) return
        const attributes = { topic: events[i]!.topic }
        m.published.add(1, attributes)
        if (r.destination_ids.length > 0) m.eligible.add(1, attributes)
      })
    return results
  }

  /** Start an `outflow.attempt` span linked to its publish; undefined when tracing is off. */
  startAttempt(attributes: AttemptSpanAttributes, link: TraceLink | undefined): AttemptSpan | undefined {
    const api = this.#api
    if (!api || !this.#tracing()) return undefined
    const span = this.#tracer!.startSpan('outflow.attempt', {
      kind: api.SpanKind.CLIENT,
      root: true,
      links: link ? [{ context: link as OtelApi.SpanContext }] : [],
      attributes: {
        'outflow.tenant_id': attributes.tenant_id,
        'outflow.destination.id': attributes.destination_id,
        'outflow.destination.type': attributes.destination_type,
        'outflow.event.id': attributes.event_id,
        'outflow.attempt.number': attributes.attempt_number,
      },
    })
    const headers = this.#settings.propagateTraceContext ? traceContextHeaders(span.spanContext()) : undefined
    return {
      headers,
      end(outcome) {
        span.setAttribute('outflow.attempt.status', outcome.status)
        if (outcome.response_status_code !== null) span.setAttribute('http.response.status_code', outcome.response_status_code)
        if (outcome.status === 'failed') {
          span.setAttribute('error.type', outcome.error_kind ?? 'unknown')
          span.setStatus({ code: api.SpanStatusCode.ERROR, message: outcome.error_kind ?? 'unknown' })
        }
        span.end()
      },
    }
  }

  /** Count an attempt and its publish-to-end latency. */
  recordDelivered(destinationType: string, status: 'success' | 'failed', latencyMs: number): void {
    const m = this.#instruments
    if (!m) return
    m.delivered.add(1, { status, type: destinationType })
    m.deliveryLatency.record(latencyMs, { status, type: destinationType })
  }

  /** Record one HTTP API response; `route` is the route's template (`/tenants/{tenant_id}`), never the raw path. */
  recordApiResponse(method: string, route: string, status: number, durationMs: number): void {
    this.#instruments?.apiLatency.record(durationMs, { method, route, status })
  }

  /** Report queue depth and lag through `observe` at each collection; returns the unsubscribe function. */
  observeQueue(observe: QueueObserver): () => void {
    const m = this.#instruments
    const meter = this.#meter
    if (!m || !meter) return () => {}
    const callback: OtelApi.BatchObservableCallback = async (result) => {
      const { depth, lagSeconds } = await observe()
      result.observe(m.queueDepth, depth)
      result.observe(m.queueLag, lagSeconds)
    }
    meter.addBatchObservableCallback(callback, [m.queueDepth, m.queueLag])
    return () => meter.removeBatchObservableCallback(callback, [m.queueDepth, m.queueLag])
  }
}

function publishAttributes(events: { tenant_id: string; id: string; topic: string }[]): OtelApi.Attributes {
  if (events.length === 1) return { 'outflow.tenant_id': events[0]!.tenant_id, 'outflow.event.id': events[0]!.id, 'outflow.event.topic': events[0]!.topic, 'outflow.event.count': 1 }
  return { 'outflow.event.count': events.length }
}

/** W3C Trace Context headers of a span, formatted directly (no propagator needs to be registered). */
function traceContextHeaders(context: OtelApi.SpanContext): Record<string, string> {
  const flags = (context.traceFlags & 0xff).toString(16).padStart(2, '0')
  const headers: Record<string, string> = { traceparent: `00-${context.traceId}-${context.spanId}-${flags}` }
  const state = context.traceState?.serialize()
  if (state) headers.tracestate = state
  return headers
}
