import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { waitFor } from './receiver.js'
import { createTestDatabase, postgresAvailable } from './services.js'

const main = join(import.meta.dirname, '../../src/cli/main.ts')
/** tsx's loader by path, so the CLI also runs with a working directory outside the checkout. */
const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

/** A JSON log line of the CLI. */
export type LogLine = Record<string, unknown> & { msg: string; level: number }

/**
 * Runs `outflow <args>` as real processes (the CLI's source through tsx), each with `env` as its
 * whole environment: nothing leaks in from the test runner's. `killAll` (in an afterAll) ends those
 * still running.
 *
 * @example
 * const cli = cliProcesses(dir)
 * const server = cli.run(['serve'], { PORT: '0', OUTFLOW_AUTH: 'false' })
 * const { url } = await server.logged('listening')
 */
export function cliProcesses(defaultCwd: string) {
  const running: ChildProcess[] = []
  function run(args: string[], env: Record<string, string>, cwd = defaultCwd) {
    const proc = spawn(process.execPath, ['--import', tsx, main, ...args], {
      cwd,
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    running.push(proc)
    const state = { stdout: '', stderr: '', exitCode: undefined as number | null | undefined }
    proc.stdout!.on('data', (c: Buffer) => (state.stdout += c.toString()))
    proc.stderr!.on('data', (c: Buffer) => (state.stderr += c.toString()))
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve((state.exitCode = code))))
    /** The JSON log lines written so far. */
    const lines = () =>
      state.stdout
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as LogLine)
    const logged = (msg: string) => waitFor(() => lines().find((l) => l.msg === msg), 60_000, `"${msg}" (output so far: ${state.stdout}${state.stderr})`)
    return { proc, state, exited, lines, logged }
  }
  return {
    run,
    killAll() {
      for (const proc of running) if (proc.exitCode === null) proc.kill('SIGKILL')
    },
  }
}

/**
 * The storages `outflow serve` runs on in the CLI suites: the variables of a fresh database on each
 * (a SQLite file in `dir`, or a Postgres database whose drop is pushed to `drops`).
 */
export function serveStorages(dir: string, drops: (() => Promise<void>)[]) {
  return [
    { name: 'sqlite', available: true, env: async (): Promise<Record<string, string>> => ({ OUTFLOW_SQLITE_PATH: join(dir, `serve-${Math.random().toString(36).slice(2)}.db`) }) },
    {
      name: 'postgres',
      available: postgresAvailable,
      env: async (): Promise<Record<string, string>> => {
        const db = await createTestDatabase()
        drops.push(db.drop)
        return { DATABASE_URL: db.url, OUTFLOW_ENCRYPTION_KEY: 'cli-test-encryption-key-0123456789' }
      },
    },
  ]
}
