import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect, vi } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { type Outflow } from '../../src/engine.js'
import type { Mount, MountedApi } from './mounts.js'
import { encryptionKey } from '../support/engines.js'
import type { StorageKind } from '../support/storages.js'

export const adminKey = 'test-admin-key-0123456789'
export const jwtSecret = 'test-jwt-secret-0123456789'
export const portalUrl = 'https://portal.example.com/webhooks'

export interface ApiResponse {
  status: number
  headers: Headers
  body: any
}

export interface CallOptions {
  /** `admin`, a raw token, or `null` for no Authorization header. */
  as?: 'admin' | string | null
  /** JSON-encoded unless `raw` is given. */
  json?: unknown
  raw?: BodyInit
  headers?: Record<string, string>
}

/** One HTTP call against a mounted API; error bodies must always be JSON. */
export type Api = (method: string, path: string, options?: CallOptions) => Promise<ApiResponse>

function makeApi(baseUrl: string): Api {
  return async (method, path, { as = 'admin', json, raw, headers = {} } = {}) => {
    const all: Record<string, string> = { ...headers }
    if (as !== null) all.authorization ??= `Bearer ${as === 'admin' ? adminKey : as}`
    let body = raw
    if (json !== undefined) {
      body = JSON.stringify(json)
      all['content-type'] ??= 'application/json'
    }
    const response = await fetch(`${baseUrl}${path}`, { method, headers: all, body })
    const text = await response.text()
    const type = response.headers.get('content-type') ?? ''
    if (response.status >= 400) expect(type, `${method} ${path} -> ${response.status}: ${text}`).toMatch(/^application\/json/)
    return { status: response.status, headers: response.headers, body: type.startsWith('application/json') ? JSON.parse(text) : text }
  }
}

/** A webhook sink: `/ok` answers 200, anything else 500. */
async function startReceiver(): Promise<{ url: string; close: () => Promise<void> }> {
  const server = http.createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      res.statusCode = req.url === '/ok' ? 200 : 500
      res.end(req.url === '/ok' ? 'ok' : 'nope')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((done) => (server.closeAllConnections(), server.close(() => done()))) }
}

/** What every area of the suite shares: one engine per mount × storage, tokens and fixture ids. */
export interface SuiteContext {
  mount: Mount
  outflow: Outflow
  api: Api
  baseUrl: string
  receiverUrl: string
  tokens: { acme: string; globex: string }
  /** acme: `ok` (order.created -> 200), `failing` (order.failed -> 500); globex: `ok`. */
  destinations: { acmeOk: string; acmeFailing: string; globexOk: string }
  /** acme e1..e3 succeed on acmeOk, e4 fails on acmeFailing; globex g1 succeeds. Times are fixed. */
  events: { e1: string; e2: string; e3: string; e4: string; g1: string }
  times: string[]
}

export const eventTimes = ['2024-01-01T00:00:00.000Z', '2024-01-02T00:00:00.000Z', '2024-01-03T00:00:00.000Z', '2024-01-04T00:00:00.000Z', '2024-01-05T00:00:00.000Z']

async function seed(ctx: Omit<SuiteContext, 'tokens' | 'destinations' | 'events' | 'times'>): Promise<Pick<SuiteContext, 'tokens' | 'destinations' | 'events' | 'times'>> {
  const { api, receiverUrl } = ctx
  for (const tenant of ['acme', 'globex']) expect((await api('PUT', `/tenants/${tenant}`, { json: { metadata: { name: tenant } } })).status).toBe(201)
  const destination = async (tenant: string, id: string, topic: string, path: string) => {
    const res = await api('POST', `/tenants/${tenant}/destinations`, { json: { id, type: 'webhook', topics: [topic], config: { url: `${receiverUrl}${path}` } } })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return res.body.id as string
  }
  const destinations = {
    acmeOk: await destination('acme', 'acme-ok', 'order.created', '/ok'),
    acmeFailing: await destination('acme', 'acme-failing', 'order.failed', '/fail'),
    globexOk: await destination('globex', 'globex-ok', 'order.created', '/ok'),
  }
  const publish = async (id: string, tenant: string, topic: string, time: string) => {
    const res = await api('POST', '/publish', { json: { id, tenant_id: tenant, topic, time, data: { id }, metadata: { source: 'test' }, eligible_for_retry: false } })
    expect(res.status, JSON.stringify(res.body)).toBe(202)
    return res.body.id as string
  }
  const events = {
    e1: await publish('e1', 'acme', 'order.created', eventTimes[0]!),
    e2: await publish('e2', 'acme', 'order.created', eventTimes[1]!),
    e3: await publish('e3', 'acme', 'order.created', eventTimes[2]!),
    e4: await publish('e4', 'acme', 'order.failed', eventTimes[3]!),
    g1: await publish('g1', 'globex', 'order.created', eventTimes[4]!),
  }
  // Events show in listings from their first attempt on; the local worker delivers within milliseconds.
  await vi.waitFor(
    async () => {
      const res = await api('GET', '/events')
      expect(res.body.models).toHaveLength(5)
    },
    { timeout: 15_000, interval: 25 },
  )
  const token = async (tenant: string) => (await api('GET', `/tenants/${tenant}/token`)).body.token as string
  return { tokens: { acme: await token('acme'), globex: await token('globex') }, destinations, events, times: eventTimes }
}

/**
 * Start one engine on a fresh database behind `mount`, seed it, and return the shared context plus
 * its teardown.
 *
 * @example
 * const { ctx, stop } = await startSuite(expressMount, storageKind('sqlite :memory:'))
 */
export async function startSuite(mount: Mount, kind: StorageKind): Promise<{ ctx: SuiteContext; stop: () => Promise<void> }> {
  const storage = await kind.open()
  const drop = () => kind.cleanup()
  const receiver = await startReceiver()
  const keys = storage.dialect === 'postgres' ? { encryptionKey } : {}
  const outflow = await createOutflow({ storage, apiKey: adminKey, jwtSecret, allowPrivateNetworks: true, portal: { url: portalUrl }, ...keys })
  let mounted: MountedApi | undefined
  try {
    mounted = await mount.start(outflow)
    const base = { mount, outflow, api: makeApi(mounted.baseUrl), baseUrl: mounted.baseUrl, receiverUrl: receiver.url }
    const ctx: SuiteContext = { ...base, ...(await seed(base)) }
    return {
      ctx,
      stop: async () => {
        await mounted?.close()
        await outflow.close()
        await receiver.close()
        await drop()
      },
    }
  } catch (error) {
    await mounted?.close()
    await outflow.close()
    await receiver.close()
    await drop()
    throw error
  }
}
