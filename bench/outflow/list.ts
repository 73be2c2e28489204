/**
 * GET /api/v1/tenants/t1/events?limit=100 through the Hono adapter, served by @hono/node-server,
 * with `storedEvents` delivered events seeded at storage level: p50/p99 of the first page, and of
 * deep pages reached by cursor (random positions in the deepest tenth of the listing).
 *
 * A deep cursor is built the way the engine builds one: the first page's `next` cursor is decoded
 * and its position moved to a seeded row. The scenario checks that this equals the cursor reached
 * by following `next`, and that the page starts at the expected event.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import type { AddressInfo } from 'node:net'
import { Pool } from 'undici'
import { outflowApp } from '../../adapters/hono.js'
import { sleep, wallNow } from '../support/clock.js'
import { addWebhook, apiKey, closeOutflow, openOutflow, sqlitePath, tenantId, topic } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'
import { summarize } from '../support/stats.js'
import { seed, seededPosition } from '../seed.js'

interface EventsPage {
  models: { id: string }[]
  pagination: { next: string | null; dir: 'asc' | 'desc' }
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  const count = sizes.storedEvents
  const limit = 100

  // An engine creates the schema, the tenant and the destination; then it is closed for seeding.
  let outflow = await openOutflow(ctx)
  const { destinationId } = await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
  await closeOutflow(outflow)
  const startMs = Date.now() - 3_600_000 - count
  const seedStarted = wallNow()
  await seed(
    { dialect: ctx.db!, location: ctx.db === 'sqlite' ? sqlitePath(ctx) : ctx.pgUrl! },
    { tenantId, destinationId, topic, count, startMs, state: 'delivered', onProgress: (done) => done % 500_000 === 0 && log(ctx, `seeded ${done}`) },
  )
  const seedSeconds = (wallNow() - seedStarted) / 1000
  log(ctx, `seeded ${count} delivered events in ${seedSeconds.toFixed(1)} s`)

  outflow = await openOutflow(ctx)
  const app = new Hono()
  app.route('/api/v1', outflowApp(outflow, new Hono()))
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())))
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  const client = new Pool(origin, { connections: 1 })
  const path = (cursor?: string) => `/api/v1/tenants/${tenantId}/events?limit=${limit}${cursor ? `&next=${encodeURIComponent(cursor)}` : ''}`

  const get = async (p: string): Promise<{ ms: number; body: string }> => {
    const t0 = performance.now()
    const res = await client.request({ path: p, method: 'GET', headers: { authorization: `Bearer ${apiKey}` } })
    const body = await res.body.text()
    const ms = performance.now() - t0
    if (res.statusCode !== 200) throw new Error(`GET ${p} answered ${res.statusCode}: ${body.slice(0, 300)}`)
    return { ms, body }
  }
  const timed = async (paths: () => string, n: number): Promise<number[]> => {
    const samples: number[] = []
    for (let i = 0; i < n; i++) samples.push((await get(paths())).ms)
    return samples
  }

  try {
    const first = JSON.parse((await get(path())).body) as EventsPage
    if (first.models.length !== limit || !first.pagination.next) throw new Error(`first page has ${first.models.length} events and next=${first.pagination.next}`)
    const desc = first.pagination.dir === 'desc'
    // Seeded row i sits at display index k: newest first when the listing is descending.
    const rowAt = (k: number) => (desc ? count - 1 - k : k)
    const cursorAfter = (k: number) => craftCursor(first.pagination.next!, seededPosition({ startMs, destinationId }, rowAt(k)))

    // The crafted cursor must be the one the listing itself hands out.
    let walked = first
    for (let page = 1; page < 3; page++) walked = JSON.parse((await get(path(walked.pagination.next!))).body) as EventsPage
    if (walked.pagination.next !== cursorAfter(3 * limit - 1))
      throw new Error(`crafted cursor differs from the walked one: ${cursorAfter(3 * limit - 1)} vs ${walked.pagination.next}`)
    const deepFrom = Math.floor(count * 0.9)
    const probe = JSON.parse((await get(path(cursorAfter(deepFrom - 1)))).body) as EventsPage
    const expected = seededPosition({ startMs, destinationId }, rowAt(deepFrom))[1]
    if (probe.models[0]?.id !== expected) throw new Error(`deep page starts at ${probe.models[0]?.id}, expected ${expected}`)

    const warm = Math.min(50, sizes.listRequests)
    await timed(() => path(), warm)
    const firstSamples = await timed(() => path(), sizes.listRequests)
    const deepPath = () => path(cursorAfter(deepFrom - 1 + Math.floor(Math.random() * (count - deepFrom - limit))))
    await timed(deepPath, warm)
    const deepSamples = await timed(deepPath, sizes.listRequests)
    const f = summarize(firstSamples)
    const d = summarize(deepSamples)
    log(ctx, `first page p50 ${f.p50.toFixed(2)} p99 ${f.p99.toFixed(2)} ms; deep p50 ${d.p50.toFixed(2)} p99 ${d.p99.toFixed(2)} ms`)
    return {
      values: { firstP50: f.p50, firstP99: f.p99, firstMax: f.max, deepP50: d.p50, deepP99: d.p99, deepMax: d.max, deepDepth: deepFrom, seedSeconds, requests: sizes.listRequests },
      notes: [],
    }
  } finally {
    await client.close()
    await new Promise<void>((resolve) => server.close(() => resolve()))
    await closeOutflow(outflow)
    await sleep(0)
  }
})

/** The engine's opaque cursor is base64url JSON with its position in `p`; move that position. */
function craftCursor(template: string, position: [number, string, string]): string {
  const body = JSON.parse(Buffer.from(template, 'base64url').toString('utf8')) as { p?: unknown }
  if (!Array.isArray(body.p) || body.p.length !== position.length) throw new Error(`unexpected cursor shape: ${JSON.stringify(body)}`)
  return Buffer.from(JSON.stringify({ ...body, p: position })).toString('base64url')
}
