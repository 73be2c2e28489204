import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: string
  at: number
}

export interface Reply {
  status?: number
  headers?: Record<string, string>
  body?: string
  /** Answer after this many ms (a slow or hanging receiver). */
  delayMs?: number
  /** Answer once this settles (a receiver the test releases). */
  until?: Promise<unknown>
}

/**
 * A real HTTP receiver on 127.0.0.1 that records every request and answers per `reply`
 * (by default 200). `reply` gets the request and how many requests came to that path before it.
 */
export async function startReceiver(reply: (r: Received, countOnPath: number) => Reply = () => ({})) {
  const received: Received[] = []
  const perPath = new Map<string, number>()
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const r: Received = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() }
      received.push(r)
      const n = perPath.get(r.path) ?? 0
      perPath.set(r.path, n + 1)
      const { status = 200, headers = {}, body = 'ok', delayMs = 0, until } = reply(r, n)
      const send = () => {
        if (res.destroyed) return
        res.writeHead(status, { 'content-type': 'text/plain', ...headers })
        res.end(body)
      }
      if (until) void until.finally(send)
      else if (delayMs > 0) setTimeout(send, delayMs).unref()
      else send()
    })
  })
  server.keepAliveTimeout = 1000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    on: (path: string) => received.filter((r) => r.path === path),
    async close() {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** Poll `check` until it returns a truthy value (or fail after `timeoutMs`). */
export async function waitFor<T>(check: () => T | Promise<T>, timeoutMs = 15_000, what = 'condition'): Promise<Exclude<T, false | null | undefined | 0 | ''>> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check()
    if (value) return value as Exclude<T, false | null | undefined | 0 | ''>
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/**
 * Poll `count` until it reaches `target`, failing only when it stops growing for `stallMs`: a throughput test on
 * a loaded machine is slow, not wrong, so the bound is on a stall (work that never happens), not on the total time.
 */
export async function waitForProgress(count: () => number | Promise<number>, target: number, what: string, stallMs = 60_000): Promise<void> {
  let best = -1
  let movedAt = Date.now()
  for (;;) {
    const value = await count()
    if (value >= target) return
    if (value > best) {
      best = value
      movedAt = Date.now()
    } else if (Date.now() - movedAt > stallMs) {
      throw new Error(`timed out waiting for ${what}: stuck at ${value} of ${target} for ${stallMs / 1000} s`)
    }
    await new Promise((r) => setTimeout(r, 50))
  }
}
