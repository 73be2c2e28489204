import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import postgres from 'postgres'
import { adminPgUrl } from './services.js'

/** Busy and total jiffies of all CPUs, from /proc/stat (undefined where there is none). */
function cpuTimes(): { busy: number; total: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    const idle = fields[3]! + (fields[4] ?? 0)
    const total = fields.reduce((a, b) => a + b, 0)
    return { busy: total - idle, total }
  } catch {
    return undefined
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** The machine's CPU use over `ms` (0–1), or undefined where it cannot be read. */
export async function cpuBusy(ms: number): Promise<number | undefined> {
  const a = cpuTimes()
  await sleep(ms)
  const b = cpuTimes()
  return a && b && b.total > a.total ? (b.busy - a.busy) / (b.total - a.total) : undefined
}

/**
 * Bring the machine to the same state before each scenario, so a row does not pay for the one before it:
 * dirty pages written out (`sync`), a Postgres CHECKPOINT (the WAL of a million deletes, say, is flushed and
 * no checkpoint is due in the next window), then up to `maxWaitMs` for the CPUs to be mostly idle for a
 * second (autovacuum of a dropped database, the checkpointer). Returns a note when the machine did not settle.
 *
 * @example
 * const note = await settle({ postgres: true })
 */
export async function settle(options: { postgres: boolean; maxWaitMs?: number }): Promise<string | undefined> {
  try {
    execFileSync('sync', { stdio: 'ignore', timeout: 60_000 })
  } catch {
    // No sync(1): the page cache is flushed by the kernel in its own time.
  }
  if (options.postgres) {
    const sql = postgres(adminPgUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
    try {
      await sql.unsafe('CHECKPOINT')
    } catch {
      // Not a superuser: the checkpoint is the server's own business then.
    } finally {
      await sql.end()
    }
  }
  const deadline = Date.now() + (options.maxWaitMs ?? 20_000)
  let busy: number | undefined
  while (Date.now() < deadline) {
    busy = await cpuBusy(1000)
    if (busy === undefined || busy < 0.15) return undefined
  }
  return `the machine was still ${Math.round((busy ?? 0) * 100)} % busy when the scenario started`
}

/** The 1-minute load average (NaN where /proc/loadavg cannot be read). */
export function loadAverage(): number {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
  } catch {
    return Number.NaN
  }
}

/** The commit of a tree, with `+` when it has uncommitted changes to tracked files. */
export function commitOf(dir: string): string {
  try {
    const rev = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: dir, encoding: 'utf8' }).trim()
    return dirty ? `${rev}+` : rev
  } catch {
    return 'unknown'
  }
}
