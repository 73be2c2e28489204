/**
 * The metrics API at size: `metricsEvents` delivered events (each with its delivery and attempt)
 * seeded at storage level, spread evenly over the last `metricsDays` days, then p50/p99 of a one-day
 * hourly query through the Hono adapter: `GET /metrics/events` (count, every tenant) and
 * `GET /metrics/attempts` (count and error_rate of one tenant). The answers are checked: 24 buckets
 * whose counts add up to the events seeded in that day.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import { Pool } from 'undici'
import { outflowApp } from '../../adapters/hono.js'
import { wallNow } from '../support/clock.js'
import { addWebhook, apiKey, closeOutflow, openOutflow, sqlitePath, tenantId, topic } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'
import { summarize } from '../support/stats.js'
import { seed } from '../seed.js'

const day = 86_400_000

interface MetricsBody {
  data: { time_bucket: string; metrics: { count: number; error_rate?: number } }[]
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  const count = sizes.metricsEvents
  let outflow = await openOutflow(ctx)
  const { destinationId } = await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
  await closeOutflow(outflow)
  const stepMs = Math.floor((sizes.metricsDays * day) / count)
  const startMs = Date.now() - sizes.metricsDays * day
  const seedStarted = wallNow()
  await seed(
    { dialect: ctx.db!, location: ctx.db === 'sqlite' ? sqlitePath(ctx) : ctx.pgUrl! },
    { tenantId, destinationId, topic, count, startMs, stepMs, state: 'delivered', onProgress: (done) => done % 500_000 === 0 && log(ctx, `seeded ${done}`) },
  )
  const seedSeconds = (wallNow() - seedStarted) / 1000
  // A whole UTC day in the middle of the data, and how many seeded events fall in it.
  const dayStart = Math.floor((startMs + (sizes.metricsDays / 2) * day) / day) * day
  const inDay = Math.ceil((dayStart + day - startMs) / stepMs) - Math.ceil((dayStart - startMs) / stepMs)
  log(ctx, `seeded ${count} events over ${sizes.metricsDays} days in ${seedSeconds.toFixed(1)} s; ${inDay} in the queried day`)

  outflow = await openOutflow(ctx, { worker: false })
  const app = new Hono()
  app.route('/api/v1', outflowApp(outflow, new Hono()))
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())))
  const client = new Pool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 })
  const range = `time[start]=${new Date(dayStart).toISOString()}&time[end]=${new Date(dayStart + day).toISOString()}&granularity=1h`
  const paths = {
    events: `/api/v1/metrics/events?${range}&measures[]=count`,
    attempts: `/api/v1/metrics/attempts?${range}&measures[]=count&measures[]=error_rate&filters[tenant_id]=${tenantId}`,
  }

  const get = async (path: string): Promise<{ ms: number; body: MetricsBody }> => {
    const t0 = performance.now()
    const res = await client.request({ path, method: 'GET', headers: { authorization: `Bearer ${apiKey}` } })
    const text = await res.body.text()
    const ms = performance.now() - t0
    if (res.statusCode !== 200) throw new Error(`GET ${path} answered ${res.statusCode}: ${text.slice(0, 300)}`)
    return { ms, body: JSON.parse(text) as MetricsBody }
  }

  try {
    const values: Record<string, number> = { inDay, seedSeconds, requests: sizes.metricsRequests }
    for (const [name, path] of Object.entries(paths)) {
      const { body } = await get(path)
      const total = body.data.reduce((sum, p) => sum + p.metrics.count, 0)
      if (body.data.length !== 24 || total !== inDay) throw new Error(`${name}: ${body.data.length} buckets adding up to ${total}, expected 24 and ${inDay}`)
      for (let i = 0; i < Math.min(50, sizes.metricsRequests); i++) await get(path) // warm-up
      const samples: number[] = []
      for (let i = 0; i < sizes.metricsRequests; i++) samples.push((await get(path)).ms)
      const s = summarize(samples)
      log(ctx, `${name}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms, max ${s.max.toFixed(1)} ms`)
      Object.assign(values, { [`${name}P50`]: s.p50, [`${name}P99`]: s.p99, [`${name}Max`]: s.max })
    }
    return { values, notes: [] }
  } finally {
    await client.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await closeOutflow(outflow)
  }
})
