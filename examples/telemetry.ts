// OpenTelemetry for the example server: traces and metrics over OTLP/HTTP when
// OTEL_EXPORTER_OTLP_ENDPOINT is set (e.g. http://localhost:4318 for a local collector or Jaeger).
// Outflow only uses @opentelemetry/api; this is the host's side, and it must run before createOutflow.
import { context, metrics, trace } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'

/** Register the SDK with OTLP exporters (endpoint and headers from the standard OTEL_* variables); returns its shutdown. */
export function startTelemetry(): () => Promise<void> {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())] })
  trace.setGlobalTracerProvider(tracerProvider)
  const meterProvider = new MeterProvider({
    readers: [new PeriodicExportingMetricReader({ exporter: new OTLPMetricExporter(), exportIntervalMillis: 10_000 })],
  })
  metrics.setGlobalMeterProvider(meterProvider)
  return async () => {
    await Promise.all([tracerProvider.shutdown(), meterProvider.shutdown()])
  }
}
