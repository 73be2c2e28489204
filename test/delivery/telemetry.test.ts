import { metrics, trace } from '@opentelemetry/api'
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { Telemetry } from '../../src/telemetry.js'
import { apiKey, engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

/** The SDK with in-memory exporters, registered globally before the engines are created. */
function installSdk() {
  const spans = new InMemorySpanExporter()
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] })
  trace.setGlobalTracerProvider(tracerProvider)
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))
  /** Data points of one metric after a collection, each as { attributes, value }. */
  const points = async (name: string) => {
    await reader.forceFlush()
    const last = exporter.getMetrics().at(-1)
    const metric = last?.scopeMetrics.flatMap((s) => s.metrics).find((m) => m.descriptor.name === name)
    return (metric?.dataPoints ?? []) as { attributes: Record<string, unknown>; value: any }[]
  }
  return {
    spans,
    points,
    async uninstall() {
      await tracerProvider.shutdown()
      await reader.shutdown()
      trace.disable()
      metrics.disable()
    },
  }
}

const named = (spans: ReadableSpan[], name: string) => spans.filter((s) => s.name === name)

describe('OpenTelemetry without an SDK', () => {
  it('starts no span and records nothing, with or without @opentelemetry/api', async () => {
    for (const api of [undefined, await import('@opentelemetry/api')]) {
      const telemetry = new Telemetry(api, { propagateTraceContext: true })
      expect(telemetry.startAttempt({ tenant_id: 't', destination_id: 'd', destination_type: 'webhook', event_id: 'e', attempt_number: 1 }, undefined)).toBeUndefined()
      let link: unknown = 'not called'
      const results = await telemetry.publish([{ tenant_id: 't', id: 'e', topic: 'a' }], async (trace) => ((link = trace), [{ duplicate: false, destination_ids: ['d'] }]))
      expect(results).toEqual([{ duplicate: false, destination_ids: ['d'] }])
      expect(link).toBeUndefined()
      expect(telemetry.observeQueue(async () => ({ depth: 0, lagSeconds: 0 }))).toBeTypeOf('function')
    }
  })
})

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`OpenTelemetry: ${kind.name}`, () => {
    let sdk: ReturnType<typeof installSdk>
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      sdk = installSdk()
      receiver = await startReceiver((r) => (r.path === '/fail' ? { status: 500 } : {}))
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
      await sdk.uninstall()
    })

    it('traces a publish and its attempts (linked to it), sends traceparent, and counts events, deliveries and API calls', async () => {
      const outflow: Outflow = await kind.create({ telemetry: { propagateTraceContext: true } })
      await outflow.upsertTenant('acme', {})
      const ok = await outflow.createDestination('acme', { type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/ok` } })
      const failing = await outflow.createDestination('acme', { type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/fail` } })
      const published = await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: {}, eligible_for_retry: false })
      await outflow.publish({ tenant_id: 'acme', topic: 'user.created', data: {} }) // matches nothing
      expect((await outflow.publish({ id: published.id, tenant_id: 'acme', topic: 'order.created', data: {} })).duplicate).toBe(true)
      await waitFor(() => named(sdk.spans.getFinishedSpans(), 'outflow.attempt').length === 2, 10_000, 'two attempt spans')
      const admin = { authorization: `Bearer ${apiKey}` }
      expect((await outflow.fetch(new Request('http://host/api/v1/tenants/acme', { headers: admin }))).status).toBe(200)
      expect((await outflow.fetch(new Request('http://host/api/v1/nowhere', { headers: admin }))).status).toBe(404)

      const finished = sdk.spans.getFinishedSpans()
      const publish = named(finished, 'outflow.publish').find((s) => s.attributes['outflow.event.id'] === published.id && s.attributes['outflow.event.duplicate'] === false)!
      expect(publish.attributes).toMatchObject({ 'outflow.tenant_id': 'acme', 'outflow.event.topic': 'order.created', 'outflow.destination.matched_count': 2 })
      const attempts = named(finished, 'outflow.attempt')
      for (const span of attempts) {
        expect(span.links.map((l) => l.context)).toEqual([expect.objectContaining({ traceId: publish.spanContext().traceId, spanId: publish.spanContext().spanId })])
        expect(span.attributes).toMatchObject({ 'outflow.tenant_id': 'acme', 'outflow.event.id': published.id, 'outflow.destination.type': 'webhook', 'outflow.attempt.number': 1 })
      }
      const okSpan = attempts.find((s) => s.attributes['outflow.destination.id'] === ok.id)!
      const failedSpan = attempts.find((s) => s.attributes['outflow.destination.id'] === failing.id)!
      expect(okSpan.attributes).toMatchObject({ 'outflow.attempt.status': 'success', 'http.response.status_code': 200 })
      expect(okSpan.attributes['error.type']).toBeUndefined()
      expect(failedSpan.attributes).toMatchObject({ 'outflow.attempt.status': 'failed', 'http.response.status_code': 500, 'error.type': 'http_5xx' })
      expect(failedSpan.status.code).toBe(2) // ERROR
      // The receiver sees the attempt span as the parent of whatever it does with the request.
      const traceparent = (path: string) => receiver.on(path).find((r) => r.headers['webhook-id'] === published.id)!.headers.traceparent
      expect(traceparent('/ok')).toBe(`00-${okSpan.spanContext().traceId}-${okSpan.spanContext().spanId}-01`)
      expect(traceparent('/fail')).toBe(`00-${failedSpan.spanContext().traceId}-${failedSpan.spanContext().spanId}-01`)

      expect(await sdk.points('published_events')).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ attributes: { topic: 'order.created' }, value: 1 }),
          expect.objectContaining({ attributes: { topic: 'user.created' }, value: 1 }),
        ]),
      )
      expect(await sdk.points('eligible_events')).toEqual([expect.objectContaining({ attributes: { topic: 'order.created' }, value: 1 })])
      expect(await sdk.points('delivered_events')).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ attributes: { status: 'success', type: 'webhook' }, value: 1 }),
          expect.objectContaining({ attributes: { status: 'failed', type: 'webhook' }, value: 1 }),
        ]),
      )
      const latency = await sdk.points('delivery_latency')
      expect(latency).toHaveLength(2)
      expect(latency).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ attributes: { status: 'success', type: 'webhook' }, value: expect.objectContaining({ count: 1 }) }),
          expect.objectContaining({ attributes: { status: 'failed', type: 'webhook' }, value: expect.objectContaining({ count: 1 }) }),
        ]),
      )
      const api = await sdk.points('api_response_latency')
      expect(api.find((p) => p.attributes.route === '/tenants/{tenant_id}')).toMatchObject({ attributes: { method: 'GET', route: '/tenants/{tenant_id}', status: 200 }, value: { count: 1 } })
      expect(api.find((p) => p.attributes.route === 'unmatched')).toMatchObject({ attributes: { method: 'GET', status: 404 }, value: { count: 1 } })
      await outflow.close()
    })

    it('reports queue depth and the age of the oldest due delivery as gauges', async () => {
      // No worker: what is published stays due.
      const outflow = await kind.create({ delivery: { worker: false } })
      await outflow.upsertTenant('idle', {})
      const d = await outflow.createDestination('idle', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/ok` } })
      await outflow.publishMany([{ tenant_id: 'idle', topic: 'a', data: {} }, { tenant_id: 'idle', topic: 'b', data: {} }])
      // One delivery that fell due a minute ago.
      const minuteAgo = new Date(Date.now() - 60_000)
      await outflow.storage.insertEvents([
        {
          event: { tenant_id: 'idle', id: 'late', topic: 'c', time: minuteAgo, data: {}, metadata: {}, eligible_for_retry: true, created_at: minuteAgo },
          deliveries: [{ id: 'dlv_late', destination_id: d.id, next_attempt_at: minuteAgo }],
        },
      ])
      expect((await sdk.points('outflow.queue.depth')).map((p) => p.value)).toEqual([3])
      const [lag] = await sdk.points('outflow.queue.lag')
      expect(lag!.value).toBeGreaterThanOrEqual(60)
      await outflow.close()
    })
  })
}
