import type * as Api from '@opentelemetry/api'
import type * as ContextHooks from '@opentelemetry/context-async-hooks'
import type * as MetricExporter from '@opentelemetry/exporter-metrics-otlp-http'
import type * as TraceExporter from '@opentelemetry/exporter-trace-otlp-http'
import type * as Resources from '@opentelemetry/resources'
import type * as SdkMetrics from '@opentelemetry/sdk-metrics'
import type * as SdkTrace from '@opentelemetry/sdk-trace-base'
import { loadPeers } from '../load-peer.js'
import { prometheusMetrics, prometheusPackages, type PrometheusMetrics } from '../prometheus.js'

/** What every metrics setup loads: the API, the resource and the metrics SDK. */
const metricsPackages = ['@opentelemetry/api', '@opentelemetry/resources', '@opentelemetry/sdk-metrics'] as const

/** What OTLP export loads besides. */
const otlpPackages = ['@opentelemetry/context-async-hooks', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/exporter-metrics-otlp-http', '@opentelemetry/sdk-trace-base'] as const

/** The OpenTelemetry packages `outflow serve` may use (all optional peers; the Docker image installs them). */
export const sdkPackages = [...new Set([...metricsPackages, ...otlpPackages, ...prometheusPackages])]

/** Whether the standard OTLP variables ask for export (and OTEL_SDK_DISABLED does not forbid it). */
export function otlpRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
}

/** What `serve` asks of OpenTelemetry. */
export interface TelemetryPlan {
  /** Export spans and metrics over OTLP/HTTP (see `otlpRequested`). */
  otlp: boolean
  /** Serve the metrics in Prometheus text format, requiring this bearer token when it is set. */
  prometheus: { bearerToken?: string } | undefined
}

/** The SDK `startTelemetry` registered. */
export interface StartedTelemetry {
  /** The /metrics handler, when the plan asked for Prometheus. */
  prometheus: PrometheusMetrics | undefined
  /** Flush and stop the exporters. */
  stop(): Promise<void>
}

type OtlpSdk = [typeof ContextHooks, typeof TraceExporter, typeof MetricExporter, typeof SdkTrace]

/**
 * Register the OpenTelemetry SDK for what the plan asks: one MeterProvider with a Prometheus reader,
 * an OTLP/HTTP exporting reader, or both, and with OTLP a tracer provider (endpoint, headers, service name
 * from the standard OTEL_* variables; service name `outflow` by default). Runs before `createOutflow`,
 * which takes its instruments from the meter provider registered then. Nothing to do: nothing loaded.
 *
 * @example
 * const telemetry = await startTelemetry({ otlp: otlpRequested(process.env), prometheus: { bearerToken: apiKey } })
 */
export async function startTelemetry({ otlp, prometheus }: TelemetryPlan): Promise<StartedTelemetry> {
  if (!otlp && !prometheus) return { prometheus: undefined, stop: async () => {} }
  const neededBy = [otlp && 'OpenTelemetry export (OTEL_EXPORTER_OTLP_ENDPOINT is set)', prometheus && 'Prometheus metrics (OUTFLOW_PROMETHEUS)'].filter(Boolean).join(' and ')
  // One error naming every package that is missing, before any is used.
  await loadPeers([...new Set([...metricsPackages, ...(otlp ? otlpPackages : []), ...(prometheus ? prometheusPackages : [])])], neededBy)
  const [api, resources, sdkMetrics] = await loadPeers<[typeof Api, typeof Resources, typeof SdkMetrics]>(metricsPackages, neededBy)
  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'outflow' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  const scrape = prometheus ? await prometheusMetrics({ register: false, bearerToken: prometheus.bearerToken }) : undefined
  const readers: SdkMetrics.IMetricReader[] = scrape ? [scrape.reader] : []
  let tracerProvider: SdkTrace.BasicTracerProvider | undefined
  if (otlp) {
    const [hooks, traceExporter, metricExporter, sdkTrace] = await loadPeers<OtlpSdk>(otlpPackages, neededBy)
    api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable())
    tracerProvider = new sdkTrace.BasicTracerProvider({ resource, spanProcessors: [new sdkTrace.BatchSpanProcessor(new traceExporter.OTLPTraceExporter())] })
    api.trace.setGlobalTracerProvider(tracerProvider)
    readers.push(new sdkMetrics.PeriodicExportingMetricReader({ exporter: new metricExporter.OTLPMetricExporter(), exportIntervalMillis: 10_000 }))
  }
  const meterProvider = new sdkMetrics.MeterProvider({ resource, readers })
  api.metrics.setGlobalMeterProvider(meterProvider)
  return {
    prometheus: scrape,
    async stop() {
      await Promise.all([tracerProvider?.shutdown(), meterProvider.shutdown()])
    },
  }
}
