// `npm run chaos`: the long versions of the fault scenarios (issue 12) on a throwaway Postgres cluster
// and on SQLite files, printed as the tables in docs/faults.md. `npm run chaos -- restart storm` runs
// only the scenarios whose names contain one of the words given.
// Load scenarios: engine processes (test/fixtures/fault-engine.ts) with storage timeout 2 s and leases
// of 5 s, 8 publishers over HTTP retrying every 503 with the same event id, a local webhook receiver.
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { startCluster, type Cluster } from '../support/pg-cluster.js'
import { diskFull, holdWriteLock, killEngines, lockQueueTable, pause, receiverFault, restart, terminateBackends } from './fault-actions.js'
import { runHeldXmin, type HeldXminOptions, type HeldXminResult } from './held-xmin.js'
import { runRetryStorm, type StormOptions, type StormResult } from './retry-storm.js'
import { postgresTarget, runScenario, sqliteTarget, type ScenarioOptions, type ScenarioResult, type ScenarioTarget } from './scenarios.js'

const base: Omit<ScenarioOptions, 'name' | 'fault'> = {
  before: 5_000,
  after: 10_000,
  publishers: 8,
  engine: { timeoutMs: 2_000, leaseMs: 5_000 },
  requestBoundMs: 10_000,
  drainMs: 120_000,
}
/** Receiver faults: retries every 2 s, and no auto-disable (the burst would disable the destination, see docs/delivery.md). */
const receiverEngine = { ...base.engine, retry: { schedule: Array.from({ length: 30 }, () => 2_000) }, autoDisable: false }
const xminOptions: Omit<HeldXminOptions, 'name'> = {
  publishers: 8,
  rate: 25,
  beforeMs: 20_000,
  holdMs: 120_000,
  afterMs: 40_000,
  engine: { timeoutMs: 5_000, leaseMs: 30_000, pollIntervalMs: 1_000 },
  drainMs: 120_000,
}
const storm: Omit<StormOptions, 'name' | 'engines'> = {
  deliveries: 10_000,
  outageMs: 30_000,
  retryAfterS: 30,
  engine: { timeoutMs: 5_000, leaseMs: 60_000 },
  publishConcurrency: 16,
  drainMs: 300_000,
}

interface Row {
  scenario: string
  storage: string
  /** Distinct events tried, and acknowledged (202). */
  published: number
  acknowledged: number
  delivered: number
  lost: number
  duplicates: number
  /** Longest publish answer while a fault was on, ms (null: no publishes during the fault). */
  faultLatencyMs: number | null
  recoverMs: number
  /** Worst second's share of publishes not acknowledged (null: no publishes during the fault). */
  peakErrorRate: number | null
  /** Publishes acknowledged per second before and after the fault (null: not measured this way). */
  rates: [number, number] | null
  /** Publishes answered 500 or not within the bound. */
  bad: number
  recovered: boolean
  load: number
}

interface Env {
  cluster: Cluster
  dir: string
  /** A mounted 64 MiB tmpfs (root only), for the disk-full scenario. */
  tmpfs?: string
}

const fromScenario = (storage: string, r: ScenarioResult): Omit<Row, 'scenario' | 'load'> => ({
  storage,
  published: r.attempted,
  acknowledged: r.published,
  delivered: r.delivered,
  lost: r.lost,
  duplicates: r.duplicates,
  faultLatencyMs: r.maxFaultLatencyMs,
  recoverMs: r.recoverMs,
  peakErrorRate: r.peakErrorRate,
  rates: [r.rateBefore, r.rateAfter],
  bad: r.bad.length,
  recovered: r.alive && r.unrecorded === 0,
})

const storms: (StormResult & { storage: string })[] = []
const fromStorm = (storage: string, r: StormResult): Omit<Row, 'scenario' | 'load'> => {
  storms.push({ ...r, storage })
  return { storage, published: r.published, acknowledged: r.published, delivered: r.delivered, lost: r.lost, duplicates: r.duplicates, faultLatencyMs: null, recoverMs: r.recoverMs, peakErrorRate: null, rates: null, bad: 0, recovered: r.unrecorded === 0 && r.mismatched === 0 }
}

