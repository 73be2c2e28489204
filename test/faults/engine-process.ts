// Engine processes for the fault scenarios (test/fixtures/fault-engine.ts): spawned with tsx, each
// serving the HTTP API on its own port and reporting its deliveries on stdout.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import type { RetryOptions } from '../../src/delivery/retry-schedule.js'
import { encryptionKey } from '../support/engines.js'

const fixture = join(import.meta.dirname, '../fixtures/fault-engine.ts')

export interface EngineOptions {
  /** Postgres storage timeout (postgres({ timeoutMs })), or SQLite busyTimeoutMs. */
  timeoutMs: number
  /** Postgres bound of the calls made for API requests (postgres({ requestTimeoutMs })); default: the storage's own. */
  requestTimeoutMs?: number
  leaseMs: number
  /** Postgres pool size (default 4). */
  max?: number
  /** Run the delivery worker (default true). */
  worker?: boolean
  retry?: RetryOptions
  autoDisable?: boolean
  /** Attempts in flight (default 32). */
  concurrency?: number
  /** delivery.pollIntervalMs (default 200). */
  pollIntervalMs?: number
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

/** Start an engine on `url` (postgres:// URL or SQLite file path); resolves once it serves. */
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

/** One request to an engine's API (set-up calls; a publisher's requests are timed by the caller). */
export async function api(port: number, method: string, path: string, body?: unknown): Promise<Response> {
  const response = await fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  })
  if (response.status >= 300) throw new Error(`${method} ${path} failed: ${response.status} ${await response.text()}`)
  return response
}

/** Lines an engine logged at error or fatal level, and crash output. */
export function engineErrors(engines: EngineProcess[]): string[] {
  return engines.flatMap((e) => e.log.filter((l) => !l.startsWith('{') || /"level":"(error|fatal)"/.test(l)))
}

/** SIGKILL what is still running and wait for every process to exit. */
export async function stopEngines(engines: EngineProcess[]): Promise<void> {
  for (const e of engines) if (e.alive()) e.proc.kill('SIGKILL')
  await Promise.all(engines.map((e) => e.exited))
}

/** `count` engines started at once (they migrate one after another under the advisory lock); none left running if one fails. */
export async function startEngines(url: string, count: number, options: EngineOptions | EngineOptions[]): Promise<EngineProcess[]> {
  const settled = await Promise.allSettled(Array.from({ length: count }, (_, i) => startEngine(url, Array.isArray(options) ? options[i]! : options)))
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []))
  const failed = settled.find((s) => s.status === 'rejected')
  if (failed) {
    await stopEngines(started)
    throw failed.reason
  }
  return started
}
