// Fault scenario 7, held xmin: a session sits idle in a transaction that holds an XID while the engine
// runs at a steady load, so no row version deleted or updated since can be vacuumed. Measures delivery
// throughput, the backlog, dead tuples in the queue tables and the cost of one claim before, during and
// after; the queue must keep up and recover once the session ends. Engines are processes on a
// throwaway cluster: an API-only one taking the publishes and a worker claiming them (the deployment
// where every delivery goes through a claim).
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'postgres'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { encryptionKey } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { api, engineErrors, startEngines, stopEngines, type EngineOptions, type EngineProcess } from './engine-process.js'
import { byId, postgresOf, unrecorded, type ScenarioTarget } from './scenarios.js'

export interface HeldXminOptions {
  name: string
  publishers: number
  /** Publishes per second per publisher. */
  rate: number
  beforeMs: number
  holdMs: number
  afterMs: number
  engine: EngineOptions
  drainMs: number
  /** Who holds the XID: a session idle in transaction (default), or an outbox host's transaction that published an event. */
  holder?: 'idle' | 'outbox'
}

export interface PhaseFigures {
  phase: 'before' | 'held' | 'after'
  /** Deliveries per second the receiver got in this phase, and publishes acknowledged per second. */
  deliveredPerSecond: number
  publishedPerSecond: number
  /** Deliveries not yet succeeded at the phase's end. */
  backlog: number
  /** n_dead_tup at the phase's end. */
  dead: { deliveries: number; events: number; attempts: number }
  /** Buffers one claim of 100 due deliveries touched at the phase's end, scanning from the oldest due. */
  claimBuffers: number
  /** The engine's own claims in this phase (pg_stat_statements): per second, buffers each on average, and ms of database time per second. */
  claims: { perSecond: number; buffersPerCall: number; msPerSecond: number }
}

export interface HeldXminResult {
  scenario: string
  published: number
  delivered: number
  lost: number
  duplicates: number
  unrecorded: number
  /** Publishes answered 503 (retried with the same id), and those answered otherwise or not within 10 s. */
  unavailablePublishes: number
  badPublishes: number
  /** Longest publish while the XID was held, ms. */
  maxHeldLatencyMs: number
  phases: PhaseFigures[]
  engineErrors: string[]
}

/** The worker's claim (src/storage/sql-queue.ts, claimDueDeliveries) without its locks, for EXPLAIN. */
const claimSql = `select id from deliveries where status = 'pending' and next_attempt_at <= now()
  and (lease_until is null or lease_until < now()) order by next_attempt_at limit 100`

async function measure(sql: pg.Sql): Promise<Pick<PhaseFigures, 'backlog' | 'dead' | 'claimBuffers'>> {
  const [{ n }] = await sql<[{ n: number }]>`select count(*)::int as n from deliveries where status <> 'success'`
  const rows = await sql<{ relname: string; n: number }[]>`select relname, n_dead_tup::int as n from pg_stat_user_tables where relname in ('deliveries', 'events', 'attempts')`
  const dead = Object.fromEntries(rows.map((r) => [r.relname, r.n])) as PhaseFigures['dead']
  const [plan] = await sql.unsafe(`explain (analyze, buffers, format json) ${claimSql}`)
  const top = (plan as unknown as { 'QUERY PLAN': { Plan: Record<string, number> }[] })['QUERY PLAN'][0]!.Plan
  return { backlog: n, dead, claimBuffers: (top['Shared Hit Blocks'] ?? 0) + (top['Shared Read Blocks'] ?? 0) }
}

/** Totals of the engine's claim statements so far, or of the calls of the functions that run them (the cluster must load pg_stat_statements). */
async function claimTotals(sql: pg.Sql): Promise<{ calls: number; buffers: number; ms: number }> {
  const [row] = await sql<[{ calls: number; buffers: number; ms: number }]>`
    select coalesce(sum(calls), 0)::float8 as calls, coalesce(sum(shared_blks_hit + shared_blks_read), 0)::float8 as buffers,
      coalesce(sum(total_exec_time), 0)::float8 as ms
    from pg_stat_statements where query like '%"deliveries"%for update skip locked%' or query like 'select * from %.%outflow\\_claim%'`
  return row
}

