/**
 * `npm run bench`: every Outflow figure and its anchors, measured in one run on this machine,
 * printed as one markdown table on stdout (progress goes to stderr).
 *
 *   npx tsx bench/run.ts                 full sizes (20,000 deliveries, 1,000,000 stored events, ...)
 *   npx tsx bench/run.ts --quick         small sizes, the whole table in under 2 minutes
 *   npx tsx bench/run.ts --soak --only soak   also the 1,000,000-delivery soak (tens of minutes)
 *   npx tsx bench/run.ts --only delivery,ceiling [--db sqlite]   iterate on some rows
 *   npx tsx bench/run.ts --json out.json also write the raw figures
 *   npx tsx bench/run.ts --only latency --cpu-prof /tmp/prof   a V8 CPU profile of each scenario process
 *   npx tsx bench/run.ts --compare HEAD~1 --only delivery,drain [--rounds 3]   this tree against a revision,
 *                                        alternating run by run, with each figure's ratio
 *
 * Before each scenario the machine is settled (dirty pages written, a Postgres CHECKPOINT, the CPUs idle for a
 * second), so no row pays for the WAL or the page cache left by the one before.
 *
 * Each scenario runs in a child process of its own (fresh memory, nothing left running from the
 * previous one) with a fresh Postgres database `outflow_bench_<pid>_<n>` or SQLite directory,
 * removed when it ends. Scenarios are bounded: a child that outlives its limit is killed.
 */
import { fork } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { prepareRevision, renderComparison, type Revision } from './support/compare.js'
import type { Db, ScenarioContext, ScenarioMessage } from './support/scenario.js'
import { adminPgUrl, natsUrl, createDatabase, databaseName, deleteRedisKeys, dropDatabase, dropStaleDatabases, reachable, redisUrl } from './support/services.js'
import { commitOf, loadAverage, settle } from './support/settle.js'
import { sizesFor } from './support/sizes.js'
import { renderTable, type Outcome, type Outcomes } from './support/table.js'

const benchDir = path.dirname(fileURLToPath(import.meta.url))
const repoDir = path.dirname(benchDir)

type Need = 'postgres' | 'redis' | 'nats' | 'engine'

interface Job {
  group: string
  db: Db | null
  file: string
  needs: Need[]
  /** Runs only with `--soak`, under its own time limit. */
  soak?: boolean
}

/** Every scenario, in the order they run. `group` is what `--only` takes. */
const plan: Job[] = ([
  { group: 'ceiling', db: null, file: 'anchors/undici-ceiling.ts', needs: [] },
  { group: 'pgboss', db: null, file: 'anchors/pgboss.ts', needs: ['postgres'] },
  { group: 'bullmq', db: null, file: 'anchors/bullmq.ts', needs: ['redis'] },
  { group: 'prune-day', db: 'postgres', file: 'outflow/prune-day.ts', needs: ['engine', 'postgres'] },
  { group: 'tenant-claims', db: 'postgres', file: 'outflow/tenant-claims.ts', needs: ['engine', 'postgres'] },
  ...(['sqlite', 'postgres'] as const).flatMap((db): Job[] => {
    const pg: Need[] = db === 'postgres' ? ['postgres'] : []
    return [
      { group: 'delivery', db, file: 'outflow/delivery.ts', needs: ['engine', ...pg] },
      { group: 'batch', db, file: 'outflow/batch.ts', needs: ['engine', ...pg] },
      { group: 'drain', db, file: 'outflow/drain.ts', needs: ['engine', ...pg] },
      { group: 'growth', db, file: 'outflow/growth.ts', needs: ['engine', ...pg] },
      { group: 'streams', db, file: 'outflow/streams.ts', needs: ['engine', 'nats', 'redis', ...pg] },
      { group: 'kafka-eventbridge', db, file: 'outflow/kafka-eventbridge.ts', needs: ['engine', ...pg] },
      { group: 'bare-insert', db, file: 'anchors/bare-insert.ts', needs: ['engine', ...pg] },
      { group: 'publish', db, file: 'outflow/publish.ts', needs: ['engine', ...pg] },
      { group: 'catalog', db, file: 'outflow/catalog.ts', needs: ['engine', ...pg] },
      { group: 'http-publish', db, file: 'outflow/http-publish.ts', needs: ['engine', ...pg] },
      { group: 'latency', db, file: 'outflow/latency.ts', needs: ['engine', ...pg] },
      { group: 'list', db, file: 'outflow/list.ts', needs: ['engine', ...pg] },
      { group: 'metrics', db, file: 'outflow/metrics.ts', needs: ['engine', ...pg] },
      { group: 'prune', db, file: 'outflow/prune.ts', needs: ['engine', ...pg] },
      { group: 'latency-prune', db, file: 'outflow/latency.ts', needs: ['engine', ...pg] },
      { group: 'latency-seeded', db, file: 'outflow/latency.ts', needs: ['engine', ...pg] },
      { group: 'latency-replay', db, file: 'outflow/latency.ts', needs: ['engine', ...pg] },
      { group: 'backlog', db, file: 'outflow/backlog.ts', needs: ['engine', ...pg] },
      { group: 'soak', db, file: 'outflow/soak.ts', needs: ['engine', ...pg], soak: true },
    ]
  }),
] as Job[]).sort((a, b) => groupOrder(a.group) - groupOrder(b.group))

