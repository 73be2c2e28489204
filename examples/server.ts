// A local Outflow server: Hono on @hono/node-server, the /api/v1 API and the tenant portal (/portal/), SQLite by default.
//   npm run example                       # SQLite at ./outflow.db (credentials key in ./outflow.db.key)
//   DATABASE_URL=postgres://… npm run example
// Environment: HOST (127.0.0.1), PORT (3000), OUTFLOW_API_KEY, OUTFLOW_JWT_SECRET, OUTFLOW_TOPICS
// (comma-separated), OUTFLOW_DB (SQLite path), OUTFLOW_PORTAL_URL, OUTFLOW_ENCRYPTION_KEY and
// OUTFLOW_PREVIOUS_ENCRYPTION_KEYS (comma-separated), the socket timeouts OUTFLOW_HEADERS_TIMEOUT_MS
// (10000), OUTFLOW_REQUEST_TIMEOUT_MS (30000), OUTFLOW_KEEP_ALIVE_TIMEOUT_MS (5000), LOG_LEVEL (debug),
// and OTEL_EXPORTER_OTLP_ENDPOINT (traces and metrics over OTLP/HTTP when set).
// Dev defaults are printed; never use them in production. With dev defaults it only listens on loopback.
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { pino } from 'pino'
import { outflowApp, outflowFetch } from '../adapters/hono.js'
import { createOutflow } from '../src/create-outflow.js'
import { postgres } from '../src/storage/postgres.js'
import { sqlite } from '../src/storage/sqlite.js'
import { startTelemetry } from './telemetry.js'

const devApiKey = 'dev-admin-key-change-me'
const devJwtSecret = 'dev-jwt-secret-change-me'
const devEncryptionKey = 'dev-encryption-key-change-me'
let devDefaults = false

/** An environment value, or a dev default that is announced on the console. */
function setting(name: string, devDefault: string): string {
  const value = process.env[name]
  if (value) return value
  console.log(`  ${name} not set, using the dev default: ${devDefault}`)
  devDefaults = true
  return devDefault
}

/** A positive integer from the environment (milliseconds), or the default. */
function milliseconds(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? fallback)
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive integer (milliseconds)`)
  return value
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host)
}

// One line per delivery attempt: successes are logged at debug, failures at info and warn. Pretty in a
// terminal, JSON lines otherwise (LOG_LEVEL=info hides the successes).
const logger = pino({
  level: process.env.LOG_LEVEL ?? 'debug',
  transport: process.stdout.isTTY ? { target: 'pino-pretty', options: { singleLine: true, ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' } } : undefined,
})

console.log('Outflow example server')
const host = process.env.HOST || '127.0.0.1'
const port = Number(process.env.PORT ?? 3000)
const apiKey = setting('OUTFLOW_API_KEY', devApiKey)
const jwtSecret = setting('OUTFLOW_JWT_SECRET', devJwtSecret)
const topics = process.env.OUTFLOW_TOPICS?.split(',').map((t) => t.trim()).filter(Boolean)
const databaseUrl = process.env.DATABASE_URL
const sqlitePath = process.env.OUTFLOW_DB ?? './outflow.db'
const portalUrl = process.env.OUTFLOW_PORTAL_URL
// SQLite keeps a generated key in <OUTFLOW_DB>.key; Postgres needs one (here a printed dev default).
const encryptionKey = databaseUrl ? setting('OUTFLOW_ENCRYPTION_KEY', devEncryptionKey) : process.env.OUTFLOW_ENCRYPTION_KEY || undefined
const previousEncryptionKeys = process.env.OUTFLOW_PREVIOUS_ENCRYPTION_KEYS?.split(',').map((k) => k.trim()).filter(Boolean)
// Slow or idle sockets (slowloris) are closed: headers must arrive within headersTimeout, the whole
// request within requestTimeout; Node checks every connectionsCheckingInterval.
const headersTimeout = milliseconds('OUTFLOW_HEADERS_TIMEOUT_MS', 10_000)
const requestTimeout = Math.max(headersTimeout, milliseconds('OUTFLOW_REQUEST_TIMEOUT_MS', 30_000))
const keepAliveTimeout = milliseconds('OUTFLOW_KEEP_ALIVE_TIMEOUT_MS', 5_000)

if (devDefaults && !isLoopback(host)) {
  console.error(`  refusing to listen on ${host} with dev defaults: set OUTFLOW_API_KEY, OUTFLOW_JWT_SECRET (and OUTFLOW_ENCRYPTION_KEY for Postgres)`)
  process.exit(1)
}

console.warn('  WARNING: webhook targets on private networks (localhost, 10.x, 192.168.x, …) are allowed: local use only.')

// Before createOutflow: the engine takes its instruments from the meter provider registered at creation.
const otlpEndpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT
const stopTelemetry = otlpEndpoint ? startTelemetry() : async () => {}

const outflow = await createOutflow({
  storage: databaseUrl ? postgres({ url: databaseUrl }) : sqlite({ path: sqlitePath }),
  apiKey,
  jwtSecret,
  encryptionKey,
  previousEncryptionKeys,
  topics,
  portal: portalUrl ? { url: portalUrl } : undefined,
  allowPrivateNetworks: true,
  logger,
  // The receiver sees each attempt's trace context (traceparent) when tracing is on.
  telemetry: { propagateTraceContext: true },
})

const app = new Hono()
app.get('/', (c) => c.json({ name: 'outflow example', api: '/api/v1', openapi: '/api/v1/openapi.json', portal: '/portal/ (open it through GET /api/v1/tenants/{id}/portal)' }))
app.route('/api/v1', outflowApp(outflow, new Hono()))
// The built-in tenant portal; GET /api/v1/tenants/{id}/portal answers a sign-in link to it.
app.mount('/portal', outflowFetch(outflow), { replaceRequest: false })

const server = serve(
  {
    fetch: app.fetch,
    hostname: host,
    port,
    serverOptions: { headersTimeout, requestTimeout, keepAliveTimeout, connectionsCheckingInterval: Math.min(1_000, headersTimeout) },
  },
  (info) => {
    const address = info.family === 'IPv6' ? `[${info.address}]` : info.address
    console.log(`  storage: ${databaseUrl ? 'postgres (DATABASE_URL)' : `sqlite at ${sqlitePath}`}`)
    console.log(`  topics: ${topics?.join(', ') ?? 'any'}`)
    console.log(`  telemetry: ${otlpEndpoint ? `OTLP traces and metrics to ${otlpEndpoint}` : 'off (set OTEL_EXPORTER_OTLP_ENDPOINT)'}`)
    console.log(`  portal: ${portalUrl ?? `http://${address}:${info.port}/portal/`} (sign-in links from GET /api/v1/tenants/{id}/portal)`)
    console.log(`  listening on http://${address}:${info.port}/api/v1  (OpenAPI: /api/v1/openapi.json)`)
  },
)

async function shutdown(signal: string): Promise<void> {
  console.log(`\n${signal}: closing`)
  server.close()
  await outflow.close()
  await stopTelemetry()
  process.exit(0)
}
process.once('SIGINT', () => void shutdown('SIGINT'))
process.once('SIGTERM', () => void shutdown('SIGTERM'))
