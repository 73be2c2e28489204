// Fault scenarios against real engine processes (test/fixtures/fault-engine.ts) on a throwaway
// Postgres cluster: publishers keep publishing over HTTP while a fault hits the database, a local
// receiver records every delivery. Used by the short versions in test/faults/*.test.ts and by the
// long ones of `npm run chaos` (test/faults/chaos.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'postgres'
import { encryptionKey } from '../support/engines.js'
import type { Cluster } from '../support/pg-cluster.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const fixture = join(import.meta.dirname, '../fixtures/fault-engine.ts')

export interface EngineOptions {
  /** Storage timeout (postgres({ timeoutMs })). */
  timeoutMs: number
  leaseMs: number
  max?: number
}

/** One engine process: its API port, how many deliveries it made, and its log lines. */
export interface EngineProcess {
  proc: ChildProcess
  port: number
  delivered: number
  /** stderr lines: the engine's JSON log lines, or a crash's stack. */
  log: string[]
  exited: Promise<number | null>
  alive(): boolean
}

export async function startEngine(url: string, options: EngineOptions): Promise<EngineProcess> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fixture, url, encryptionKey, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] })
  let exitCode: number | null | undefined
  const engine: EngineProcess = {
    proc,
    port: 0,
    delivered: 0,
    log: [],
    exited: new Promise((resolve) => proc.on('exit', (code) => resolve((exitCode = code)))),
    alive: () => exitCode === undefined,
  }
  let err = ''
  proc.stderr!.on('data', (chunk: Buffer) => {
    err += chunk.toString()
    const lines = err.split('\n')
    err = lines.pop()!
    engine.log.push(...lines)
  })
  await new Promise<void>((resolve, reject) => {
    let out = ''
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      const lines = out.split('\n')
      out = lines.pop()!
      for (const line of lines) {
        const ready = /^ready (\d+)$/.exec(line)
        if (ready) {
          engine.port = Number(ready[1])
          resolve()
        }
        const delivered = /^delivered (\d+)$/.exec(line)
        if (delivered) engine.delivered = Number(delivered[1])
      }
    })
    void engine.exited.then((code) => reject(new Error(`engine exited (${code}) before it was ready:\n${engine.log.join('\n')}`)))
  })
  return engine
}

async function api(port: number, method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
}

/** One request a publisher made: when, how long, and its outcome (a status, or `timeout` / `network`). */
interface Sample {
  start: number
  end: number
  outcome: number | 'timeout' | 'network'
}

export interface FaultContext {
  cluster: Cluster
  database: string
  /** The engines serving now (a replaced one is swapped in place). */
  engines: EngineProcess[]
  /** SIGKILL engine `index` and start a new one in its place (same database and options). */
  replaceEngine(index: number): Promise<void>
  /** Record a fault window (for the time-to-recover figure): call when a fault starts and when it ends. */
  mark(phase: 'start' | 'end'): void
}

export interface ScenarioOptions {
  name: string
  /** Load before the fault, ms. */
  before: number
  /** Load after the fault ended, ms. */
  after: number
  publishers: number
  engines?: number
  engine: EngineOptions
  /** A publish must be answered within this (the documented bound plus slack for a loaded machine), ms. */
  requestBoundMs: number
  /** How long the pipeline may take to deliver everything after the load stops, ms. */
  drainMs: number
  /** Requests may fail without an answer (their engine was killed under them). */
  allowNetworkErrors?: boolean
  /** The fault; resolves once it is over. */
  fault(ctx: FaultContext): Promise<void>
}

export interface ScenarioResult {
  scenario: string
  /** Publishes acknowledged (202). */
  published: number
  /** Acknowledged events that reached the receiver. */
  delivered: number
  lost: number
  /** Deliveries not recorded as a success once the run drained (should be 0). */
  unrecorded: number
  /** Deliveries the receiver got more than once (all events). */
  duplicates: number
  /** The events delivered more than once, with the time of each delivery (ms since the run started). */
  duplicated: { id: string; at: number[] }[]
  /** Longest time, over the fault windows, from a fault's end to the next acknowledged publish, ms. */
  recoverMs: number
  /** Highest share of publishes answered with an error in any one second. */
  peakErrorRate: number
  /** Longest time a publish took to be answered (any outcome), ms. */
  maxLatencyMs: number
  /** Responses by outcome: '202', '503', 'timeout', 'network', … */
  outcomes: Record<string, number>
  /** Requests answered with a status other than 202/503, or not within requestBoundMs. */
  bad: Sample[]
  /** Engines still running at the end, and the deliveries they made after the fault. */
  alive: boolean
  deliveredAfterFault: number
  /** Lines an engine logged at error or fatal level, and crash output. */
  engineErrors: string[]
}