const xmins: (HeldXminResult & { holder: string })[] = []
const fromXmin = (holder: string, r: HeldXminResult): Omit<Row, 'scenario' | 'load'> => {
  xmins.push({ ...r, holder })
  const [before, after] = [r.phases.find((p) => p.phase === 'before'), r.phases.find((p) => p.phase === 'after')]
  const rates: [number, number] | null = before && after ? [before.publishedPerSecond, after.publishedPerSecond] : null
  return { storage: 'postgres', published: r.published, acknowledged: r.published, delivered: r.delivered, lost: r.lost, duplicates: r.duplicates, faultLatencyMs: r.maxHeldLatencyMs, recoverMs: 0, peakErrorRate: null, rates, bad: r.badPublishes, recovered: r.unrecorded === 0 }
}

const pg = (env: Env, name: string) => postgresTarget(env.cluster, name)
const lite = (env: Env, name: string): ScenarioTarget => sqliteTarget(env.dir, name)
const scenarios: { name: string; run(env: Env): Promise<Omit<Row, 'scenario' | 'load'> | undefined> }[] = [
  { name: 'restart (`pg_ctl restart -m fast` after 5 s)', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'restart'), { ...base, name: 'restart', fault: restart })) },
  { name: 'backend kills (`pg_terminate_backend` every 2 s for 30 s)', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'kills'), { ...base, name: 'kills', fault: terminateBackends(2_000, 30_000) })) },
  // The worker waits 10 s a call, API requests 2 s: the table's slowest answer shows the callers' bound.
  { name: 'pause (SIGSTOP of the postmaster and backends for 20 s; storage calls 10 s, requests 2 s)', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'pause'), { ...base, engine: { ...base.engine, timeoutMs: 10_000, requestTimeoutMs: 2_000 }, name: 'pause', fault: pause(20_000) })) },
  { name: 'engine kills (SIGKILL one of 3 engines every 5 s for 60 s)', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'engines'), { ...base, name: 'engines', engines: 3, allowNetworkErrors: true, fault: killEngines(5_000, 60_000) })) },
  { name: 'pool exhaustion (a host job locks `deliveries` EXCLUSIVE for 20 s)', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'pool'), { ...base, name: 'pool', fault: lockQueueTable(20_000) })) },
  { name: 'pool exhaustion (another process holds the write lock for 20 s)', run: async (env) => fromScenario('sqlite', await runScenario(lite(env, 'pool'), { ...base, name: 'pool', fault: holdWriteLock(20_000) })) },
  { name: 'retry storm (10,000 deliveries, 503 + Retry-After: 30 for 30 s, 2 engines)', run: async (env) => fromStorm('postgres', await runRetryStorm(await pg(env, 'storm'), { ...storm, name: 'storm', engines: 2 })) },
  { name: 'retry storm (10,000 deliveries, 503 + Retry-After: 30 for 30 s)', run: async (env) => fromStorm('sqlite', await runRetryStorm(lite(env, 'storm'), { ...storm, name: 'storm', engines: 1 })) },
  {
    name: 'held xmin (idle in transaction with an XID for 2 min, 200 publishes/s)',
    run: async (env) => fromXmin('idle session', await runHeldXmin(await pg(env, 'xmin'), { ...xminOptions, name: 'xmin' })),
  },
  {
    name: 'held xmin (an outbox host transaction open for 2 min, 200 publishes/s)',
    run: async (env) => fromXmin('outbox host', await runHeldXmin(await pg(env, 'outbox'), { ...xminOptions, name: 'outbox', holder: 'outbox' })),
  },
  { name: 'receiver hangs (accepts, never answers) for 15 s', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'hang'), { ...base, engine: receiverEngine, name: 'hang', fault: receiverFault('hang', 15_000) })) },
  { name: 'receiver answers 200 after the attempt timeout for 15 s', run: async (env) => fromScenario('postgres', await runScenario(await pg(env, 'late'), { ...base, engine: receiverEngine, name: 'late', fault: receiverFault({ lateMs: 6_000 }, 15_000) })) },
  {
    name: 'disk full (a 64 MiB tmpfs filled for 10 s, then emptied)',
    run: async (env) => (env.tmpfs ? fromScenario('sqlite', await runScenario(sqliteTarget(env.tmpfs, 'disk'), { ...base, name: 'disk', fault: diskFull(10_000) })) : undefined),
  },
]

function mountTmpfs(): string | undefined {
  if (process.getuid?.() !== 0) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'outflow-chaos-disk-'))
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64m', 'tmpfs', dir], { stdio: 'pipe' })
    return dir
  } catch {
    rmSync(dir, { recursive: true, force: true })
    return undefined
  }
}

