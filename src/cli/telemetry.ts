import type * as Api from '@opentelemetry/api'
import type * as ContextHooks from '@opentelemetry/context-async-hooks'
import type * as MetricExporter from '@opentelemetry/exporter-metrics-otlp-http'
import type * as TraceExporter from '@opentelemetry/exporter-trace-otlp-http'
import type * as Resources from '@opentelemetry/resources'
import type * as SdkMetrics from '@opentelemetry/sdk-metrics'
import type * as SdkTrace from '@opentelemetry/sdk-trace-base'
import { OutflowError } from '../errors.js'
import { loadPeer } from '../load-peer.js'

/** The OpenTelemetry packages `outflow serve` exports traces and metrics with (all optional peers). */
export const sdkPackages = [
  '@opentelemetry/api',
  '@opentelemetry/context-async-hooks',
  '@opentelemetry/exporter-trace-otlp-http',
  '@opentelemetry/exporter-metrics-otlp-http',
  '@opentelemetry/resources',
  '@opentelemetry/sdk-metrics',
  '@opentelemetry/sdk-trace-base',
] as const

/** Whether the standard OTLP variables ask for export (and OTEL_SDK_DISABLED does not forbid it). */
export function otlpRequested(env: NodeJS.ProcessEnv): boolean {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return false
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT)
}

type Sdk = [typeof Api, typeof ContextHooks, typeof TraceExporter, typeof MetricExporter, typeof Resources, typeof SdkMetrics, typeof SdkTrace]

/**
 * Register the OpenTelemetry SDK with OTLP/HTTP exporters (endpoint, headers, service name from the
 * standard OTEL_* variables; service name `outflow` by default). Runs before `createOutflow`, which takes
 * its instruments from the meter provider registered then. Returns the shutdown, which flushes.
 *
 * @example
 * const stopTelemetry = otlpRequested(process.env) ? await startTelemetry() : async () => {}
 */
export async function startTelemetry(): Promise<() => Promise<void>> {
  const loaded = await Promise.allSettled(sdkPackages.map((name) => loadPeer(name, 'OpenTelemetry export')))
  const missing = sdkPackages.filter((_, i) => loaded[i]!.status === 'rejected')
  if (missing.length > 0)
    throw new OutflowError('unavailable', `OTEL_EXPORTER_OTLP_ENDPOINT is set but the OpenTelemetry SDK is not installed: npm install ${missing.join(' ')}`)
  const [api, hooks, traceExporter, metricExporter, resources, sdkMetrics, sdkTrace] = loaded.map((r) => (r as PromiseFulfilledResult<unknown>).value) as Sdk

  const resource = resources
    .defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': 'outflow' }))
    .merge(resources.detectResources({ detectors: [resources.envDetector] }))
  api.context.setGlobalContextManager(new hooks.AsyncLocalStorageContextManager().enable())
  const tracerProvider = new sdkTrace.BasicTracerProvider({ resource, spanProcessors: [new sdkTrace.BatchSpanProcessor(new traceExporter.OTLPTraceExporter())] })
  api.trace.setGlobalTracerProvider(tracerProvider)
  const meterProvider = new sdkMetrics.MeterProvider({
    resource,
    readers: [new sdkMetrics.PeriodicExportingMetricReader({ exporter: new metricExporter.OTLPMetricExporter(), exportIntervalMillis: 10_000 })],
  })
  api.metrics.setGlobalMeterProvider(meterProvider)
  return async () => {
    await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()])
  }
}
