import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { waitFor } from './receiver.js'

/** tsx's loader by path, so the CLI also runs with a working directory outside the checkout. */
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const main = join(import.meta.dirname, '../../src/cli/main.ts')

/** A running `outflow serve`: its API URL, what it printed, and how to stop it. */
export interface ServedOutflow {
  /** `http://127.0.0.1:<port>/api/v1` */
  api: string
  proc: ChildProcess
  output: () => string
  /** SIGKILL, if it still runs; resolves once it has exited. */
  kill: () => Promise<void>
}

/**
 * `outflow serve` as a real process (the CLI's source through tsx) with `env` as its whole environment
 * (PATH aside: nothing leaks in from the test runner's); resolves once it logs `listening`.
 *
 * @example
 * const { api, kill } = await startServe({ OUTFLOW_SQLITE_PATH: path, OUTFLOW_API_KEY: key, PORT: '0' }, dir)
 */
export async function startServe(env: Record<string, string>, cwd: string): Promise<ServedOutflow> {
  const proc = spawn(process.execPath, ['--import', tsx, main, 'serve'], { cwd, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  proc.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  const kill = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL')
    await exited
  }
  try {
    const listening = await waitFor(
      () => output.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; url?: string }).find((l) => l.msg === 'listening'),
      60_000,
      `outflow serve to listen (output so far: ${output})`,
    )
    return { api: `${listening.url}/api/v1`, proc, output: () => output, kill }
  } catch (error) {
    await kill()
    throw error
  }
}
