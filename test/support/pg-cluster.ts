import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'

const run = promisify(execFile)

/** The machine's PostgreSQL binaries (newest major version under /usr/lib/postgresql), or undefined. */
export const postgresBin: string | undefined = (() => {
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_ctl')))
    .sort((a, b) => Number(b) - Number(a))
  return versions[0] ? join(root, versions[0], 'bin') : undefined
})()

/** Fault suites need their own cluster; without the binaries they are skipped (with a warning). */
export const clusterAvailable = postgresBin !== undefined
if (!clusterAvailable) console.warn('[outflow tests] no PostgreSQL binaries under /usr/lib/postgresql: skipping the fault suites')

/** initdb refuses to run as root: as root the cluster belongs to the `postgres` system user. */
export function clusterUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'))
  if (!line) throw new Error('running as root needs a `postgres` system user to own the throwaway cluster')
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

export async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Every descendant of `pid` (the postmaster's backends and auxiliary processes), from /proc. */
export function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      // The command name may hold spaces and parentheses: fields resume after the last ')'.
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const list = parents.get(ppid) ?? []
      list.push(Number(entry))
      parents.set(ppid, list)
    } catch {
      // The process ended while we read.
    }
  }
  const out: number[] = []
  const walk = (p: number) => {
    for (const c of parents.get(p) ?? []) {
      out.push(c)
      walk(c)
    }
  }
  walk(pid)
  return out
}

/**
 * A throwaway PostgreSQL cluster for fault tests: its own data directory and port, so restarting,
 * pausing or killing its backends disturbs no other suite. `stop()` shuts it down and removes it.
 *
 * @example
 * const cluster = await startCluster(); await cluster.restart(); await cluster.stop()
 */
export async function startCluster(
  options: {
    /** Load pg_stat_statements (per-statement buffers and timings). */
    statements?: boolean
    /** More server settings (`-c name=value …`), e.g. fsync back on for a benchmark of WAL. */
    settings?: string
  } = {},
) {
  if (!postgresBin) throw new Error('no PostgreSQL binaries under /usr/lib/postgresql')
  const bin = postgresBin
  const user = clusterUser()
  const dir = mkdtempSync(join(tmpdir(), 'outflow-pg-'))
  if (user) chownSync(dir, user.uid, user.gid)
  const data = join(dir, 'data')
  const port = await freePort()
  const as = user ? { uid: user.uid, gid: user.gid } : {}
  const pgCtl = (...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], { ...as, cwd: dir })

  await run(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--no-sync', '--no-instructions'], { ...as, cwd: dir })
  // fsync off: the faults under test are process and connection faults, not power loss.
  const preload = options.statements ? ' -c shared_preload_libraries=pg_stat_statements' : ''
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100${preload}${options.settings ? ` ${options.settings}` : ''}`
  const start = () => pgCtl('-l', join(dir, 'log'), '-o', settings, '-w', '-t', '60', 'start')
  await start()

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  const postmaster = () => Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
  const admin = () => postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })

  return {
    url,
    port,
    /** A fresh database in this cluster. */
    async createDatabase(name: string): Promise<string> {
      const sql = admin()
      try {
        await sql.unsafe(`create database ${name}`)
      } finally {
        await sql.end()
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`
    },
    /** `pg_ctl restart -m fast`: every session is disconnected, the server is down while it restarts. */
    async restart(): Promise<void> {
      await pgCtl('-l', join(dir, 'log'), '-o', settings, '-m', 'fast', '-w', '-t', '60', 'restart')
    },
    /** `pg_terminate_backend` of every client session of `database` but the caller's; how many were ended. */
    async terminateBackends(database: string): Promise<number> {
      const sql = admin()
      try {
        const rows = await sql<{ ended: boolean }[]>`
          select pg_terminate_backend(pid) as ended from pg_stat_activity
          where datname = ${database} and pid <> pg_backend_pid() and backend_type = 'client backend'`
        return rows.filter((r) => r.ended).length
      } finally {
        await sql.end()
      }
    },
    /** SIGSTOP the postmaster and all its processes: connections stay open but nothing answers. */
    pause(): number[] {
      const pids = [postmaster(), ...descendants(postmaster())]
      for (const pid of pids) process.kill(pid, 'SIGSTOP')
      return pids
    },
    /** SIGCONT what `pause()` stopped (and anything else of the cluster). */
    resume(): void {
      const main = postmaster()
      for (const pid of [main, ...descendants(main)]) {
        try {
          process.kill(pid, 'SIGCONT')
        } catch {
          // Gone meanwhile.
        }
      }
    },
    async stop(): Promise<void> {
      try {
        this.resume()
      } catch {
        // Not running.
      }
      await pgCtl('-m', 'immediate', '-w', 'stop').catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type Cluster = Awaited<ReturnType<typeof startCluster>>