const only = process.argv.slice(2)
const chosen = only.length ? scenarios.filter((s) => only.some((o) => s.name.includes(o))) : scenarios
const env: Env = { cluster: await startCluster({ statements: true }), dir: mkdtempSync(join(tmpdir(), 'outflow-chaos-')), tmpfs: mountTmpfs() }
const rows: Row[] = []
try {
  for (const scenario of chosen) {
    process.stderr.write(`running ${scenario.name}…\n`)
    const row = await scenario.run(env)
    if (!row) {
      process.stderr.write('  skipped (needs root to mount a tmpfs)\n')
      continue
    }
    rows.push({ scenario: scenario.name, load: loadavg()[0]!, ...row })
    process.stderr.write(`  ${JSON.stringify(rows.at(-1))}\n`)
  }
} finally {
  await env.cluster.stop()
  rmSync(env.dir, { recursive: true, force: true })
  if (env.tmpfs) {
    execFileSync('umount', [env.tmpfs])
    rmSync(env.tmpfs, { recursive: true, force: true })
  }
}

const s = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)} s`)
const table = (header: string[], body: (string | number)[][]) =>
  [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.join(' | ')} |`)].join('\n')
console.log(`Measured ${new Date().toISOString().slice(0, 10)}; load average (1 min) at the end of each run in brackets, "loaded" above 3.\n`)
console.log(
  table(
    ['scenario', 'storage', 'published', 'acknowledged', 'delivered', 'lost', 'duplicates', 'slowest answer during the fault', 'time to recover', 'peak error rate', '202/s before → after', '500s / hangs', 'recovered'],
    rows.map((r) => [
      `${r.scenario}${r.load > 3 ? ` (loaded, ${r.load.toFixed(1)})` : ` (${r.load.toFixed(1)})`}`,
      r.storage,
      r.published,
      r.acknowledged,
      r.delivered,
      r.lost,
      r.duplicates,
      s(r.faultLatencyMs),
      s(r.recoverMs),
      r.peakErrorRate === null ? '—' : `${Math.round(r.peakErrorRate * 100)} %`,
      r.rates ? `${Math.round(r.rates[0])} → ${Math.round(r.rates[1])}` : '—',
      r.bad,
      r.recovered ? 'yes' : 'NO',
    ]),
  ),
)
if (storms.length) {
  console.log('\nRetry storms: retries at the receiver, and the delays the engines scheduled after the first failures\n')
  console.log(
    table(
      ['storage', 'requests', 'recorded attempts', 'peak retries/s', 'mean retries/s', 'delay min–max', 'most common delay (share)'],
      storms.map((r) => {
        const counts = new Map<number, number>()
        for (const d of r.delays) counts.set(d, (counts.get(d) ?? 0) + 1)
        const [mode, n] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0] ?? [0, 0]
        return [r.storage, r.requests, r.attempts, r.peakRate, Math.round(r.meanRate), `${s(Math.min(...r.delays))}–${s(Math.max(...r.delays))}`, `${mode} ms (${((n / Math.max(1, r.delays.length)) * 100).toFixed(1)} %)`]
      }),
    ),
  )
}
if (xmins.length) {
  console.log('\nHeld xmin, per phase: deliveries and publishes per second, backlog, dead tuples at the end of the phase, and buffers one claim reads\n')
  console.log(
    table(
      ['holder', 'phase', 'delivered/s', 'published/s', 'backlog', 'dead deliveries', 'dead events', 'dead attempts', 'full-scan claim buffers', 'engine claims/s', 'buffers per engine claim', 'claim DB ms/s'],
      xmins.flatMap((x) =>
        x.phases.map((p) => [
          x.holder,
          p.phase,
          p.deliveredPerSecond.toFixed(0),
          p.publishedPerSecond.toFixed(0),
          p.backlog,
          p.dead.deliveries,
          p.dead.events,
          p.dead.attempts,
          p.claimBuffers,
          p.claims.perSecond.toFixed(0),
          p.claims.buffersPerCall.toFixed(0),
          p.claims.msPerSecond.toFixed(1),
        ]),
      ),
    ),
  )
}
const failed = rows.some((r) => r.lost > 0 || r.bad > 0 || !r.recovered)
process.exit(failed ? 1 : 0)
