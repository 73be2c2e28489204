import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createOutflow } from '../create-outflow.js'
import { OutflowError } from '../errors.js'
import { sendWebResponse, toWebRequest } from '../http/node.js'
import { errorResponse } from '../http/responses.js'
import { errorFields, type Logger } from '../logger.js'
import type { PrometheusMetrics } from '../prometheus.js'
import { engineOptions, invalid, storageError, storageOf, type ReadSettings, type Settings } from './settings.js'
import { otlpRequested, startTelemetry } from './telemetry.js'
import { hostPort } from '../net/host-port.js'

/** Where Prometheus scrapes. */
const metricsPath = '/metrics'

type Handle = (request: Request) => Promise<Response>

/**
 * `outflow serve`: the engine and its HTTP API (`/api/v1`, and `/healthz` at the root) on Node's
 * HTTP server, until SIGTERM or SIGINT. Resolves once it listens.
 *
 * @example
 * await serve(readSettings({ env: process.env }), jsonLogger('info'), process.env)
 */
export async function serve({ settings, origin }: ReadSettings, logger: Logger, env: NodeJS.ProcessEnv): Promise<void> {
  requireServeSettings(settings, origin)
  if (!settings.auth) logger.warn({}, 'OUTFLOW_AUTH=false: the HTTP API answers anyone who can reach it (local use only)')
  const { prometheus: scrapeSettings } = settings
  const ownPort = scrapeSettings.port !== undefined
  const scraped = scrapeSettings.enabled === true || ownPort
  // On the API's port /metrics takes the admin key, as the API does; a port of its own is reached only where it is bound.
  const bearerToken = ownPort || !settings.auth ? undefined : settings.apiKey
  // Before createOutflow: the engine takes its instruments from the meter provider registered then.
  const telemetry = await startTelemetry({ otlp: otlpRequested(env), prometheus: scraped ? { bearerToken } : undefined })
  const storage = storageOf(settings)
  logger.info({ storage: storage.kind, at: storage.where, telemetry: otlpRequested(env) ? 'otlp' : 'off', prometheus: scraped ? (ownPort ? 'own port' : 'api port') : 'off' }, 'outflow starting')
  const outflow = await createOutflow({ ...engineOptions(settings), storage: storage.open, logger }).catch((error: unknown) => {
    throw storageError(storage, error)
  })
  const prometheus = telemetry.prometheus
  const handle: Handle = (request) => outflow.fetch(request)
  const api = httpServer(prometheus && !ownPort ? withMetrics(handle, prometheus) : handle, settings.server, logger)
  const metrics = prometheus && ownPort ? httpServer(withMetrics(notFound, prometheus), settings.server, logger) : undefined
  try {
    await listen(api, settings.server.host, settings.server.port)
    if (metrics) await listen(metrics, scrapeSettings.host, scrapeSettings.port!)
  } catch (error) {
    api.close()
    await outflow.close()
    await telemetry.stop()
    throw error
  }
  const url = urlOf(api)
  const scrapeUrl = prometheus ? `${metrics ? urlOf(metrics) : url}${metricsPath}` : undefined
  logger.info({ url, api: `${url}/api/v1`, openapi: `${url}/api/v1/openapi.json`, ...(scrapeUrl && { metrics: scrapeUrl }) }, 'listening')
  stopOnSignals(logger, async () => {
    await Promise.all([api, metrics].map((server) => server && closeServer(server, settings.server.requestTimeoutMs)))
    await outflow.close()
    await telemetry.stop()
  })
}

/** `handle`, with /metrics answered by the Prometheus handler. */
function withMetrics(handle: Handle, prometheus: PrometheusMetrics): Handle {
  return (request) => (new URL(request.url).pathname === metricsPath ? prometheus.fetch(request) : handle(request))
}

/** The metrics port's answer to any other path. */
const notFound: Handle = async () => errorResponse(new OutflowError('not_found', `not found: Prometheus metrics are at ${metricsPath}`))

function urlOf(server: Server): string {
  const { address, port } = server.address() as AddressInfo
  return `http://${hostPort(address, port)}`
}

/** What the engine would refuse only later (or not at all): a service needs its admin key, Postgres a key for credentials. */
function requireServeSettings(settings: Settings, origin: ReadSettings['origin']): void {
  const problems: [string, string][] = []
  if (settings.auth && !settings.apiKey)
    problems.push([origin('apiKey'), 'required: the admin bearer key of the HTTP API, at least 16 characters (OUTFLOW_AUTH=false serves without auth, for local use only)'])
  if (settings.postgres && !settings.encryptionKey && !settings.insecurePlaintextCredentials)
    problems.push([origin('encryptionKey'), 'required with Postgres: the key that encrypts destination credentials at rest (e.g. `openssl rand -base64 32`)'])
  if (problems.length > 0) throw invalid(problems)
}

/** Node's HTTP server in front of a fetch handler, with the slow-client limits (slowloris) of the settings. */
function httpServer(handle: Handle, options: Settings['server'], logger: Logger): Server {
  const server = createServer({ headersTimeout: options.headersTimeoutMs, requestTimeout: options.requestTimeoutMs }, (req, res) => {
    // While stopping, a keep-alive connection is closed as soon as its request is answered.
    res.once('close', () => !server.listening && setImmediate(() => server.closeIdleConnections()))
    handle(toWebRequest(req, req.url ?? '/'))
      .then((response) => sendWebResponse(res, response))
      .catch((error: unknown) => {
        logger.error({ method: req.method, error: errorFields(error) }, 'answering a request failed')
        if (res.headersSent) res.destroy()
        else res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 500, message: 'internal error' }))
      })
  })
  server.keepAliveTimeout = options.keepAliveTimeoutMs
  return server
}

function listen(server: Server, host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => reject(new Error(`cannot listen on ${host}:${port}: ${error.code ?? error.message}`)))
    server.listen(port, host, () => resolve())
  })
}

/** Stop accepting connections and wait for the requests in flight (at most `timeoutMs`, then they are cut). */
async function closeServer(server: Server, timeoutMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()))
  server.closeIdleConnections()
  const cut = setTimeout(() => server.closeAllConnections(), timeoutMs)
  await closed
  clearTimeout(cut)
}

/**
 * On SIGTERM or SIGINT: `stop()` (no new connections, requests and deliveries in flight finish, storage
 * closes), then exit 0. A second signal exits at once with 1.
 */
function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting without waiting for deliveries in flight')
      process.exit(1)
    }
    stopping = true
    logger.info({ signal }, 'stopping: no new connections; requests and deliveries in flight finish')
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ error: errorFields(error) }, 'stopping failed')
        process.exit(1)
      },
    )
  }
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
}
