import { spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import net, { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pgUrl, requireServices } from './services.js'

// A throwaway PgBouncer in transaction mode in front of the shared Postgres, for the pooled storage suites.

/** Debian's pgbouncer binary, or undefined. */
export const pgbouncerBin: string | undefined = ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => existsSync(p))

/**
 * True when pgbouncer is installed; throws under OUTFLOW_REQUIRE_SERVICES=1 when it is not. Use with describe.runIf.
 * A function, so only the suites that ask fail (test/support/storages.ts is imported by many).
 */
export function pgbouncerAvailable(): boolean {
  if (pgbouncerBin) return true
  if (requireServices) throw new Error('pgbouncer is required (OUTFLOW_REQUIRE_SERVICES=1) but not installed: apt-get install pgbouncer')
  console.warn('[outflow tests] pgbouncer not installed: skipping the pooled Postgres suites')
  return false
}

/** pgbouncer refuses to run as root: as root it runs as the `postgres` system user. */
function bouncerUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'))
  if (!line) throw new Error('running as root needs a `postgres` system user to run pgbouncer')
  const [, , uid, gid] = line.split(':')
  return { uid: Number(uid), gid: Number(gid) }
}

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port })
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

export interface PgBouncer {
  port: number
  /** The same database as `directUrl` (a database of the shared Postgres), reached through this PgBouncer. */
  pooledUrl(directUrl: string): string
  /** pgbouncer's log so far (what it refused and why). */
  log(): string
  stop(): Promise<void>
}

/**
 * Starts PgBouncer on a free port in front of the shared Postgres: every database, `pool_mode = transaction`,
 * `default_pool_size` server connections per database (default 2, so an engine's pool of 10 is multiplexed), no
 * `ignore_startup_parameters`. `stop()` ends it and removes its directory.
 *
 * @example
 * const bouncer = await startPgBouncer(); const url = bouncer.pooledUrl(db.url); …; await bouncer.stop()
 */
export async function startPgBouncer(options: { poolSize?: number } = {}): Promise<PgBouncer> {
  if (!pgbouncerBin) throw new Error('pgbouncer is not installed')
  const upstream = new URL(pgUrl)
  const user = bouncerUser()
  const dir = mkdtempSync(join(tmpdir(), 'outflow-pgbouncer-'))
  const port = await freePort()
  const userName = decodeURIComponent(upstream.username || 'postgres')
  writeFileSync(join(dir, 'users.txt'), `"${userName}" ""\n`)
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port || 5432}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      // trust: the shared test Postgres trusts loopback; pgbouncer still wants the user in auth_file.
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 2}`,
      'max_client_conn = 500',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
    ].join('\n') + '\n',
  )
  if (user) chownSync(dir, user.uid, user.gid)
  for (const file of ['users.txt', 'pgbouncer.ini']) if (user) chownSync(join(dir, file), user.uid, user.gid)
  const child: ChildProcess = spawn(pgbouncerBin, [join(dir, 'pgbouncer.ini')], { ...(user ?? {}), cwd: dir, stdio: 'ignore' })
  let exited = false
  child.once('exit', () => (exited = true))
  const log = () => (existsSync(join(dir, 'pgbouncer.log')) ? readFileSync(join(dir, 'pgbouncer.log'), 'utf8') : '')
  const deadline = Date.now() + 30_000
  while (!(await accepts(port))) {
    if (exited || Date.now() > deadline) {
      child.kill('SIGKILL')
      throw new Error(`pgbouncer did not start on port ${port}:\n${log()}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return {
    port,
    pooledUrl(directUrl) {
      const u = new URL(directUrl)
      u.hostname = '127.0.0.1'
      u.port = String(port)
      return u.toString()
    },
    log,
    async stop() {
      if (!exited) {
        const gone = new Promise((resolve) => child.once('exit', resolve))
        // 1.18: SIGTERM shuts down at once; newer releases wait for clients to leave, so SIGKILL after a while.
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await gone
        clearTimeout(timer)
      }
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
