// A local Outflow server: Hono on @hono/node-server, the /api/v1 API, SQLite by default.
//   npm run example                       # SQLite at ./outflow.db
//   DATABASE_URL=postgres://… npm run example
// Environment: PORT (3000), OUTFLOW_API_KEY, OUTFLOW_JWT_SECRET, OUTFLOW_TOPICS (comma-separated),
// OUTFLOW_DB (SQLite path), OUTFLOW_PORTAL_URL, LOG_LEVEL (debug), OTEL_EXPORTER_OTLP_ENDPOINT (traces and
// metrics over OTLP/HTTP when set). Dev defaults are printed; never use them in production.
import { serve } from '@hono/node-server'
import { Hono } from 'hono'
import { pino } from 'pino'
import { outflowApp } from '../adapters/hono.js'
import { createOutflow } from '../src/create-outflow.js'
import { postgres } from '../src/storage/postgres.js'
import { sqlite } from '../src/storage/sqlite.js'
import { startTelemetry } from './telemetry.js'

const devApiKey = 'dev-admin-key-change-me'
const devJwtSecret = 'dev-jwt-secret-change-me'

/** An environment value, or a dev default that is announced on the console. */
function setting(name: string, devDefault: string): string {
  const value = process.env[name]
  if (value) return value
  console.log(`  ${name} not set, using the dev default: ${devDefault}`)
  return devDefault
}

// One line per delivery attempt: successes are logged at debug, failures at info and warn. Pretty in a
// terminal, JSON lines otherwise (LOG_LEVEL=info hides the successes).
const logger = pino({
  level: process.env.LOG_LEVEL ?? 'debug',
  transport: process.stdout.isTTY ? { target: 'pino-pretty', options: { singleLine: true, ignore: 'pid,hostname', translateTime: 'HH:MM:ss.l' } } : undefined,
})

console.log('Outflow example server')
const port = Number(process.env.PORT ?? 3000)
const apiKey = setting('OUTFLOW_API_KEY', devApiKey)
const jwtSecret = setting('OUTFLOW_JWT_SECRET', devJwtSecret)
const topics = process.env.OUTFLOW_TOPICS?.split(',').map((t) => t.trim()).filter(Boolean)
const databaseUrl = process.env.DATABASE_URL
const sqlitePath = process.env.OUTFLOW_DB ?? './outflow.db'
const portalUrl = process.env.OUTFLOW_PORTAL_URL

console.warn('  WARNING: webhook targets on private networks (localhost, 10.x, 192.168.x, …) are allowed: local use only.')

// Before createOutflow: the engine takes its instruments from the meter provider registered at creation.
const otlpEndpoint = process.env.OTEL_EXPORTER_OTLP_ENDPOINT
const stopTelemetry = otlpEndpoint ? startTelemetry() : async () => {}

const outflow = await createOutflow({
  storage: databaseUrl ? postgres({ url: databaseUrl }) : sqlite({ path: sqlitePath }),
  apiKey,
  jwtSecret,
  topics,
  portal: portalUrl ? { url: portalUrl } : undefined,
  allowPrivateNetworks: true,
  logger,
  // The receiver sees each attempt's trace context (traceparent) when tracing is on.
  telemetry: { propagateTraceContext: true },
})

const app = new Hono()
app.get('/', (c) => c.json({ name: 'outflow example', api: '/api/v1', openapi: '/api/v1/openapi.json' }))
app.route('/api/v1', outflowApp(outflow, new Hono()))

const server = serve({ fetch: app.fetch, port }, (info) => {
  console.log(`  storage: ${databaseUrl ? 'postgres (DATABASE_URL)' : `sqlite at ${sqlitePath}`}`)
  console.log(`  topics: ${topics?.join(', ') ?? 'any'}`)
  console.log(`  telemetry: ${otlpEndpoint ? `OTLP traces and metrics to ${otlpEndpoint}` : 'off (set OTEL_EXPORTER_OTLP_ENDPOINT)'}`)
  console.log(`  listening on http://localhost:${info.port}/api/v1  (OpenAPI: /api/v1/openapi.json)`)
})

async function shutdown(signal: string): Promise<void> {
  console.log(`\n${signal}: closing`)
  server.close()
  await outflow.close()
  await stopTelemetry()
  process.exit(0)
}
process.once('SIGINT', () => void shutdown('SIGINT'))
process.once('SIGTERM', () => void shutdown('SIGTERM'))
