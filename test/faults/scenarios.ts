// Fault scenarios against real engine processes (test/faults/engine-process.ts) on a throwaway
// Postgres cluster or a SQLite file: publishers keep publishing over HTTP while a fault hits the
// database, a local receiver records every delivery. Used by the short versions in
// test/faults/*.test.ts and by the long ones of `npm run chaos` (test/faults/chaos.ts).
import Database from 'better-sqlite3'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'postgres'
import type { Cluster } from '../support/pg-cluster.js'
import { startReceiver, waitForProgress, type Received } from '../support/receiver.js'
import { api, engineErrors, startEngine, startEngines, stopEngines, type EngineOptions, type EngineProcess } from './engine-process.js'

export type { EngineOptions, EngineProcess } from './engine-process.js'

/** Where the engines keep their data: a fresh database of a throwaway cluster, or a SQLite file. */
export interface ScenarioTarget {
  kind: 'postgres' | 'sqlite'
  /** postgres:// URL or SQLite file path, as the engines open it. */
  url: string
  cluster?: Cluster
  database?: string
  /** Run one SQL statement on the database (a connection of its own) and return its rows. */
  query<T = Record<string, unknown>>(statement: string): Promise<T[]>
}

/** Deliveries not (yet) recorded as a success. */
export async function unrecorded(target: ScenarioTarget): Promise<number> {
  const [row] = await target.query<{ n: number | string }>(`select count(*) as n from deliveries where status <> 'success'`)
  return Number(row!.n)
}

/** Up to five deliveries not recorded as a success, with their state and their last attempt. */
export function unrecordedRows(target: ScenarioTarget): Promise<Record<string, unknown>[]> {
  return target.query(`select d.id, d.status, d.attempt_count, d.next_attempt_at, d.lease_until,
      (select a.status || ' ' || coalesce(a.error_kind, '') || ' ' || coalesce(a.error, '') from attempts a where a.delivery_id = d.id
       order by a.attempt_number desc limit 1) as last_attempt
    from deliveries d where d.status <> 'success' order by d.id limit 5`)
}

const unique = (name: string) => `${name.replace(/\W/g, '_')}_${Math.random().toString(36).slice(2, 8)}`

export async function postgresTarget(cluster: Cluster, name: string): Promise<ScenarioTarget> {
  const database = unique(name)
  return { ...postgresDatabase(await cluster.createDatabase(database)), cluster, database }
}

/** An existing Postgres database (no fault acts on its server). */
export function postgresDatabase(url: string): ScenarioTarget {
  return {
    kind: 'postgres',
    url,
    async query<T>(statement: string) {
      const sql = pg(url, { max: 1, onnotice: () => {} })
      try {
        return (await sql.unsafe(statement)) as unknown as T[]
      } finally {
        await sql.end()
      }
    },
  }
}

/** A SQLite database file in `dir` (which the caller removes). */
export function sqliteTarget(dir: string, name: string): ScenarioTarget {
  const path = join(dir, `${unique(name)}.db`)
  return {
    kind: 'sqlite',
    url: path,
    async query<T>(statement: string) {
      const db = new Database(path, { readonly: true, fileMustExist: true })
      try {
        return db.prepare(statement).all() as T[]
      } finally {
        db.close()
      }
    },
  }
}

/** The cluster and database of a Postgres target (faults that act on the server). */
export function postgresOf(target: ScenarioTarget): { cluster: Cluster; database: string; url: string } {
  if (!target.cluster || !target.database) throw new Error(`this fault needs a Postgres target, not ${target.kind}`)
  return { cluster: target.cluster, database: target.database, url: target.url }
}

/** One request a publisher made: when, how long, and its outcome (a status, or `timeout` / `network`). */
interface Sample {
  id: string
  start: number
  end: number
  outcome: number | 'timeout' | 'network'
}

export interface FaultContext {
  target: ScenarioTarget
  /** The engines serving now (a replaced one is swapped in place). */
  engines: EngineProcess[]
  /** SIGKILL engine `index` and start a new one in its place (same database and options). */
  replaceEngine(index: number): Promise<void>
  /** Record a fault window (for the time-to-recover figure): call when a fault starts and when it ends. */
  mark(phase: 'start' | 'end'): void
  /** Make the receiver misbehave (`hang`: never answer; `late`: answer 200 after `lateMs`), or behave again. */
  receiver(mode: ReceiverMode | undefined): void
  /** Publishes answered 503 so far: a fault that must be met holds until one was (see `diskFull`). */
  unavailableAnswers(): number
}

export type ReceiverMode = 'hang' | { lateMs: number }

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
  /** Clients reading a destination (GET) every 100 ms beside the publishers (default 0). */
  readers?: number
  /** The fault; resolves once it is over. */
  fault(ctx: FaultContext): Promise<void>
}

