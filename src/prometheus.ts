// `outflow/prometheus`: the OpenTelemetry metrics of the process (the engine's among them) in Prometheus
// text format, for a host to mount at /metrics. Built on @opentelemetry/exporter-prometheus, a metric
// reader beside any other (OTLP) of the same MeterProvider; its own HTTP server is never started.
import type { IncomingMessage, ServerResponse } from 'node:http'
import type * as Api from '@opentelemetry/api'
import type * as Exporter from '@opentelemetry/exporter-prometheus'
import type * as Resources from '@opentelemetry/resources'
import type * as SdkMetrics from '@opentelemetry/sdk-metrics'
import { OutflowError } from './errors.js'
import { requireBearer } from './http/auth.js'
import { sendWebResponse, toWebRequest } from './http/node.js'
import { errorResponse } from './http/responses.js'
import { loadPeers } from './load-peer.js'
import { nameWithUnit } from './prometheus-names.js'

/** The packages `prometheusMetrics` loads (optional peers: install them beside outflow). */
export const prometheusPackages = ['@opentelemetry/api', '@opentelemetry/exporter-prometheus', '@opentelemetry/resources', '@opentelemetry/sdk-metrics'] as const

/** The content type of the Prometheus text exposition format. */
export const prometheusContentType = 'text/plain; version=0.0.4; charset=utf-8'

/** How `prometheusMetrics` serves and where its reader goes. */
export interface PrometheusOptions {
  /**
   * Answer only requests with `Authorization: Bearer <bearerToken>` (compared in constant time), 401
   * otherwise; without it, everyone who reaches the handler.
   */
  bearerToken?: string
  /**
   * `true` (the default): create a MeterProvider with the reader (its resource from the `OTEL_SERVICE_NAME`
   * and `OTEL_RESOURCE_ATTRIBUTES` variables) and register it as the global one. `false`: only create the
   * reader, for a MeterProvider of your own (`new MeterProvider({ readers: [prometheus.reader, …] })`).
   * Either way, before `createOutflow`: the engine takes its instruments from the provider registered then.
   */
  register?: boolean
}

/** The metrics in Prometheus text format, as a handler for each kind of server. */
export interface PrometheusMetrics {
  /** The metric reader, for your own MeterProvider's `readers` (with `register: false`). */
  readonly reader: SdkMetrics.IMetricReader
  /**
   * Answer a scrape: `GET` (or `HEAD`) gets 200 with the text, another method 405; a missing or wrong
   * bearer token, when one is set, 401. Mount it at any path (Hono: `app.get('/metrics', (c) => prometheus.fetch(c.req.raw))`).
   */
  fetch(request: Request): Promise<Response>
  /** `fetch` for node:http and Express: `app.get('/metrics', prometheus.listener)`. */
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void
  /** The exposition text of a collection now (without the handler's checks). */
  scrape(): Promise<string>
  /** Stop the reader, and the MeterProvider `prometheusMetrics` registered (which is then unregistered). */
  shutdown(): Promise<void>
}

type Peers = [typeof Api, typeof Exporter, typeof Resources, typeof SdkMetrics]

/**
 * Serve the process's OpenTelemetry metrics to Prometheus: counters get `_total`, histograms
 * `_bucket`/`_sum`/`_count`, units become name suffixes (`delivery_latency_milliseconds`), and the
 * resource is `target_info`. Needs `@opentelemetry/api`, `@opentelemetry/sdk-metrics`,
 * `@opentelemetry/resources` and `@opentelemetry/exporter-prometheus`.
 *
 * @example
 * const prometheus = await prometheusMetrics({ bearerToken: process.env.METRICS_TOKEN })
 * const outflow = await createOutflow({ storage, apiKey })
 * app.get('/metrics', prometheus.listener)
 */
export async function prometheusMetrics(options: PrometheusOptions = {}): Promise<PrometheusMetrics> {
  const [api, exporter, resources, sdk] = await loadPeers<Peers>(prometheusPackages, 'Prometheus metrics')
  const reader = new exporter.PrometheusExporter({ preventServerStart: true })
  const provider = options.register === false ? undefined : registerMeterProvider(api, resources, sdk, reader)
  const serializer = new exporter.PrometheusSerializer()

  const scrape = async () => {
    // Partial results (an observable callback that failed) are still served, as the exporter does.
    const { resourceMetrics } = await reader.collect()
    return serializer.serialize(withUnitSuffixes(resourceMetrics, sdk))
  }
  const fetch = async (request: Request): Promise<Response> => {
    try {
      if (options.bearerToken !== undefined) requireBearer(request.headers.get('authorization'), options.bearerToken)
      if (request.method !== 'GET' && request.method !== 'HEAD')
        throw new OutflowError('method_not_allowed', `${request.method} is not allowed: scrape with GET`, { headers: { Allow: 'GET, HEAD' } })
      const text = await scrape()
      return new Response(request.method === 'HEAD' ? null : text, { headers: { 'Content-Type': prometheusContentType, 'Cache-Control': 'no-store' } })
    } catch (error) {
      return errorResponse(error)
    }
  }
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    fetch(toWebRequest(req, req.url ?? '/'))
      .then((response) => sendWebResponse(res, response))
      .catch(() => res.destroy())
  }
  const shutdown = async () => {
    if (!provider) return reader.shutdown()
    await provider.shutdown()
    api.metrics.disable()
  }
  return { reader, fetch, listener, scrape, shutdown }
}

function registerMeterProvider(api: typeof Api, resources: typeof Resources, sdk: typeof SdkMetrics, reader: SdkMetrics.IMetricReader): SdkMetrics.MeterProvider {
  const resource = resources.defaultResource().merge(resources.detectResources({ detectors: [resources.envDetector] }))
  const provider = new sdk.MeterProvider({ resource, readers: [reader] })
  if (api.metrics.setGlobalMeterProvider(provider)) return provider
  void provider.shutdown()
  throw new OutflowError(
    'conflict',
    'a global OpenTelemetry MeterProvider is already registered: call prometheusMetrics({ register: false }) and pass its reader to that MeterProvider (new MeterProvider({ readers: [prometheus.reader] }))',
  )
}

/** The collected metrics with each unit as a suffix of the name (see prometheus-names.ts). */
function withUnitSuffixes(metrics: SdkMetrics.ResourceMetrics, sdk: typeof SdkMetrics): SdkMetrics.ResourceMetrics {
  const scopeMetrics = metrics.scopeMetrics.map((scope) => ({
    ...scope,
    metrics: scope.metrics.map((metric) => {
      const name = nameWithUnit(metric.descriptor.name, metric.descriptor.unit, metric.dataPointType === sdk.DataPointType.GAUGE)
      return { ...metric, descriptor: { ...metric.descriptor, name } }
    }),
  }))
  return { ...metrics, scopeMetrics }
}
