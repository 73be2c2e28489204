import { execFile } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import postgres from 'postgres'
import { clusterAvailable, clusterUser, descendants, freePort, postgresBin, type Cluster } from './pg-cluster.js'
import { waitFor } from './receiver.js'
import { requireServices } from './services.js'

const run = promisify(execFile)

/**
 * Whether a streaming replica can be built here (initdb, pg_ctl and pg_basebackup). Without them its suites
 * are skipped, or fail under OUTFLOW_REQUIRE_SERVICES=1.
 */
export const replicaAvailable = (() => {
  const available = clusterAvailable && existsSync(join(postgresBin!, 'pg_basebackup'))
  if (!available && requireServices) throw new Error('PostgreSQL binaries (initdb, pg_ctl, pg_basebackup) are required (OUTFLOW_REQUIRE_SERVICES=1) but missing under /usr/lib/postgresql')
  return available
})()

/**
 * A hot standby of `primary` (a throwaway cluster, see pg-cluster.ts), streaming from it: `pg_basebackup -R`
 * on its own port and data directory. `remove()` stops it and deletes it.
 *
 * @example
 * const standby = await startStandby(cluster); await standby.pauseReplay(); …; await standby.remove()
 */
export async function startStandby(primary: Cluster) {
  const bin = postgresBin!
  const user = clusterUser()
  const dir = mkdtempSync(join(tmpdir(), 'outflow-standby-'))
  if (user) chownSync(dir, user.uid, user.gid)
  const data = join(dir, 'data')
  const port = await freePort()
  const as = user ? { uid: user.uid, gid: user.gid } : {}
  const pgCtl = (...args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], { ...as, cwd: dir })
  // -R writes primary_conninfo and standby.signal; -X stream copies the WAL written during the backup.
  await run(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(primary.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '-c', 'fast', '--no-sync'], { ...as, cwd: dir })
  const settings = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c hot_standby=on`
  const start = () => pgCtl('-l', join(dir, 'log'), '-o', settings, '-w', '-t', '60', 'start')
  await start()
  const admin = (fn: (sql: postgres.Sql) => Promise<unknown>) => {
    const sql = postgres(`postgres://postgres@127.0.0.1:${port}/postgres`, { max: 1, onnotice: () => {}, connect_timeout: 5 })
    return fn(sql).finally(() => sql.end())
  }
  const replayState = () => admin((sql) => sql`select pg_get_wal_replay_pause_state() as state`.then(([row]) => String(row!.state)))

  return {
    port,
    /** The URL of `database` on the standby. */
    urlOf: (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    /** Stop applying WAL (it is still received): the standby's data stays as it is now. */
    async pauseReplay(): Promise<void> {
      await admin((sql) => sql`select pg_wal_replay_pause()`)
      // "pause requested" until the startup process next looks; nothing is applied after the request either way.
      await waitFor(async () => (await replayState()) !== 'not paused', 15_000, 'replay paused')
    },
    async resumeReplay(): Promise<void> {
      await admin((sql) => sql`select pg_wal_replay_resume()`)
    },
    /** Wait until the standby has applied everything the primary had written when this was called. */
    async caughtUp(): Promise<void> {
      const sql = postgres(primary.url, { max: 1, onnotice: () => {} })
      // The insert position: attempt results commit with synchronous_commit off, so their commit record may not be written yet.
      const [{ lsn }] = await sql<[{ lsn: string }]>`select pg_current_wal_insert_lsn()::text as lsn`.finally(() => sql.end())
      await waitFor(() => admin((s) => s`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as done`.then(([row]) => row!.done)), 30_000, `standby replayed up to ${lsn}`)
    },
    /** `pg_ctl stop -m fast`: connections are refused until `start()`. */
    async stop(): Promise<void> {
      await pgCtl('-m', 'fast', '-w', 'stop')
    },
    start,
    /** SIGSTOP (`'SIGSTOP'`) or SIGCONT the standby's postmaster and every process of it: paused, connections stay open and nothing answers. */
    signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
      const postmaster = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0])
      for (const pid of [postmaster, ...descendants(postmaster)]) process.kill(pid, signal)
    },
    async remove(): Promise<void> {
      try {
        this.signal('SIGCONT')
      } catch {
        // Not running.
      }
      await pgCtl('-m', 'immediate', '-w', 'stop').catch(() => undefined)
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

export type Standby = Awaited<ReturnType<typeof startStandby>>
