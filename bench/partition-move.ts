/**
 * Moving a plain Postgres event log to daily partitions while it delivers (`outflow migrate --partition-history`,
 * issue 31): on a throwaway cluster (initdb, fsync on), `--events` delivered events spread over the last 30 days
 * (each with its delivery and attempt) are seeded on the plain layout; an engine then publishes at `--rate`/s to a
 * local sink while the real `outflow` command moves the log. Prints each step's time (from the command's log), the
 * live publish→receive p50 / p99 / max in 5-second windows before, during and after the move, and what was lost:
 *
 *   npx tsx bench/partition-move.ts [--events 1000000] [--rate 500]
 */
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import postgresJs from 'postgres'
import { createOutflow } from '../src/create-outflow.js'
import { postgres } from '../src/storage/postgres.js'
import { startCluster } from '../test/support/pg-cluster.js'
import { seed } from './seed.js'
import { measureLatency, type LatencyFigures } from './support/measure.js'
import { startSink } from './support/sink-client.js'

const { values: args } = parseArgs({ options: { events: { type: 'string', default: '1000000' }, rate: { type: 'string', default: '500' } } })
const events = Number(args.events)
const rate = Number(args.rate)
const day = 86_400_000
const tenantId = 't1'
const windowEvents = rate * 5
const log = (message: string) => process.stderr.write(`[partition-move] ${message}\n`)
const root = join(import.meta.dirname, '..')

const cluster = await startCluster({ settings: '-c fsync=on -c shared_buffers=256MB' })
const sink = await startSink()
try {
  const url = await cluster.createDatabase('move')
  const outflow = await createOutflow({
    storage: postgres({ url }),
    apiKey: 'partition-move-admin-key',
    jwtSecret: 'partition-move-jwt-secret',
    encryptionKey: 'partition-move-encryption-key',
    allowPrivateNetworks: true,
    delivery: { concurrency: 50, perDestinationConcurrency: 50 },
  })
  await outflow.upsertTenant(tenantId, {})
  const destination = await outflow.createDestination(tenantId, { type: 'webhook', topics: ['*'], config: { url: sink.url } })
  const seeded = performance.now()
  await seed({ dialect: 'postgres', location: url }, { tenantId, destinationId: destination.id, topic: 'bench', count: events, startMs: Date.now() - 31 * day, stepMs: Math.floor((30 * day) / events), state: 'delivered' })
  log(`seeded ${events} delivered events over 30 days in ${((performance.now() - seeded) / 1000).toFixed(1)} s`)

  let sent = 0
  const window = () =>
    measureLatency(sink, { rate, count: windowEvents, drainMs: 30_000, fire: (i, t) => (sent++, outflow.publish({ tenant_id: tenantId, topic: 'bench', data: { n: i, t } })) })
  const before = await window()

  // The operator's command, in a process of its own; its JSON log lines say when each step began.
  const steps: { at: number; msg: string }[] = []
  const started = performance.now()
  const move = new Promise<number>((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(root, 'src/cli/main.ts'), 'migrate', '--partition-history'], { cwd: root, env: { ...process.env, DATABASE_URL: url } })
    let out = ''
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      for (let nl = out.indexOf('\n'); nl >= 0; nl = out.indexOf('\n')) {
        const line = out.slice(0, nl)
        out = out.slice(nl + 1)
        try {
          steps.push({ at: performance.now() - started, msg: (JSON.parse(line) as { msg: string }).msg })
        } catch {
          log(`command: ${line}`)
        }
      }
    })
    child.stderr.on('data', (chunk: Buffer) => log(`command: ${chunk.toString().trim()}`))
    child.on('error', reject)
    child.on('exit', (code) => (code === 0 ? resolve(performance.now() - started) : reject(new Error(`outflow migrate --partition-history exited ${code}`))))
  })
  let moved: number | undefined
  void move.then((ms) => (moved = ms))
  const during: LatencyFigures[] = []
  while (moved === undefined) during.push(await window())
  const after = await window()
  const movedMs = await move

  const sql = postgresJs(url, { max: 1, onnotice: () => {} })
  const [state] = await sql<{ partitioned: boolean; events: number; pending: number }[]>`
    select exists (select 1 from pg_partitioned_table where partrelid = 'events'::regclass) as partitioned,
      (select count(*)::int from events) as events, (select count(*)::int from deliveries where status = 'pending') as pending`
  await sql.end()
  await outflow.close()

  const f = (n: number, digits = 1) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
  const lost = [before, ...during, after].reduce((sum, w) => sum + w.lost, 0)
  const duplicates = [before, ...during, after].reduce((sum, w) => sum + w.duplicates, 0)
  console.log(`Moving ${events.toLocaleString('en-US')} events (30 days, each with a delivery and an attempt) to daily partitions while publishing ${rate}/s\n`)
  console.log(`the move: ${f(movedMs / 1000, 2)} s; partitioned: ${state!.partitioned}; events stored ${state!.events.toLocaleString('en-US')} (seeded + ${sent} live); pending ${state!.pending}; lost ${lost}; duplicates ${duplicates}\n`)
  console.log('| step (as the command logged it) | began at |')
  console.log('|---|---|')
  for (const step of steps) console.log(`| ${step.msg} | ${f(step.at / 1000, 2)} s |`)
  console.log('\n| live traffic, 5 s windows | p50 / p99 / max publish→receive | disk stalls (flushes ≥ 10 ms: count, longest; p99 of the events none touched) |')
  console.log('|---|---|---|')
  const row = (name: string, w: LatencyFigures) => console.log(`| ${name} | ${f(w.p50, 2)} / ${f(w.p99, 2)} / ${f(w.max)} ms${w.lost ? ` (${w.lost} lost)` : ''} | ${w.disk.stalls}, ${f(w.disk.longestMs, 0)} ms; ${f(w.disk.p99Outside, 2)} ms |`)
  row('before the move', before)
  during.forEach((w, i) => row(`during the move, window ${i + 1}`, w))
  row('after the move', after)
} finally {
  await sink.close()
  await cluster.stop()
}
