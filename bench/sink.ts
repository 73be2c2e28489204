/**
 * The webhook sink every delivery benchmark posts to: a node:http server answering 200.
 *
 * It counts deliveries by `webhook-id` (a repeat id is counted as a duplicate, not a delivery; at a
 * path other than `/`, by path and id, so each destination of a fan-out counts on its own),
 * stamps the wall-clock receive time of each id, and, when the JSON body carries `t` (the time
 * the event was due to be published), records `receive - t` as a publish-to-receive latency.
 *
 * Run it as a child process (see support/sink-client.ts) so it never shares an event loop with
 * the system under test; it is steered over the IPC channel. `tsx bench/sink.ts` also runs it
 * standalone and prints its URL.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { pathToFileURL } from 'node:url'
import { wallNow } from './support/clock.js'

export type SinkCommand =
  | { cmd: 'expect'; req: number; n: number }
  | { cmd: 'stats'; req: number; latencies?: boolean }
  | { cmd: 'reset'; req: number }
  | { cmd: 'delay'; req: number; ms: number }
  | { cmd: 'close'; req: number }

export interface SinkStats {
  /** Distinct webhook ids received. */
  received: number
  /** Requests whose webhook id had been received before. */
  duplicates: number
  /** Every request, whatever its id. */
  requests: number
  /** Requests without a `webhook-id` header. */
  withoutId: number
  /** Wall-clock receive time of the first and the last distinct id. */
  firstAt: number | null
  lastAt: number | null
  /** receive - t of each first receipt whose body had `t` (only when asked for). */
  latencies?: number[]
  /** The `t` of each of those, in the same order. */
  dues?: number[]
}

export type SinkReply =
  | { type: 'ready'; url: string }
  | { type: 'reply'; req: number; reachedAt?: number; stats?: SinkStats }

interface SinkState {
  seen: Map<string, number>
  duplicates: number
  requests: number
  withoutId: number
  firstAt: number | null
  lastAt: number | null
  latencies: number[]
  dues: number[]
  delayMs: number
  waiters: { n: number; resolve: (at: number) => void }[]
}

function freshState(delayMs: number): SinkState {
  return { seen: new Map(), duplicates: 0, requests: 0, withoutId: 0, firstAt: null, lastAt: null, latencies: [], dues: [], delayMs, waiters: [] }
}

function record(state: SinkState, id: string | undefined, body: string, at: number): void {
  state.requests++
  if (!id) {
    state.withoutId++
    return
  }
  if (state.seen.has(id)) {
    state.duplicates++
    return
  }
  state.seen.set(id, at)
  state.firstAt ??= at
  state.lastAt = at
  const t = intendedTime(body)
  if (t !== undefined) {
    state.latencies.push(at - t)
    state.dues.push(t)
  }
  if (state.waiters.length) {
    const count = state.seen.size
    state.waiters = state.waiters.filter((w) => (count >= w.n ? (w.resolve(at), false) : true))
  }
}

/** A batch delivery's events (a JSON array of objects with `id`), each recorded as a delivery; one request. */
function recordBatch(state: SinkState, body: string, key: (eventId: string | undefined) => string | undefined, at: number): void {
  let events: { id?: unknown }[] = []
  try {
    events = JSON.parse(body) as { id?: unknown }[]
  } catch {
    // Counted as a request without ids below.
  }
  if (!Array.isArray(events) || events.length === 0) return record(state, undefined, body, at)
  for (const event of events) record(state, key(typeof event.id === 'string' ? event.id : undefined), '', at)
  state.requests -= events.length - 1
}

/** The `t` field of a small JSON body, without parsing bodies that cannot have one. */
function intendedTime(body: string): number | undefined {
  if (body.length === 0 || body.length > 4096 || !body.includes('"t"')) return undefined
  try {
    const t = (JSON.parse(body) as { t?: unknown }).t
    return typeof t === 'number' ? t : undefined
  } catch {
    return undefined
  }
}

/**
 * Start the sink on an ephemeral loopback port.
 *
 * @example
 * const sink = await createSink(); console.log(sink.url); sink.expect(100).then(...)
 */
export async function createSink(options: { delayMs?: number } = {}) {
  let state = freshState(options.delayMs ?? 0)
  const held = new Set<http.ServerResponse>()
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const header = req.headers['webhook-id']
      const id = Array.isArray(header) ? header[0] : header
      // Fan-out: one event reaches several destinations with the same webhook-id, each at its own path.
      const key = (eventId: string | undefined) => (eventId && req.url !== '/' ? `${req.url} ${eventId}` : eventId)
      const body = Buffer.concat(chunks).toString('utf8')
      // A batch (docs/delivery.md › Batched delivery): each event of the array counts by its own id.
      if (id?.startsWith('batch_')) recordBatch(state, body, key, wallNow())
      else record(state, key(id), body, wallNow())
      if (state.delayMs <= 0) return void res.writeHead(200, { 'content-length': '2' }).end('ok')
      // A slow receiver: the attempt stays in flight for delayMs.
      held.add(res)
      setTimeout(() => {
        held.delete(res)
        if (!res.destroyed) res.writeHead(200, { 'content-length': '2' }).end('ok')
      }, state.delayMs).unref()
    })
  })
  server.keepAliveTimeout = 120_000
  server.headersTimeout = 125_000
  server.requestTimeout = 0
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`

  return {
    url,
    /** Resolves with the receive time of the n-th distinct id. */
    expect(n: number): Promise<number> {
      if (state.seen.size >= n) return Promise.resolve(state.lastAt ?? wallNow())
      return new Promise((resolve) => state.waiters.push({ n, resolve }))
    },
    stats(latencies = false): SinkStats {
      const { seen, duplicates, requests, withoutId, firstAt, lastAt } = state
      return { received: seen.size, duplicates, requests, withoutId, firstAt, lastAt, ...(latencies ? { latencies: state.latencies, dues: state.dues } : {}) }
    },
    reset(): void {
      state = freshState(state.delayMs)
    },
    setDelay(ms: number): void {
      state.delayMs = ms
    },
    async close(): Promise<void> {
      for (const res of held) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

async function serveOverIpc(): Promise<void> {
  const delayMs = Number(process.env.BENCH_SINK_DELAY_MS ?? 0)
  const sink = await createSink({ delayMs })
  const send = (msg: SinkReply) => process.send!(msg)
  process.on('message', (msg: SinkCommand) => {
    switch (msg.cmd) {
      case 'expect':
        void sink.expect(msg.n).then((reachedAt) => send({ type: 'reply', req: msg.req, reachedAt }))
        break
      case 'stats':
        send({ type: 'reply', req: msg.req, stats: sink.stats(msg.latencies) })
        break
      case 'reset':
        sink.reset()
        send({ type: 'reply', req: msg.req })
        break
      case 'delay':
        sink.setDelay(msg.ms)
        send({ type: 'reply', req: msg.req })
        break
      case 'close':
        void sink.close().finally(() => {
          send({ type: 'reply', req: msg.req })
          process.disconnect()
        })
        break
    }
  })
  // The parent died or let go: nothing left to serve.
  process.on('disconnect', () => process.exit(0))
  send({ type: 'ready', url: sink.url })
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  if (process.send) await serveOverIpc()
  else {
    const sink = await createSink({ delayMs: Number(process.env.BENCH_SINK_DELAY_MS ?? 0) })
    console.log(`sink listening at ${sink.url}`)
    setInterval(() => console.log(JSON.stringify(sink.stats())), 5000).unref()
    process.on('SIGINT', () => void sink.close().then(() => process.exit(0)))
  }
}
