// `npm run chaos`: the long versions of the fault scenarios on a throwaway Postgres cluster, printed as
// the table in README (Faults). `npm run chaos -- restart pause` runs only the scenarios named.
// Each scenario: engine processes (test/fixtures/fault-engine.ts) with storage timeout 2 s and leases
// of 5 s, 8 publishers over HTTP retrying every 503 with the same event id, a local webhook receiver.
import { startCluster } from '../support/pg-cluster.js'
import { killEngines, pause, restart, runScenario, terminateBackends, type ScenarioOptions, type ScenarioResult } from './scenarios.js'

const base: Omit<ScenarioOptions, 'name' | 'fault'> = {
  before: 5_000,
  after: 10_000,
  publishers: 8,
  engine: { timeoutMs: 2_000, leaseMs: 5_000 },
  requestBoundMs: 10_000,
  drainMs: 120_000,
}

const scenarios: ScenarioOptions[] = [
  { ...base, name: 'restart', fault: restart },
  { ...base, name: 'backend kills', fault: terminateBackends(2_000, 30_000) },
  { ...base, name: 'pause', fault: pause(20_000) },
  { ...base, name: 'engine kills', engines: 3, allowNetworkErrors: true, fault: killEngines(5_000, 60_000) },
]

const only = process.argv.slice(2)
const chosen = only.length ? scenarios.filter((s) => only.some((o) => s.name.includes(o))) : scenarios
const cluster = await startCluster()
const results: ScenarioResult[] = []
try {
  for (const scenario of chosen) {
    process.stderr.write(`running ${scenario.name}…\n`)
    const result = await runScenario(cluster, scenario)
    results.push(result)
    process.stderr.write(`${JSON.stringify({ ...result, bad: result.bad.length, engineErrors: result.engineErrors.length })}\n`)
    for (const line of result.engineErrors.filter((l) => !l.includes('http request failed'))) process.stderr.write(`  ${line}\n`)
  }
} finally {
  await cluster.stop()
}

const rows = results.map((r) => [
  r.scenario,
  r.published,
  r.delivered,
  r.lost,
  r.duplicates,
  `${(r.recoverMs / 1000).toFixed(1)} s`,
  `${Math.round(r.peakErrorRate * 100)} %`,
  `${(r.maxLatencyMs / 1000).toFixed(1)} s`,
  r.bad.length,
  r.alive && r.unrecorded === 0 ? 'yes' : 'NO',
])
const header = ['scenario', 'published', 'delivered', 'lost', 'duplicates', 'time to recover', 'peak error rate', 'slowest answer', '500s / hangs', 'recovered']
console.log(`| ${header.join(' | ')} |\n|${header.map(() => '---').join('|')}|`)
for (const row of rows) console.log(`| ${row.join(' | ')} |`)
const failed = results.some((r) => r.lost > 0 || r.bad.length > 0 || !r.alive || r.unrecorded !== 0)
process.exit(failed ? 1 : 0)
