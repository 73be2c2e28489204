import net from 'node:net'
import postgres from 'postgres'

export const adminPgUrl = process.env.OUTFLOW_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const redisUrl = process.env.OUTFLOW_BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379'
export const natsUrl = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222'

/** Databases this harness creates are named `outflow_bench_<pid>_<n>`. */
const dbPrefix = 'outflow_bench_'

/** True when a TCP connection to the URL's host and port opens within a second. */
export function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url)
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort) })
    socket.setTimeout(1000)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
  })
}

function admin() {
  return postgres(adminPgUrl, { max: 1, onnotice: () => {}, connect_timeout: 5 })
}

/**
 * Create an empty database of this run and return its URL.
 *
 * @example
 * const url = await createDatabase('outflow_bench_123_4'); ...; await dropDatabase('outflow_bench_123_4')
 */
export async function createDatabase(name: string): Promise<string> {
  if (!name.startsWith(dbPrefix) || !/^[a-z0-9_]+$/.test(name)) throw new Error(`refusing database name ${name}`)
  const sql = admin()
  try {
    await sql.unsafe(`CREATE DATABASE ${name}`)
  } finally {
    await sql.end()
  }
  const u = new URL(adminPgUrl)
  u.pathname = `/${name}`
  return u.toString()
}

export async function dropDatabase(name: string): Promise<void> {
  if (!name.startsWith(dbPrefix) || !/^[a-z0-9_]+$/.test(name)) throw new Error(`refusing database name ${name}`)
  const sql = admin()
  try {
    await sql.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  } finally {
    await sql.end()
  }
}

export function databaseName(pid: number, n: number): string {
  return `${dbPrefix}${pid}_${n}`
}

/** Drop databases left behind by earlier runs whose process is gone (a run killed with SIGKILL). */
export async function dropStaleDatabases(): Promise<string[]> {
  const sql = admin()
  let names: string[]
  try {
    const rows = await sql<{ datname: string }[]>`SELECT datname FROM pg_database WHERE datname LIKE ${dbPrefix + '%'}`
    names = rows.map((r) => r.datname).filter((name) => {
      const pid = Number(/^outflow_bench_(\d+)_/.exec(name)?.[1])
      return Number.isInteger(pid) && pid !== process.pid && !processAlive(pid)
    })
  } finally {
    await sql.end()
  }
  for (const name of names) await dropDatabase(name)
  return names
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Delete every Redis key under `prefix` (BullMQ keys are `<prefix>:<queue>:...`). */
export async function deleteRedisKeys(url: string, prefix: string): Promise<number> {
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 3000 })
  let deleted = 0
  try {
    await redis.connect()
    let cursor = '0'
    for (let rounds = 0; rounds < 100_000; rounds++) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000)
      if (keys.length) deleted += await redis.unlink(...keys)
      cursor = next
      if (cursor === '0') break
    }
  } finally {
    redis.disconnect()
  }
  return deleted
}
