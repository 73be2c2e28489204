import net from 'node:net'
import postgres from 'postgres'

export const pgUrl = process.env.OUTFLOW_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const amqpUrl = process.env.OUTFLOW_TEST_AMQP_URL ?? 'amqp://guest:guest@127.0.0.1:5672'
export const natsUrl = process.env.OUTFLOW_TEST_NATS_URL ?? 'nats://127.0.0.1:4222'
export const redisUrl = process.env.OUTFLOW_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'
/** Under OUTFLOW_REQUIRE_SERVICES=1 (CI) a missing service fails its suites instead of skipping them. */
export const requireServices = process.env.OUTFLOW_REQUIRE_SERVICES === '1'

function reachable(url: string, defaultPort: number): Promise<boolean> {
  const u = new URL(url)
  return new Promise((resolve) => {
    const socket = net.connect({ host: u.hostname, port: Number(u.port || defaultPort) })
    socket.setTimeout(1000)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
    socket.once('timeout', () => (socket.destroy(), resolve(false)))
  })
}

async function availability(name: string, url: string, port: number): Promise<boolean> {
  const up = await reachable(url, port)
  if (up) return true
  if (requireServices) throw new Error(`${name} is required (OUTFLOW_REQUIRE_SERVICES=1) but unreachable at ${url}`)
  console.warn(`[outflow tests] ${name} unreachable at ${url}: skipping its suites`)
  return false
}

/** True when Postgres answers; throws under OUTFLOW_REQUIRE_SERVICES=1 when it does not. Use with describe.runIf. */
export const postgresAvailable = await availability('PostgreSQL', pgUrl, 5432)
/** True when RabbitMQ answers; throws under OUTFLOW_REQUIRE_SERVICES=1 when it does not. */
export const amqpAvailable = await availability('RabbitMQ', amqpUrl, 5672)
/** True when nats-server (with JetStream) answers; throws under OUTFLOW_REQUIRE_SERVICES=1 when it does not. */
export const natsAvailable = await availability('NATS', natsUrl, 4222)
/** True when Redis answers; throws under OUTFLOW_REQUIRE_SERVICES=1 when it does not. */
export const redisAvailable = await availability('Redis', redisUrl, 6379)

/**
 * A fresh, empty Postgres database for one suite; `drop()` removes it.
 *
 * @example
 * const db = await createTestDatabase(); ...; await db.drop()
 */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `outflow_t_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const admin = postgres(pgUrl, { max: 1, onnotice: () => {} })
  await admin.unsafe(`CREATE DATABASE ${name}`)
  await admin.end()
  const u = new URL(pgUrl)
  u.pathname = `/${name}`
  return {
    url: u.toString(),
    async drop() {
      const a = postgres(pgUrl, { max: 1, onnotice: () => {} })
      await a.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await a.end()
    },
  }
}
