import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { createAdaptorServer } from '@hono/node-server'
import { metrics } from '@opentelemetry/api'
import { MeterProvider } from '@opentelemetry/sdk-metrics'
import express from 'express'
import Fastify from 'fastify'
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { OutflowError } from '../../src/errors.js'
import { prometheusMetrics, type PrometheusMetrics } from '../../src/prometheus.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { histograms, parsePrometheusText, samples, scopeLabels, scrape } from '../support/prometheus-text.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const token = 'scrape-token-0123456789'
const cleanups: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  metrics.disable()
})

/** An engine on in-memory SQLite, created after the meter provider (it takes its instruments then). */
async function engine(): Promise<Outflow> {
  const outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), apiKey: 'embedder-admin-key-0123456789', allowPrivateNetworks: true })
  cleanups.push(() => outflow.close())
  return outflow
}

function listen(server: http.Server): Promise<string> {
  cleanups.push(() => new Promise((done) => (server.closeAllConnections(), server.close(() => done()))))
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
}

/** /metrics mounted on each framework as docs/operating.md shows it; the origin of each server. */
async function mountEverywhere(prometheus: PrometheusMetrics): Promise<Record<string, string>> {
  const app = express()
  app.get('/metrics', prometheus.listener)
  const hono = new Hono()
  hono.get('/metrics', (c) => prometheus.fetch(c.req.raw))
  const fastify = Fastify()
  fastify.get('/metrics', (request, reply) => {
    reply.hijack()
    prometheus.listener(request.raw, reply.raw)
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  cleanups.push(() => fastify.close())
  return {
    express: await listen(http.createServer(app)),
    hono: await listen(createAdaptorServer({ fetch: hono.fetch }) as http.Server),
    fastify: `http://127.0.0.1:${(fastify.server.address() as AddressInfo).port}`,
  }
}

describe('outflow/prometheus for embedders', () => {
  it("registers a MeterProvider whose metrics Express, Hono and Fastify serve at /metrics behind the bearer token, the engine's among them", async () => {
    const prometheus = await prometheusMetrics({ bearerToken: token })
    cleanups.push(() => prometheus.shutdown())
    const outflow = await engine()
    const receiver = await startReceiver((r) => (r.path === '/fail' ? { status: 503 } : {}))
    cleanups.push(() => receiver.close())
    await outflow.upsertTenant('acme', {})
    for (const path of ['/ok', '/fail']) await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}${path}` } })
    await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: {}, eligible_for_retry: false })
    await waitFor(async () => samples(await parse(prometheus), 'delivered_events_total').length === 2, 20_000, 'both attempts counted')

    for (const [framework, origin] of Object.entries(await mountEverywhere(prometheus))) {
      const url = `${origin}/metrics`
      expect((await fetch(url)).status, framework).toBe(401)
      expect((await fetch(url, { headers: { authorization: 'Bearer not-the-token' } })).status, framework).toBe(401)
      const scraped = await scrape(url, { authorization: `Bearer ${token}` })
      expect(samples(scraped, 'delivered_events_total').map((s) => s.labels.status).sort(), framework).toEqual(['failed', 'success'])
      const latency = histograms(scraped, 'delivery_latency_milliseconds').sort((a, b) => a.labels.status!.localeCompare(b.labels.status!))
      expect(latency.map((h) => [h.labels, h.count]), framework).toEqual([
        [{ status: 'failed', type: 'webhook', ...scopeLabels }, 1],
        [{ status: 'success', type: 'webhook', ...scopeLabels }, 1],
      ])
      expect(samples(scraped, 'target_info')[0]!.labels.telemetry_sdk_language, framework).toBe('nodejs')
    }
  })

  it('refuses to register a second global MeterProvider, and registers again once shut down', async () => {
    const first = await prometheusMetrics()
    const refused = await prometheusMetrics().catch((error: unknown) => error)
    expect(refused).toBeInstanceOf(OutflowError)
    expect((refused as OutflowError).code).toBe('conflict')
    expect((refused as OutflowError).message).toMatch(/already registered: call prometheusMetrics\(\{ register: false \}\)/)
    await first.shutdown()
    const second = await prometheusMetrics()
    cleanups.push(() => second.shutdown())
    const outflow = await engine()
    await outflow.upsertTenant('acme', {})
    await outflow.publish({ tenant_id: 'acme', topic: 'user.created', data: {} })
    expect(samples(await parse(second), 'published_events_total')).toEqual([{ labels: { topic: 'user.created', ...scopeLabels }, value: 1 }])
  })

  it("with register: false, reads through the host's own MeterProvider, and answers 405 to other methods", async () => {
    const prometheus = await prometheusMetrics({ register: false })
    const provider = new MeterProvider({ readers: [prometheus.reader] })
    metrics.setGlobalMeterProvider(provider)
    cleanups.push(() => provider.shutdown())
    const outflow = await engine()
    await outflow.upsertTenant('acme', {})
    await outflow.publish({ tenant_id: 'acme', topic: 'user.created', data: {} })
    const response = await prometheus.fetch(new Request('http://host/metrics'))
    expect(response.status).toBe(200)
    expect(await response.text()).toMatch(/^published_events_total\{topic="user\.created",otel_scope_name="outflow",otel_scope_version="0\.1\.0"\} 1$/m)
    const head = await prometheus.fetch(new Request('http://host/metrics', { method: 'HEAD' }))
    expect([head.status, await head.text()]).toEqual([200, ''])
    const post = await prometheus.fetch(new Request('http://host/metrics', { method: 'POST' }))
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
  })
})

/** The handler's text, parsed. */
async function parse(prometheus: PrometheusMetrics) {
  return parsePrometheusText(await prometheus.scrape())
}