export interface ScenarioResult {
  scenario: string
  /** Distinct events the publishers tried to publish. */
  attempted: number
  /** Publishes acknowledged (202). */
  published: number
  /** Acknowledged events that reached the receiver. */
  delivered: number
  lost: number
  /** Deliveries not recorded as a success once the run drained (should be 0). */
  unrecorded: number
  /** A few of those, with their state and last attempt, to say why when there are any. */
  unrecordedSample: Record<string, unknown>[]
  /** Deliveries the receiver got more than once (all events). */
  duplicates: number
  /** The events delivered more than once, with the time of each delivery (ms since the run started). */
  duplicated: { id: string; at: number[] }[]
  /** Longest time, over the fault windows, from a fault's end to the next acknowledged publish, ms. */
  recoverMs: number
  /** Highest share of publishes answered with an error in any one second. */
  peakErrorRate: number
  /** The readers' answers (see ScenarioOptions.readers). */
  reads: { outcomes: Record<string, number>; bad: Sample[]; okDuringFault: number }
  /** Publishes acknowledged per second before the fault, and after it ended. */
  rateBefore: number
  rateAfter: number
  /** Longest time a publish took to be answered (any outcome), ms. */
  maxLatencyMs: number
  /** Longest answer among the publishes in flight during a fault, ms. */
  maxFaultLatencyMs: number
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

/** Readers getting the destination every 100 ms until stopped; their samples (id: the reader). */
function startReaders(engines: EngineProcess[], count: number, boundMs: number) {
  const samples: Sample[] = []
  let stopping = false
  const reader = async (r: number) => {
    while (!stopping) {
      const engine = engines.find((e) => e.alive()) ?? engines[0]!
      const start = Date.now()
      let outcome: Sample['outcome']
      try {
        const response = await fetch(`http://127.0.0.1:${engine.port}/api/v1/tenants/acme/destinations/hook`, { signal: AbortSignal.timeout(boundMs) })
        await response.arrayBuffer()
        outcome = response.status
      } catch (err) {
        outcome = (err as Error).name === 'TimeoutError' ? 'timeout' : 'network'
      }
      samples.push({ id: `r${r}`, start, end: Date.now(), outcome })
      await sleep(100)
    }
  }
  const running = Array.from({ length: count }, (_, r) => reader(r))
  return {
    samples,
    async stop() {
      stopping = true
      await Promise.all(running)
    },
  }
}

/** Publishers posting events `p<publisher>-<n>` to the engines until stopped; a non-202 is retried with the same id. */
function startPublishers(engines: EngineProcess[], count: number, boundMs: number) {
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
          signal: AbortSignal.timeout(boundMs),
        })
        await response.arrayBuffer()
        outcome = response.status
      } catch (err) {
        outcome = (err as Error).name === 'TimeoutError' ? 'timeout' : 'network'
      }
      samples.push({ id, start, end: Date.now(), outcome })
      if (outcome === 202) {
        acked.add(id)
        n++
      } else {
        // A client honouring Retry-After (shortened): the same id again, so nothing is published twice.
        await sleep(200)
      }
    }
  }
  const running = Array.from({ length: count }, (_, p) => publisher(p))
  return {
    acked,
    samples,
    async stop() {
      stopping = true
      await Promise.all(running)
    },
  }
}