function groupOrder(group: string): number {
  return ['ceiling', 'pgboss', 'bullmq', 'delivery', 'batch', 'drain', 'growth', 'streams', 'kafka-eventbridge', 'bare-insert', 'publish', 'catalog', 'http-publish', 'latency', 'list', 'metrics', 'prune', 'prune-day', 'tenant-claims', 'latency-prune', 'latency-seeded', 'latency-replay', 'backlog', 'soak'].indexOf(group)
}

const usage = `usage: tsx bench/run.ts [--quick] [--soak] [--only ${[...new Set(plan.map((j) => j.group))].join(',')}] [--db sqlite|postgres] [--json file] [--cpu-prof dir] [--compare REV [--rounds N]]`

function parseCli() {
  const { values } = parseArgs({
    options: {
      quick: { type: 'boolean', default: false },
      soak: { type: 'boolean', default: false },
      only: { type: 'string', multiple: true },
      db: { type: 'string' },
      json: { type: 'string' },
      'cpu-prof': { type: 'string' },
      compare: { type: 'string' },
      rounds: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    console.log(usage)
    process.exit(0)
  }
  const only = values.only?.flatMap((o) => o.split(',')).filter(Boolean)
  const unknown = only?.filter((o) => !plan.some((j) => j.group === o))
  if (unknown?.length) throw new Error(`unknown scenario ${unknown.join(', ')}\n${usage}`)
  if (values.db && values.db !== 'sqlite' && values.db !== 'postgres') throw new Error(`--db takes sqlite or postgres\n${usage}`)
  const rounds = values.rounds === undefined ? 2 : Number(values.rounds)
  if (!Number.isInteger(rounds) || rounds < 1 || rounds > 20) throw new Error(`--rounds takes a whole number from 1 to 20\n${usage}`)
  if (values.rounds !== undefined && !values.compare) throw new Error(`--rounds goes with --compare\n${usage}`)
  return { quick: values.quick!, soak: values.soak!, only, db: values.db as Db | undefined, json: values.json, cpuProf: values['cpu-prof'], compare: values.compare, rounds }
}

/** Why a job cannot run here, or null. */
async function availability(): Promise<Record<Need, string | null>> {
  const engineFiles = ['src/engine.ts', 'src/storage/sqlite.ts', 'src/storage/postgres.ts']
  const absent = engineFiles.filter((f) => !existsSync(path.join(repoDir, f)))
  return {
    engine: absent.length ? `skipped: engine not present (${absent.join(', ')})` : null,
    postgres: (await reachable(adminPgUrl, 5432)) ? null : `skipped: Postgres unreachable at ${adminPgUrl}`,
    redis: (await reachable(redisUrl, 6379)) ? null : `skipped: Redis unreachable at ${redisUrl}`,
    nats: (await reachable(natsUrl, 4222)) ? null : `skipped: NATS unreachable at ${natsUrl}`,
  }
}

let current: { kill: () => void; cleanup: () => Promise<void> } | null = null

/** Run one scenario of the tree at `treeDir` (this repository, or a revision's worktree) in a child process. */
async function runJob(job: Job, n: number, quick: boolean, cpuProf?: string, treeDir = repoDir, tag = ''): Promise<Outcome> {
  const sizes = sizesFor(quick)
  const timeoutMs = job.soak ? sizes.soakTimeoutMs : sizes.scenarioTimeoutMs
  const label = `${job.group}${job.db ? ` ${job.db}` : ''}${tag ? ` [${tag}]` : ''}`
  const needsPg = job.db === 'postgres' || job.needs.includes('postgres')
  const dbName = databaseName(process.pid, n)
  const tmpDir = mkdtempSync(path.join(os.tmpdir(), `outflow-bench-${process.pid}-`))
  const prefix = `outflow_bench_${process.pid}_${n}`
  let pgUrl: string | null = null
  const cleanup = async () => {
    rmSync(tmpDir, { recursive: true, force: true })
    if (needsPg) await dropDatabase(dbName).catch((err) => console.error(`  could not drop ${dbName}: ${err}`))
    if (job.needs.includes('redis')) await deleteRedisKeys(redisUrl, prefix).catch(() => {})
  }
  try {
    if (needsPg) pgUrl = await createDatabase(dbName)
    const profDir = cpuProf ? path.resolve(cpuProf, `${job.group}-${job.db ?? 'anchor'}${tag ? `-${tag.replace(/[^\w.-]/g, '_')}-${n}` : ''}`) : null
    const ctx: ScenarioContext = { name: job.group, quick, db: job.db, pgUrl, redisUrl, tmpDir, prefix, sizes, cpuProf: profDir }
    const unsettled = await settle({ postgres: needsPg })
    process.stderr.write(`▶ ${label}${unsettled ? ` (${unsettled})` : ''}\n`)
    const started = Date.now()
    const outcome = await new Promise<Outcome>((resolve) => {
      const child = fork(path.join(treeDir, 'bench', job.file), [], {
        cwd: treeDir,
        execArgv: ['--import', 'tsx', ...(profDir ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`] : [])],
        env: { ...process.env, BENCH_CONTEXT: JSON.stringify(ctx) },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      })
      // Both streams go to our stderr (stdout is for the table); the tail explains a crash.
      let tail = ''
      for (const stream of [child.stdout!, child.stderr!])
        stream.on('data', (chunk: Buffer) => {
          process.stderr.write(chunk)
          tail = (tail + chunk.toString('utf8')).slice(-4000)
        })
      let settled: Outcome | null = null
      const timer = setTimeout(() => {
        settled ??= { ok: false, reason: `timed out after ${timeoutMs / 1000} s` }
        child.kill('SIGKILL')
      }, timeoutMs)
      current = { kill: () => child.kill('SIGKILL'), cleanup }
      child.on('message', (msg: ScenarioMessage) => {
        settled ??= msg.type === 'result' ? { ok: true, figures: msg.figures } : { ok: false, reason: msg.message }
      })
      child.on('close', (code, signal) => {
        clearTimeout(timer)
        const why = tail.split('\n').find((line) => /Error|error:/.test(line))?.trim()
        resolve(settled ?? { ok: false, reason: `exited with ${signal ?? `code ${code}`} before reporting${why ? `: ${why}` : ''}` })
      })
    })
    if (outcome.ok && unsettled) outcome.figures.notes.push(unsettled)
    current = null
    const secs = ((Date.now() - started) / 1000).toFixed(1)
    process.stderr.write(outcome.ok ? `  ✓ ${label} (${secs} s)\n` : `  ✗ ${label} (${secs} s): ${outcome.reason.split('\n')[0]}\n`)
    return outcome
  } catch (err) {
    return { ok: false, reason: String(err instanceof Error ? err.message : err) }
  } finally {
    await cleanup()
  }
}

function sizeLine(quick: boolean): string {
  const s = sizesFor(quick)
  const f = (v: number) => v.toLocaleString('en-US')
  return `${quick ? 'quick' : 'full'} run: ${f(s.deliveries)} deliveries, ${f(s.storedEvents)} stored events, ${f(s.backlog)} pending backlog, concurrency ${s.concurrency}`
}

async function main(): Promise<void> {
  const cli = parseCli()
  const sizes = sizesFor(cli.quick)
  // The soak rows take many minutes: only with --soak (whatever --only says).
  const jobs = plan.filter((j) => (!cli.only || cli.only.includes(j.group)) && (!cli.db || j.db === null || j.db === cli.db) && (!j.soak || cli.soak))
  const missing = await availability()
  if (!missing.postgres) {
    const stale = await dropStaleDatabases().catch(() => [])
    if (stale.length) process.stderr.write(`dropped ${stale.length} database(s) left by earlier runs\n`)
  }
  process.stderr.write(`${sizeLine(cli.quick)}\n`)
  const runnable = jobs.filter((job) => !job.needs.some((need) => missing[need]))
  if (cli.compare) return compare(runnable, cli.compare, cli.rounds, cli.quick, cli.cpuProf)
  const started = Date.now()
  const loadAtStart = loadAverage()
  const outcomes: Outcomes = new Map()
  let n = 0
  for (const job of jobs) {
    const key = job.db ? `${job.group}:${job.db}` : job.group
    const blocker = job.needs.map((need) => missing[need]).find((reason) => reason)
    if (blocker) {
      outcomes.set(key, { ok: false, reason: blocker })
      process.stderr.write(`- ${key}: ${blocker}\n`)
      continue
    }
    outcomes.set(key, await runJob(job, ++n, cli.quick, cli.cpuProf))
  }
  const seconds = (Date.now() - started) / 1000

  const cpus = os.cpus()
  const lines = [
    `Outflow bench, ${sizeLine(cli.quick)}. Commit ${commitOf(repoDir)}, Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${new Date().toISOString().slice(0, 16)}Z, ${seconds.toFixed(0)} s, load average ${loadAtStart.toFixed(2)} at the start and ${loadAverage().toFixed(2)} at the end.`,
    '',
    renderTable(outcomes, sizes),
    '',
  ]
  const notes = [...outcomes].flatMap(([key, o]) => {
    if (!o.ok) return []
    const duplicates = o.figures.values.duplicates ?? 0
    return [...o.figures.notes, ...(duplicates > 0 ? [`the sink received ${duplicates} duplicate deliveries`] : [])].map((note) => `${key}: ${note}`)
  })
  const errors = [...outcomes].filter(([, o]) => !o.ok && !o.reason.startsWith('skipped'))
  const skipped = [...new Set([...outcomes.values()].flatMap((o) => (!o.ok && o.reason.startsWith('skipped') ? [o.reason] : [])))]
  if (notes.length) lines.push('Notes:', ...notes.map((note) => `- ${note}`), '')
  if (errors.length) lines.push('† Errors:', ...errors.map(([key, o]) => `- ${key}: ${(o as { reason: string }).reason.split('\n').slice(0, 4).join(' ⏎ ')}`), '')
  if (skipped.length) lines.push(...skipped.map((s) => `- ${s}`), '')
  process.stdout.write(lines.join('\n'))
  if (cli.json) writeFileSync(cli.json, JSON.stringify({ sizes, seconds, outcomes: Object.fromEntries(outcomes) }, null, 2))
}

let revision: Revision | null = null

/**
 * `--compare REV`: each chosen scenario of this tree and of REV (a temporary worktree measured by this tree's
 * scenarios), alternating which goes first from round to round, `rounds` times each; prints every figure of
 * every run and the ratio of the medians.
 */
async function compare(jobs: Job[], rev: string, rounds: number, quick: boolean, cpuProf?: string): Promise<void> {
  revision = prepareRevision(repoDir, rev)
  const { lockDiffers } = revision
  const started = Date.now()
  const loadAtStart = loadAverage()
  const tree = commitOf(repoDir)
  process.stderr.write(`comparing this tree (${tree}) with ${rev} (${revision.commit}) in ${revision.dir}, ${rounds} round(s)\n`)
  const results = new Map<string, { tree: Outcome[]; rev: Outcome[] }>()
  let n = 0
  try {
    for (let round = 0; round < rounds; round++)
      for (const job of jobs) {
        const key = job.db ? `${job.group}:${job.db}` : job.group
        const entry = results.get(key) ?? { tree: [], rev: [] }
        results.set(key, entry)
        const sides = [
          { dir: repoDir, runs: entry.tree, tag: 'this tree' },
          { dir: revision.dir, runs: entry.rev, tag: rev },
        ]
        for (const side of round % 2 === 0 ? sides : sides.reverse()) side.runs.push(await runJob(job, ++n, quick, cpuProf, side.dir, side.tag))
      }
  } finally {
    revision.remove()
    revision = null
  }
  const cpus = os.cpus()
  const header = `Outflow bench --compare: this tree (${tree}) / ${rev}, ${rounds} run(s) each, alternating; ${sizeLine(quick)}. Node ${process.version}, ${cpus.length} × ${cpus[0]?.model.trim() ?? 'cpu'}, ${new Date().toISOString().slice(0, 16)}Z, ${((Date.now() - started) / 1000).toFixed(0)} s, load average ${loadAtStart.toFixed(2)} at the start and ${loadAverage().toFixed(2)} at the end.`
  const lockNote = lockDiffers ? [`- ${rev}'s package-lock.json differs from this tree's: both ran with this tree's node_modules.`, ''] : []
  process.stdout.write([header, '', renderComparison(results, rev), '', ...lockNote].join('\n'))
}

for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => {
    process.stderr.write(`\n${signal}: stopping the current scenario and cleaning up\n`)
    const job = current
    job?.kill()
    void (job?.cleanup() ?? Promise.resolve()).finally(() => {
      revision?.remove()
      process.exit(130)
    })
  })

main().catch((err) => {
  console.error(err instanceof Error ? err.message : err)
  process.exit(1)
})