export async function runScenario(cluster: Cluster, options: ScenarioOptions): Promise<ScenarioResult> {
  const database = `${options.name.replace(/\W/g, '_')}_${Math.random().toString(36).slice(2, 8)}`
  const url = await cluster.createDatabase(database)
  const runStart = Date.now()
  const receiver = await startReceiver()
  const engines: EngineProcess[] = []
  /** Every engine started, killed ones included (their deliveries count). */
  const started: EngineProcess[] = []
  const delivered = () => started.reduce((n, e) => n + e.delivered, 0)
  try {
    for (let i = 0; i < (options.engines ?? 1); i++) engines.push(await startEngine(url, options.engine))
    started.push(...engines)
    const setup = engines[0]!.port
    expect2xx(await api(setup, 'PUT', '/tenants/acme', {}))
    expect2xx(await api(setup, 'POST', '/tenants/acme/destinations', { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/hook` } }))

    const acked = new Set<string>()
    const samples: Sample[] = []
    let stopping = false
    const publisher = async (p: number) => {
      for (let n = 0, tries = 0; !stopping; tries++) {
        // The publisher's own engine, or the next one that is up (a client behind a load balancer).
        const engine = [...engines.keys()].map((k) => engines[(p + tries + k) % engines.length]!).find((e) => e.alive()) ?? engines[0]!
        const id = `p${p}-${n}`
        const start = Date.now()
        let outcome: Sample['outcome']
        try {
          const response = await fetch(`http://127.0.0.1:${engine.port}/api/v1/publish`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ id, tenant_id: 'acme', topic: 'order.created', data: { p, n } }),
            signal: AbortSignal.timeout(options.requestBoundMs),
          })
          await response.arrayBuffer()
          outcome = response.status
        } catch (err) {
          outcome = (err as Error).name === 'TimeoutError' ? 'timeout' : 'network'
        }
        samples.push({ start, end: Date.now(), outcome })
        if (outcome === 202) {
          acked.add(id)
          n++
        } else {
          // A client honouring Retry-After (shortened): the same id again, so nothing is published twice.
          await sleep(200)
        }
      }
    }

    const windows: { start: number; end?: number }[] = []
    const ctx: FaultContext = {
      cluster,
      database,
      engines,
      async replaceEngine(index) {
        const old = engines[index]!
        old.proc.kill('SIGKILL')
        await old.exited
        const fresh = await startEngine(url, options.engine)
        started.push(fresh)
        engines[index] = fresh
      },
      mark(phase) {
        if (phase === 'start') windows.push({ start: Date.now() })
        else windows.at(-1)!.end = Date.now()
      },
    }
    const publishers = Array.from({ length: options.publishers }, (_, p) => publisher(p))
    await sleep(options.before)
    await options.fault(ctx)
    const deliveredAtFaultEnd = delivered()
    await sleep(options.after)
    stopping = true
    await Promise.all(publishers)

    const received = () => new Set(receiver.on('/hook').map((r) => String(r.headers['webhook-id'])))
    const drained = Date.now() + options.drainMs
    await waitFor(() => [...acked].every((id) => received().has(id)) || !engines.some((e) => e.alive()), options.drainMs, 'every acknowledged publish delivered').catch(() => undefined)
    // Every delivery recorded as a success: nothing left that could still be attempted (again).
    const sql = pg(url, { max: 1, onnotice: () => {} })
    let unrecorded = -1
    try {
      await waitFor(
        async () => {
          const [row] = await sql<{ n: number }[]>`select count(*)::int as n from deliveries where status <> 'success'`
          unrecorded = row!.n
          return unrecorded === 0 || !engines.some((e) => e.alive())
        },
        Math.max(1_000, drained - Date.now()),
        'every delivery recorded',
      ).catch(() => undefined)
    } finally {
      await sql.end()
    }
    await sleep(500) // let stragglers (duplicates) arrive
    const seen = received()
    const all = receiver.on('/hook')
    const lost = [...acked].filter((id) => !seen.has(id)).length

    const allowed = new Set<Sample['outcome']>([202, 503, ...(options.allowNetworkErrors ? ['network' as const] : [])])
    const bad = samples.filter((s) => !allowed.has(s.outcome) || s.end - s.start > options.requestBoundMs)
    const outcomes: Record<string, number> = {}
    for (const s of samples) outcomes[String(s.outcome)] = (outcomes[String(s.outcome)] ?? 0) + 1
    const perSecond = new Map<number, { n: number; errors: number }>()
    for (const s of samples) {
      const bucket = perSecond.get(Math.floor(s.end / 1000)) ?? { n: 0, errors: 0 }
      bucket.n++
      if (s.outcome !== 202) bucket.errors++
      perSecond.set(Math.floor(s.end / 1000), bucket)
    }
    const successes = samples.filter((s) => s.outcome === 202).map((s) => s.end)
    const recoverMs = Math.max(0, ...windows.map((w) => (successes.find((t) => t >= (w.end ?? w.start)) ?? Date.now()) - (w.end ?? w.start)))
    return {
      scenario: options.name,
      published: acked.size,
      delivered: acked.size - lost,
      lost,
      unrecorded,
      duplicates: all.length - seen.size,
      duplicated: [...byId(all).entries()].filter(([, at]) => at.length > 1).map(([id, at]) => ({ id, at: at.map((t) => t - runStart) })),
      recoverMs,
      peakErrorRate: Math.max(0, ...[...perSecond.values()].map((b) => b.errors / b.n)),
      maxLatencyMs: Math.max(0, ...samples.map((s) => s.end - s.start)),
      outcomes,
      bad,
      alive: engines.every((e) => e.alive()),
      deliveredAfterFault: delivered() - deliveredAtFaultEnd,
      engineErrors: started.flatMap((e) => e.log.filter((l) => !l.startsWith('{') || /"level":"(error|fatal)"/.test(l))),
    }
  } finally {
    for (const e of started) if (e.alive()) e.proc.kill('SIGKILL')
    await Promise.all(started.map((e) => e.exited))
    await receiver.close()
  }
}

