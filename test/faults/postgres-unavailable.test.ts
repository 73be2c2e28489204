import net, { type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { OutflowError } from '../../src/errors.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, rejection } from '../support/engines.js'

const admin = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }
const quiet = { debug() {}, info() {}, warn() {}, error() {} }
const event = { tenant_id: 'acme', topic: 'order.created', data: { n: 1 } }

/** A port with nothing listening: connecting is refused at once. */
async function refusingPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** A server that accepts connections and never answers, as a paused (SIGSTOP) Postgres does. */
async function silentServer() {
  const sockets: net.Socket[] = []
  const server = net.createServer((socket) => void sockets.push(socket))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      const closed = new Promise((resolve) => server.close(resolve))
      for (const s of sockets) s.destroy()
      await closed
    },
  }
}

async function engineOn(port: number, timeoutMs?: number, requestTimeoutMs?: number): Promise<Outflow> {
  const storage = postgres({ url: `postgres://postgres@127.0.0.1:${port}/none`, max: 2, timeoutMs, ...(requestTimeoutMs ? { requestTimeoutMs } : {}) })
  return createOutflow({ storage, apiKey, encryptionKey, logger: quiet, migrate: false, delivery: { worker: false } })
}

describe('Postgres unavailable: typed errors and 503s, never a 500 or a hang', () => {
  const cleanups: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {})
  })

  it('a refused connection fails publish() with `unavailable` and the API with 503 JSON and Retry-After', async () => {
    const outflow = await engineOn(await refusingPort())
    cleanups.push(() => outflow.close())
    const err = await rejection(outflow.publish(event))
    expect(err).toBeInstanceOf(OutflowError)
    expect(err).toMatchObject({ code: 'unavailable', status: 503 })
    expect(err.message).toContain('ECONNREFUSED')

    const response = await outflow.fetch(new Request('http://host/api/v1/publish', { method: 'POST', headers: admin, body: JSON.stringify(event) }))
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(response.headers.get('content-type')).toContain('application/json')
    expect(await response.json()).toEqual({ status: 503, message: 'service unavailable' })
    // Reads too: every route's storage call maps the same way.
    const list = await outflow.fetch(new Request('http://host/api/v1/tenants', { headers: admin }))
    expect(list.status).toBe(503)
  })

  it('a server that never answers fails each call with `unavailable` once timeoutMs has passed', async () => {
    const silent = await silentServer()
    cleanups.push(silent.close)
    const outflow = await engineOn(silent.port, 300)
    cleanups.push(() => outflow.close())
    const err = await rejection(outflow.publish(event))
    expect(err).toMatchObject({ code: 'unavailable', status: 503, message: 'storage unavailable: no answer within 300 ms' })

    // Concurrent requests all answer (the pool's two connections are stuck; the rest wait in its queue).
    const responses = await Promise.all(
      Array.from({ length: 6 }, () =>
        outflow.fetch(new Request('http://host/api/v1/publish', { method: 'POST', headers: admin, body: JSON.stringify(event) })),
      ),
    )
    for (const response of responses) {
      expect(response.status).toBe(503)
      expect(response.headers.get('retry-after')).toBe('1')
    }
  })

  it('answers callers at requestTimeoutMs while the storage\'s own calls (the worker\'s) wait timeoutMs', async () => {
    const silent = await silentServer()
    cleanups.push(silent.close)
    const outflow = await engineOn(silent.port, 2_000, 200)
    cleanups.push(() => outflow.close())
    // The worker's view of the storage: started first, still waiting when the callers have had their answers.
    const patient = outflow.storage.getTenant('acme').then(
      () => 'answered',
      (err: Error) => err.message,
    )
    expect(await rejection(outflow.publish(event))).toMatchObject({ code: 'unavailable', message: 'storage unavailable: no answer within 200 ms' })
    const response = await outflow.fetch(new Request('http://host/api/v1/tenants/acme', { headers: admin }))
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    expect(await Promise.race([patient, new Promise((resolve) => setTimeout(resolve, 500, 'waiting'))])).toBe('waiting')
    expect(await patient).toBe('storage unavailable: no answer within 2000 ms')
  })
})