export async function runScenario(target: ScenarioTarget, options: ScenarioOptions): Promise<ScenarioResult> {
  const runStart = Date.now()
  let mode: ReceiverMode | undefined
  const never = new Promise<never>(() => undefined)
  /** Requests the receiver answered 200 (late ones included: it did take the event); a hung one is not. */
  const answered: Received[] = []
  const receiver = await startReceiver((r) => {
    if (mode === 'hang') return { until: never }
    answered.push(r)
    return mode ? { delayMs: mode.lateMs } : {}
  })
  const engines: EngineProcess[] = []
  /** Every engine started, killed ones included (their deliveries count). */
  const started: EngineProcess[] = []
  const delivered = () => started.reduce((n, e) => n + e.delivered, 0)
  try {
    engines.push(...(await startEngines(target.url, options.engines ?? 1, options.engine)))
    started.push(...engines)
    await api(engines[0]!.port, 'PUT', '/tenants/acme', {})
    await api(engines[0]!.port, 'POST', '/tenants/acme/destinations', { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/hook` } })

    const windows: { start: number; end?: number }[] = []
    const ctx: FaultContext = {
      target,
      engines,
      async replaceEngine(index) {
        const old = engines[index]!
        old.proc.kill('SIGKILL')
        await old.exited
        const fresh = await startEngine(target.url, options.engine)
        started.push(fresh)
        engines[index] = fresh
      },
      mark(phase) {
        if (phase === 'start') windows.push({ start: Date.now() })
        else windows.at(-1)!.end = Date.now()
      },
      receiver: (next) => void (mode = next),
      unavailableAnswers: () => publishers.samples.filter((sample) => sample.outcome === 503).length,
    }
    const publishers = startPublishers(engines, options.publishers, options.requestBoundMs)
    const readers = startReaders(engines, options.readers ?? 0, options.requestBoundMs)
    const loadStart = Date.now()
    await sleep(options.before)
    const faultStart = Date.now()
    await options.fault(ctx)
    const faultEnd = Date.now()
    const deliveredAtFaultEnd = delivered()
    await sleep(options.after)
    const loadEnd = Date.now()
    await Promise.all([publishers.stop(), readers.stop()])

    return {
      scenario: options.name,
      ...summarize(publishers.samples, windows, options),
      ...rates(publishers.samples, loadStart, faultStart, faultEnd, loadEnd),
      reads: readFigures(readers.samples, windows, options.requestBoundMs),
      ...(await drain(target, publishers.acked, answered, () => engines.some((e) => e.alive()), options.drainMs, runStart)),
      alive: engines.every((e) => e.alive()),
      deliveredAfterFault: delivered() - deliveredAtFaultEnd,
      engineErrors: engineErrors(started),
    }
  } finally {
    await stopEngines(started)
    await receiver.close()
  }
}

/**
 * Once the load stopped: wait for every acknowledged event at the receiver and every delivery recorded as a
 * success, then count what was lost and duplicated. Each wait goes on while the count moves and gives up once
 * it stalled for `drainMs` (or no engine is left): on a loaded machine delivery is slow, not lost.
 */
async function drain(target: ScenarioTarget, acked: Set<string>, answered: Received[], anyAlive: () => boolean, drainMs: number, runStart: number) {
  const received = () => new Set(answered.map((r) => String(r.headers['webhook-id'])))
  const arrived = () => {
    if (!anyAlive()) return acked.size
    const now = received()
    let n = 0
    for (const id of acked) if (now.has(id)) n++
    return n
  }
  await waitForProgress(arrived, acked.size, 'every acknowledged publish delivered', drainMs).catch(() => undefined)
  // Every delivery recorded as a success: nothing left that could still be attempted (again).
  let left = -1
  const recorded = async () => {
    left = await unrecorded(target)
    return anyAlive() ? -left : 0
  }
  await waitForProgress(recorded, 0, 'every delivery recorded', drainMs).catch(() => undefined)
  await sleep(500) // let stragglers (duplicates) arrive
  const unrecordedSample = left > 0 ? await unrecordedRows(target) : []
  const seen = received()
  const lost = [...acked].filter((id) => !seen.has(id)).length
  return {
    published: acked.size,
    delivered: acked.size - lost,
    lost,
    unrecorded: left,
    unrecordedSample,
    duplicates: answered.length - seen.size,
    duplicated: [...byId(answered).entries()].filter(([, at]) => at.length > 1).map(([id, at]) => ({ id, at: at.map((t) => t - runStart) })),
  }
}

/** The request figures of a run: outcomes, bad answers, latencies, error rates and recovery. */
function summarize(samples: Sample[], windows: { start: number; end?: number }[], options: ScenarioOptions) {
  const allowed = new Set<Sample['outcome']>([202, 503, ...(options.allowNetworkErrors ? ['network' as const] : [])])
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
  const endOf = (w: { start: number; end?: number }) => w.end ?? w.start
  const duringFault = samples.filter((s) => windows.some((w) => s.start <= endOf(w) && s.end >= w.start))
  return {
    attempted: new Set(samples.map((s) => s.id)).size,
    outcomes,
    bad: samples.filter((s) => !allowed.has(s.outcome) || s.end - s.start > options.requestBoundMs),
    recoverMs: Math.max(0, ...windows.map((w) => (successes.find((t) => t >= endOf(w)) ?? Date.now()) - endOf(w))),
    peakErrorRate: Math.max(0, ...[...perSecond.values()].map((b) => b.errors / b.n)),
    maxLatencyMs: Math.max(0, ...samples.map((s) => s.end - s.start)),
    maxFaultLatencyMs: Math.max(0, ...duringFault.map((s) => s.end - s.start)),
  }
}

/** The readers' answers: by outcome, those not answered 200/503 within the bound, and how many were answered 200 during a fault. */
function readFigures(samples: Sample[], windows: { start: number; end?: number }[], boundMs: number) {
  const outcomes: Record<string, number> = {}
  for (const s of samples) outcomes[String(s.outcome)] = (outcomes[String(s.outcome)] ?? 0) + 1
  const during = (s: Sample) => windows.some((w) => s.end >= w.start && s.end <= (w.end ?? w.start))
  return {
    outcomes,
    bad: samples.filter((s) => (s.outcome !== 200 && s.outcome !== 503) || s.end - s.start > boundMs),
    okDuringFault: samples.filter((s) => s.outcome === 200 && during(s)).length,
  }
}

/** Publishes acknowledged per second before the fault and after it (throughput returns to its earlier level). */
function rates(samples: Sample[], loadStart: number, faultStart: number, faultEnd: number, loadEnd: number) {
  const acked = (from: number, to: number) => samples.filter((s) => s.outcome === 202 && s.end >= from && s.end < to).length / Math.max(0.001, (to - from) / 1000)
  return { rateBefore: acked(loadStart, faultStart), rateAfter: acked(faultEnd, loadEnd) }
}

/** Reception times per webhook-id. */
export function byId(received: { headers: Record<string, unknown>; at: number }[]): Map<string, number[]> {
  const out = new Map<string, number[]>()
  for (const r of received) {
    const id = String(r.headers['webhook-id'])
    out.set(id, [...(out.get(id) ?? []), r.at])
  }
  return out
}