/** Reception times per webhook-id. */
function byId(received: { headers: Record<string, unknown>; at: number }[]): Map<string, number[]> {
  const out = new Map<string, number[]>()
  for (const r of received) {
    const id = String(r.headers['webhook-id'])
    out.set(id, [...(out.get(id) ?? []), r.at])
  }
  return out
}

function expect2xx(response: Response) {
  if (response.status >= 300) throw new Error(`set-up request failed: ${response.status}`)
}

/** `pg_ctl restart -m fast` once. */
export const restart = async ({ cluster, mark }: FaultContext) => {
  mark('start')
  await cluster.restart()
  mark('end')
}

/** pg_terminate_backend of every session of the engines' database, every `everyMs` for `forMs`. */
export const terminateBackends =
  (everyMs: number, forMs: number) =>
  async ({ cluster, database, mark }: FaultContext) => {
    const until = Date.now() + forMs
    while (Date.now() < until) {
      mark('start')
      await cluster.terminateBackends(database)
      mark('end')
      await sleep(everyMs)
    }
  }

/** SIGSTOP the postmaster and every backend for `forMs`, then SIGCONT. */
export const pause =
  (forMs: number) =>
  async ({ cluster, mark }: FaultContext) => {
    mark('start')
    cluster.pause()
    await sleep(forMs)
    cluster.resume()
    mark('end')
  }

/** SIGKILL one of the engines (in turn) every `everyMs` for `forMs`, starting a new process in its place. */
export const killEngines =
  (everyMs: number, forMs: number) =>
  async ({ engines, replaceEngine, mark }: FaultContext) => {
    const until = Date.now() + forMs
    for (let i = 0; Date.now() < until; i++) {
      mark('start')
      await replaceEngine(i % engines.length)
      mark('end')
      await sleep(everyMs)
    }
  }
