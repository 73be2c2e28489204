import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { cliProcesses, serveStorages } from '../support/cli-process.js'
import { histograms, samples, scopeLabels, scrape } from '../support/prometheus-text.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const dir = mkdtempSync(join(tmpdir(), 'outflow-prometheus-'))
const cli = cliProcesses(dir)
const drops: (() => Promise<void>)[] = []
const apiKey = 'cli-test-admin-key-0123456789'
const admin = { authorization: `Bearer ${apiKey}` }

afterAll(async () => {
  cli.killAll()
  await Promise.all(drops.map((drop) => drop()))
  rmSync(dir, { recursive: true, force: true })
})

/** The queue gauges read the storage, so `serve` runs on each. */
const storages = serveStorages(dir, drops)

/** `outflow serve` with `env`; its API URL, /metrics URL, and a JSON API call with the admin key. */
async function serve(env: Record<string, string>) {
  const server = cli.run(['serve'], { OUTFLOW_API_KEY: apiKey, OUTFLOW_ALLOW_PRIVATE_NETWORKS: 'true', PORT: '0', ...env })
  const { url, metrics } = (await server.logged('listening')) as unknown as { url: string; metrics: string }
  const call = (method: string, path: string, body?: unknown) =>
    fetch(`${url}/api/v1${path}`, { method, headers: { ...admin, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  return { server, url, metrics, call }
}

for (const storage of storages) {
  describe.runIf(storage.available)(`outflow serve: Prometheus metrics on ${storage.name}`, { timeout: 120_000 }, () => {
    it('serves /metrics on the API port behind the admin key: delivery counters and histograms by status and type, the queue gauges, target_info', async () => {
      const receiver = await startReceiver((r) => (r.path === '/fail' ? { status: 500 } : {}))
      try {
        const { server, url, metrics, call } = await serve({ ...(await storage.env()), OUTFLOW_PROMETHEUS: 'true', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=test' })
        expect(metrics).toBe(`${url}/metrics`)

        for (const authorization of [undefined, 'Bearer wrong-key-0123456789', `Basic ${Buffer.from(`x:${apiKey}`).toString('base64')}`]) {
          const refused = await fetch(metrics, { headers: authorization ? { authorization } : {} })
          expect(refused.status, authorization).toBe(401)
          expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer realm="outflow"/)
          expect(await refused.text()).not.toContain('delivered_events')
        }
        expect((await call('PUT', '/tenants/acme', {})).status).toBe(201)
        // A tenant's token reads its own tenant's API, never the process's metrics.
        const { token } = (await (await call('GET', '/tenants/acme/token')).json()) as { token: string }
        expect((await fetch(metrics, { headers: { authorization: `Bearer ${token}` } })).status).toBe(401)
        expect((await fetch(metrics, { method: 'POST', headers: admin })).status).toBe(405)

        for (const path of ['/ok', '/fail']) expect((await call('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}${path}` } })).status).toBe(201)
        expect((await call('POST', '/publish', { tenant_id: 'acme', topic: 'order.created', data: { total: 42 }, eligible_for_retry: false })).status).toBe(202)
        await waitFor(() => receiver.received.length === 2, 20_000, 'both deliveries')

        // Attempts are counted as they end, and leave the queue once their results are written.
        const scraped = await waitFor(async () => {
          const m = await scrape(metrics, admin)
          return samples(m, 'delivered_events_total').length === 2 && samples(m, 'outflow_queue_depth')[0]?.value === 0 && m
        }, 20_000, 'both attempts counted and recorded')
        expect(scraped.delivered_events_total!.type).toBe('counter')
        expect(samples(scraped, 'delivered_events_total').sort((a, b) => a.labels.status!.localeCompare(b.labels.status!))).toEqual([
          { labels: { status: 'failed', type: 'webhook', ...scopeLabels }, value: 1 },
          { labels: { status: 'success', type: 'webhook', ...scopeLabels }, value: 1 },
        ])
        expect(samples(scraped, 'published_events_total')).toEqual([{ labels: { topic: 'order.created', ...scopeLabels }, value: 1 }])
        expect(samples(scraped, 'eligible_events_total')).toEqual([{ labels: { topic: 'order.created', ...scopeLabels }, value: 1 }])

        expect(scraped.delivery_latency_milliseconds!.type).toBe('histogram')
        const latency = histograms(scraped, 'delivery_latency_milliseconds')
        expect(latency.map((h) => h.labels).sort((a, b) => a.status!.localeCompare(b.status!))).toEqual([
          { status: 'failed', type: 'webhook', ...scopeLabels },
          { status: 'success', type: 'webhook', ...scopeLabels },
        ])
        for (const h of latency) {
          expect(h.count).toBe(1)
          expect(h.buckets['+Inf']).toBe(1)
          // Cumulative buckets: 0 up to the first bound at or above the one observation, 1 from there on.
          const bounds = Object.keys(h.buckets).filter((b) => b !== '+Inf').map(Number)
          for (const bound of bounds) expect(h.buckets[String(bound)], `le=${bound}`).toBe(h.sum! <= bound ? 1 : 0)
        }
        const publishes = histograms(scraped, 'api_response_latency_milliseconds').filter((h) => h.labels.route === '/publish')
        expect(publishes.map((h) => [h.labels.method, h.labels.status, h.count])).toEqual([['POST', '202', 1]])

        expect(samples(scraped, 'outflow_queue_depth')).toEqual([{ labels: scopeLabels, value: 0 }])
        expect(samples(scraped, 'outflow_queue_lag_seconds')).toEqual([{ labels: scopeLabels, value: 0 }])
        expect(samples(scraped, 'target_info')).toEqual([
          { labels: expect.objectContaining({ service_name: 'outflow', deployment_environment: 'test', telemetry_sdk_language: 'nodejs' }), value: 1 },
        ])

        server.proc.kill('SIGTERM')
        expect(await server.exited).toBe(0)
        expect(server.state.stderr).toBe('')
      } finally {
        await receiver.close()
      }
    })

    it('serves /metrics on a port of its own without the key, and nothing else there; the API port has no /metrics', async () => {
      const { server, url, metrics, call } = await serve({ ...(await storage.env()), OUTFLOW_PROMETHEUS_PORT: '0', OUTFLOW_PROMETHEUS_HOST: '127.0.0.1', OUTFLOW_DELIVERY_WORKER: 'false' })
      expect(new URL(metrics).port).not.toBe(new URL(url).port)
      expect(metrics).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)
      expect((await fetch(`${url}/metrics`, { headers: admin })).status).toBe(404)
      expect((await fetch(new URL('/api/v1/tenants', metrics))).status).toBe(404)

      // No worker: the two deliveries stay due, and the gauges read them from the storage.
      await call('PUT', '/tenants/acme', {})
      for (const id of ['one', 'two']) await call('POST', '/tenants/acme/destinations', { id, type: 'webhook', topics: '*', config: { url: 'http://127.0.0.1:9/hook' } })
      expect((await call('POST', '/publish', { tenant_id: 'acme', topic: 'order.created', data: {} })).status).toBe(202)
      const scraped = await scrape(metrics)
      expect(samples(scraped, 'outflow_queue_depth')).toEqual([{ labels: scopeLabels, value: 2 }])
      expect(samples(scraped, 'outflow_queue_lag_seconds')[0]!.value).toBeGreaterThanOrEqual(0)
      expect(samples(scraped, 'delivered_events_total')).toEqual([])

      server.proc.kill('SIGTERM')
      expect(await server.exited).toBe(0)
    })
  })
}
