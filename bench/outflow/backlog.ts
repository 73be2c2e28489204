/**
 * Peak RSS of an engine process with a backlog of pending deliveries: `backlog` deliveries are
 * seeded at storage level for a webhook destination whose sink answers slowly, then an engine
 * starts in a child process and its RSS is sampled from /proc/<pid>/status (VmRSS every 50 ms,
 * and VmHWM, the kernel's own peak) for `backlogSampleMs`. The same engine on an empty queue,
 * sampled before the seeding, is the baseline.
 */
import { fork } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { sleep, withTimeout } from '../support/clock.js'
import { addWebhook, closeOutflow, openOutflow, sqlitePath, tenantId, topic } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'
import { seed } from '../seed.js'
import type { EngineChildMessage } from './backlog-engine.js'

const engineFile = fileURLToPath(new URL('./backlog-engine.ts', import.meta.url))

/** VmRSS and VmHWM of a process, bytes. */
function memoryOf(pid: number): { rss: number; hwm: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8')
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN) * 1024
    return { rss: kb('VmRSS'), hwm: kb('VmHWM') }
  } catch {
    return null
  }
}

interface EngineRun {
  peakRss: number
  /** V8 heap in use when it was told to stop. */
  heapUsed: number
}

/** Run the engine child for `sampleMs` after it is ready; its peak RSS over its whole life. */
async function sampleEngine(ctx: ScenarioContext, sampleMs: number): Promise<EngineRun> {
  const child = fork(engineFile, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_CONTEXT: JSON.stringify(ctx) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let peak = 0
  let hwm = 0
  const sample = () => {
    const m = memoryOf(child.pid!)
    if (m) {
      peak = Math.max(peak, m.rss)
      hwm = Math.max(hwm, m.hwm)
    }
  }
  const sampler = setInterval(sample, 50)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const messages: EngineChildMessage[] = []
  const next = (type: EngineChildMessage['type']) =>
    new Promise<EngineChildMessage>((resolve, reject) => {
      const found = messages.find((m) => m.type === type)
      if (found) return resolve(found)
      child.on('message', (m: EngineChildMessage) => m.type === type && resolve(m))
      void exited.then(() => reject(new Error(`engine process exited before '${type}'`)))
    })
  child.on('message', (m: EngineChildMessage) => messages.push(m))
  try {
    await withTimeout(next('ready'), 60_000, 'the engine process to start')
    await sleep(sampleMs)
    sample()
    child.send('stop')
    const stopped = await withTimeout(next('stopped'), 45_000, 'the engine process to stop')
    return { peakRss: Math.max(peak, hwm), heapUsed: stopped.type === 'stopped' ? stopped.heapUsed : Number.NaN }
  } finally {
    clearInterval(sampler)
    if (child.exitCode === null) child.kill('SIGKILL')
    await exited
  }
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  const sink = await startSink({ delayMs: sizes.slowSinkDelayMs })
  try {
    const setup = await openOutflow(ctx, { worker: false })
    const { destinationId } = await addWebhook(setup, sink.url)
    await closeOutflow(setup)

    const idle = await sampleEngine(ctx, sizes.idleSampleMs)
    log(ctx, `empty queue: peak RSS ${(idle.peakRss / 2 ** 20).toFixed(0)} MiB`)

    await seed(
      { dialect: ctx.db!, location: ctx.db === 'sqlite' ? sqlitePath(ctx) : ctx.pgUrl! },
      { tenantId, destinationId, topic, count: sizes.backlog, startMs: Date.now() - 60_000 - sizes.backlog, state: 'pending' },
    )
    await sink.reset()
    const loaded = await sampleEngine(ctx, sizes.backlogSampleMs)
    const { received } = await sink.stats()
    log(ctx, `${sizes.backlog} pending: peak RSS ${(loaded.peakRss / 2 ** 20).toFixed(0)} MiB, ${received} delivered while sampled`)
    if (received === 0) throw new Error('the engine delivered nothing from the backlog while it was sampled')
    return {
      values: { peakRss: loaded.peakRss, idleRss: idle.peakRss, heapUsed: loaded.heapUsed, deliveredWhileSampled: received },
      notes: [
        `RSS: engine child started with tsx, sampled ${sizes.backlogSampleMs / 1000} s with the sink answering after ${sizes.slowSinkDelayMs} ms; ${received} of ${sizes.backlog} delivered meanwhile; heap used at the end ${(loaded.heapUsed / 2 ** 20).toFixed(0)} MiB`,
      ],
    }
  } finally {
    await sink.close()
  }
})
