import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { encryptionKey } from './engines.js'

const worker = join(import.meta.dirname, '../fixtures/scale-worker.ts')

/** An engine process of test/fixtures/scale-worker.ts on a shared Postgres. */
export interface ScaleInstance {
  proc: ChildProcess
  /** Deliveries it reported as succeeded so far (it prints the count every 200 ms). */
  delivered: number
  /** Resolves once it printed `ready` (its worker is running). */
  ready: Promise<void>
  exited: Promise<unknown>
}

/** Start a delivering engine process on the database at `url` with leases of `leaseMs`. */
export function startScaleInstance(url: string, leaseMs: number): ScaleInstance {
  const proc = spawn(process.execPath, ['--import', 'tsx', worker, url, String(leaseMs), encryptionKey], { stdio: ['ignore', 'pipe', 'inherit'] })
  const instance: ScaleInstance = { proc, delivered: 0, ready: undefined as never, exited: new Promise((resolve) => proc.on('exit', resolve)) }
  instance.ready = new Promise((resolve) => {
    let buffer = ''
    proc.stdout!.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      const lines = buffer.split('\n')
      buffer = lines.pop()!
      for (const line of lines) {
        if (line === 'ready') resolve()
        const m = /^delivered (\d+)$/.exec(line)
        if (m) instance.delivered = Number(m[1])
      }
    })
  })
  return instance
}

/** SIGKILL every instance still running and wait until each has exited. */
export async function killScaleInstances(instances: ScaleInstance[]): Promise<void> {
  for (const i of instances) i.proc.kill('SIGKILL')
  await Promise.all(instances.map((i) => i.exited))
}
