import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { SinkCommand, SinkReply, SinkStats } from '../sink.js'
import { withTimeout } from './clock.js'

const sinkFile = fileURLToPath(new URL('../sink.ts', import.meta.url))

// Distributive Omit, so each command keeps its own fields.
type Command = SinkCommand extends infer C ? (C extends SinkCommand ? Omit<C, 'req'> : never) : never

/** A sink running in its own process, steered over IPC. */
export interface SinkHandle {
  url: string
  pid: number
  /** Resolves with the wall-clock receive time of the n-th distinct webhook id; rejects after timeoutMs. */
  expect(n: number, timeoutMs: number): Promise<number>
  stats(options?: { latencies?: boolean }): Promise<SinkStats>
  /** Forget everything received so far (after a warm-up). */
  reset(): Promise<void>
  /** Hold each response this long (a slow receiver); 0 answers at once. */
  setDelay(ms: number): Promise<void>
  close(): Promise<void>
}

/**
 * Fork bench/sink.ts and wait until it listens.
 *
 * @example
 * const sink = await startSink(); ...; const at = await sink.expect(2000, 60_000); await sink.close()
 */
export async function startSink(options: { delayMs?: number } = {}): Promise<SinkHandle> {
  const child: ChildProcess = fork(sinkFile, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, BENCH_SINK_DELAY_MS: String(options.delayMs ?? 0) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  let nextReq = 1
  const pending = new Map<number, (reply: Extract<SinkReply, { type: 'reply' }>) => void>()
  let exited = false
  const ready = new Promise<string>((resolve, reject) => {
    child.on('message', (msg: SinkReply) => {
      if (msg.type === 'ready') resolve(msg.url)
      else pending.get(msg.req)?.(msg)
    })
    child.once('exit', (code) => {
      exited = true
      reject(new Error(`sink exited with code ${code}`))
    })
  })
  ready.catch(() => {})
  const url = await withTimeout(ready, 20_000, 'the sink to start')

  const ask = (command: Command, timeoutMs = 10_000) => {
    if (exited) return Promise.reject(new Error('sink is not running'))
    const req = nextReq++
    const reply = new Promise<Extract<SinkReply, { type: 'reply' }>>((resolve) => pending.set(req, resolve))
    child.send({ ...command, req } as SinkCommand)
    return withTimeout(reply, timeoutMs, `the sink to answer '${command.cmd}'`).finally(() => pending.delete(req))
  }

  return {
    url,
    pid: child.pid!,
    async expect(n, timeoutMs) {
      return (await ask({ cmd: 'expect', n }, timeoutMs)).reachedAt!
    },
    async stats(options = {}) {
      return (await ask({ cmd: 'stats', latencies: options.latencies ?? false }, 30_000)).stats!
    },
    async reset() {
      await ask({ cmd: 'reset' })
    },
    async setDelay(ms) {
      await ask({ cmd: 'delay', ms })
    },
    async close() {
      if (exited) return
      const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
      await ask({ cmd: 'close' }).catch(() => {})
      await withTimeout(gone, 5_000, 'the sink to exit').catch(() => child.kill('SIGKILL'))
    },
  }
}