export async function runHeldXmin(target: ScenarioTarget, options: HeldXminOptions): Promise<HeldXminResult> {
  const { url } = postgresOf(target)
  const sql = pg(url, { max: 1, onnotice: () => {} })
  const holder = pg(url, { max: 1, onnotice: () => {} })
  const quiet = { debug() {}, info() {}, warn() {}, error() {} }
  const host =
    options.holder === 'outbox'
      ? await createOutflow({ storage: postgres({ url, max: 2 }), encryptionKey, migrate: false, logger: quiet, delivery: { worker: false } })
      : undefined
  const receiver = await startReceiver()
  const engines: EngineProcess[] = []
  try {
    // Autovacuum looks every second (default: a minute), so the phase after the hold shows what it reclaims.
    await sql`alter system set autovacuum_naptime = '1s'`
    await sql`select pg_reload_conf()`
    await sql`create extension if not exists pg_stat_statements`
    engines.push(...(await startEngines(url, 2, [{ ...options.engine, worker: false }, options.engine])))
    const front = engines[0]!
    await api(front.port, 'PUT', '/tenants/acme', {})
    await api(front.port, 'POST', '/tenants/acme/destinations', { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/hook` } })

    const acked: string[] = []
    let unavailablePublishes = 0
    let badPublishes = 0
    let holding = false
    let maxHeldLatencyMs = 0
    let stopping = false
    const publisher = async (p: number) => {
      for (let n = 0; !stopping; ) {
        const start = Date.now()
        const due = start + 1000 / options.rate
        const id = `p${p}-${n}`
        const response = await fetch(`http://127.0.0.1:${front.port}/api/v1/publish`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ id, tenant_id: 'acme', topic: 'order.created', data: { p, n } }),
          signal: AbortSignal.timeout(10_000),
        }).catch(() => undefined)
        await response?.arrayBuffer()
        if (holding) maxHeldLatencyMs = Math.max(maxHeldLatencyMs, Date.now() - start)
        if (response?.status === 202) {
          acked.push(id)
          n++
        } else if (response?.status === 503) unavailablePublishes++
        else badPublishes++
        await sleep(Math.max(0, due - Date.now()))
      }
    }
    const publishers = Array.from({ length: options.publishers }, (_, p) => publisher(p))
    const phases: PhaseFigures[] = []
    const phase = async (name: PhaseFigures['phase'], ms: number) => {
      const start = { at: Date.now(), delivered: receiver.on('/hook').length, published: acked.length, claims: await claimTotals(sql) }
      await sleep(ms)
      const seconds = (Date.now() - start.at) / 1000
      const claims = await claimTotals(sql)
      const calls = claims.calls - start.claims.calls
      phases.push({
        phase: name,
        deliveredPerSecond: (receiver.on('/hook').length - start.delivered) / seconds,
        publishedPerSecond: (acked.length - start.published) / seconds,
        claims: { perSecond: calls / seconds, buffersPerCall: (claims.buffers - start.claims.buffers) / Math.max(1, calls), msPerSecond: (claims.ms - start.claims.ms) / seconds },
        ...(await measure(sql)),
      })
    }
    await phase('before', options.beforeMs)
    // Idle in transaction with an XID: the oldest xmin every vacuum of this database must respect. An
    // outbox host publishes its event in the transaction it holds open (publish(e, { tx })).
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const held = holder.begin(async (tx) => {
      if (host) await host.publish({ id: 'held-outbox', tenant_id: 'acme', topic: 'order.created', data: {} }, { tx })
      else await tx`select txid_current()`
      await released
    })
    holding = true
    await phase('held', options.holdMs)
    holding = false
    release()
    await held
    if (host) acked.push('held-outbox')
    await phase('after', options.afterMs)
    stopping = true
    await Promise.all(publishers)

    const seen = () => new Set(receiver.on('/hook').map((r) => String(r.headers['webhook-id'])))
    await waitFor(() => {
      const now = seen()
      return acked.every((id) => now.has(id))
    }, options.drainMs, 'every publish delivered').catch(() => undefined)
    let left = -1
    await waitFor(async () => (left = await unrecorded(target)) === 0, 10_000, 'every delivery recorded').catch(() => undefined)
    const all = receiver.on('/hook')
    const delivered = seen()
    return {
      scenario: options.name,
      published: acked.length,
      delivered: acked.filter((id) => delivered.has(id)).length,
      lost: acked.filter((id) => !delivered.has(id)).length,
      duplicates: [...byId(all).values()].filter((at) => at.length > 1).length,
      unrecorded: left,
      unavailablePublishes,
      badPublishes,
      maxHeldLatencyMs,
      phases,
      engineErrors: engineErrors(engines),
    }
  } finally {
    await stopEngines(engines)
    await receiver.close()
    await host?.close()
    await holder.end()
    await sql.end()
  }
}
