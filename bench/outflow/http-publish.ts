/**
 * The HTTP API under load: `POST /api/v1/publish` through the Hono adapter (@hono/node-server), driven by
 * autocannon in a process of its own (c = `httpConnections`, `httpSeconds` s, after a warm-up), against the
 * same framework answering a constant 202 after reading the JSON body: the ceiling of the mount on this
 * machine. Each publish matches one webhook destination, so it commits its event and one delivery; the
 * worker is off (the deliveries stay pending), so the row measures the API and its storage writes alone.
 */
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import { outflowApp } from '../../adapters/hono.js'
import { addWebhook, apiKey, closeOutflow, openOutflow, tenantId, topic } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'

interface Load {
  requestsPerSec: number
  p50: number
  p99: number
  non2xx: number
  errors: number
}

const autocannonCli = createRequire(import.meta.url).resolve('autocannon/autocannon.js')

/** autocannon against `url` in its own process; its JSON report, reduced. */
function load(ctx: ScenarioContext, url: string, seconds: number): Promise<Load> {
  const body = JSON.stringify({ tenant_id: tenantId, topic, data: { order: 'ord_123', total: 42.5, items: [{ sku: 'a-1', qty: 2 }] } })
  const args = [
    autocannonCli,
    ...['-c', String(ctx.sizes.httpConnections), '-d', String(seconds), '-m', 'POST', '-j'],
    ...['-H', `authorization=Bearer ${apiKey}`, '-H', 'content-type=application/json', '-b', body, url],
  ]
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { maxBuffer: 64 * 1024 * 1024, timeout: (seconds + 60) * 1000 }, (err, stdout) => {
      if (err) return reject(new Error(`autocannon failed: ${err.message}`))
      const r = JSON.parse(stdout) as { requests: { average: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number; '2xx': number; duration: number }
      resolve({ requestsPerSec: r['2xx'] / r.duration, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors })
    })
  })
}

/** `load` after a warm-up of `warmupSeconds` against the same URL (not counted). */
async function warmedLoad(ctx: ScenarioContext, url: string, warmupSeconds: number): Promise<Load> {
  await load(ctx, url, warmupSeconds)
  return load(ctx, url, ctx.sizes.httpSeconds)
}

/** Serve `app` on a loopback port; returns its publish URL and a close function. */
async function listen(app: Hono): Promise<{ url: string; close: () => Promise<void> }> {
  const server = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' })
  await new Promise<void>((resolve) => (server.listening ? resolve() : server.once('listening', () => resolve())))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/publish`
  return { url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

runScenario(async (ctx) => {
  const warmupSeconds = 3

  const ceilingApp = new Hono()
  ceilingApp.post('/api/v1/publish', async (c) => {
    await c.req.json()
    return c.json({ id: 'evt_constant', duplicate: false }, 202)
  })
  const ceiling = await listen(ceilingApp)
  let bare: Load
  try {
    bare = await warmedLoad(ctx, ceiling.url, warmupSeconds)
  } finally {
    await ceiling.close()
  }
  log(ctx, `constant 202: ${bare.requestsPerSec.toFixed(0)} requests/s, p50 ${bare.p50} ms, p99 ${bare.p99} ms`)

  const outflow = await openOutflow(ctx, { worker: false })
  try {
    await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
    const api = new Hono()
    api.route('/api/v1', outflowApp(outflow, new Hono()))
    const server = await listen(api)
    let published: Load
    try {
      published = await warmedLoad(ctx, server.url, warmupSeconds)
    } finally {
      await server.close()
    }
    log(ctx, `POST /publish: ${published.requestsPerSec.toFixed(0)} requests/s, p50 ${published.p50} ms, p99 ${published.p99} ms, non-2xx ${published.non2xx}, errors ${published.errors}`)
    const notes = [
      ...(published.non2xx || published.errors ? [`POST /publish: ${published.non2xx} answers were not 2xx and ${published.errors} requests failed`] : []),
      ...(bare.non2xx || bare.errors ? [`constant 202: ${bare.non2xx} answers were not 2xx and ${bare.errors} requests failed`] : []),
    ]
    return {
      values: {
        requestsPerSec: published.requestsPerSec,
        p50: published.p50,
        p99: published.p99,
        ceilingRequestsPerSec: bare.requestsPerSec,
        ceilingP50: bare.p50,
        ceilingP99: bare.p99,
        failed: published.non2xx + published.errors,
      },
      notes,
    }
  } finally {
    await closeOutflow(outflow)
  }
})
