import { readFileSync } from 'node:fs'
import * as v from 'valibot'
import { OutflowError } from '../errors.js'
import { errorFields } from '../logger.js'
import { issuesToData } from '../model/common.js'
import { OptionsSchema, RetentionInputSchema, SigningInputSchema, type OutflowOptions } from '../options.js'
import { schemaNamePattern } from '../storage/schema/postgres.js'
import type { Storage, StorageContext } from '../storage/storage.js'
import { readTopicsFile } from './topics-file.js'

/** How an environment variable's text is read. */
type Kind = 'string' | 'integer' | 'number' | 'boolean' | 'list' | 'numbers' | 'json'

/** An environment variable: the setting it sets (a dotted path into the settings) and how it is read. */
export interface Variable {
  name: string
  path: string
  kind: Kind
}

const variable = (name: string, path: string, kind: Kind = 'string'): Variable => ({ name, path, kind })

/**
 * Every environment variable of the CLI. The engine's options (docs/embedding.md › Options) are named after
 * their path: `delivery.timeoutMs` is `OUTFLOW_DELIVERY_TIMEOUT_MS`.
 */
export const variables: readonly Variable[] = [
  variable('DATABASE_URL', 'postgres.url'),
  variable('OUTFLOW_POSTGRES_MAX', 'postgres.max', 'integer'),
  variable('OUTFLOW_POSTGRES_TIMEOUT_MS', 'postgres.timeoutMs', 'integer'),
  variable('OUTFLOW_POSTGRES_REQUEST_TIMEOUT_MS', 'postgres.requestTimeoutMs', 'integer'),
  variable('OUTFLOW_POSTGRES_SCHEMA', 'postgres.schema'),
  variable('OUTFLOW_POSTGRES_READ_URL', 'postgres.readUrl'),
  variable('OUTFLOW_POSTGRES_READ_MAX', 'postgres.readMax', 'integer'),
  variable('OUTFLOW_POSTGRES_MAX_REPLICA_LAG_MS', 'postgres.maxReplicaLagMs', 'integer'),
  variable('OUTFLOW_POSTGRES_LISTEN_URL', 'postgres.listenUrl'),
  variable('OUTFLOW_POSTGRES_POOLER', 'postgres.pooler'),
  variable('OUTFLOW_POSTGRES_PARTITION_HISTORY', 'postgres.partitionHistory', 'boolean'),
  variable('OUTFLOW_POSTGRES_TENANT_CLAIMS', 'postgres.tenantClaims', 'boolean'),
  variable('OUTFLOW_POSTGRES_CITUS', 'postgres.citus', 'boolean'),
  variable('OUTFLOW_SQLITE_PATH', 'sqlite.path'),
  variable('OUTFLOW_SQLITE_SYNCHRONOUS', 'sqlite.synchronous'),
  variable('OUTFLOW_SQLITE_BUSY_TIMEOUT_MS', 'sqlite.busyTimeoutMs', 'integer'),
  variable('HOST', 'server.host'),
  variable('PORT', 'server.port', 'integer'),
  variable('OUTFLOW_HEADERS_TIMEOUT_MS', 'server.headersTimeoutMs', 'integer'),
  variable('OUTFLOW_REQUEST_TIMEOUT_MS', 'server.requestTimeoutMs', 'integer'),
  variable('OUTFLOW_KEEP_ALIVE_TIMEOUT_MS', 'server.keepAliveTimeoutMs', 'integer'),
  variable('OUTFLOW_PROMETHEUS', 'prometheus.enabled', 'boolean'),
  variable('OUTFLOW_PROMETHEUS_PORT', 'prometheus.port', 'integer'),
  variable('OUTFLOW_PROMETHEUS_HOST', 'prometheus.host'),
  variable('LOG_LEVEL', 'logLevel'),
  variable('OUTFLOW_API_KEY', 'apiKey'),
  variable('OUTFLOW_AUTH', 'auth', 'boolean'),
  variable('OUTFLOW_JWT_SECRET', 'jwtSecret'),
  variable('OUTFLOW_TOPICS', 'topics', 'list'),
  variable('OUTFLOW_PORTAL_URL', 'portal.url'),
  variable('OUTFLOW_PORTAL_PATH', 'portal.path'),
  variable('OUTFLOW_PORTAL_SERVE', 'portal.serve', 'boolean'),
  variable('OUTFLOW_PORTAL_FRAME_ANCESTORS', 'portal.frameAncestors', 'list'),
  variable('OUTFLOW_ENCRYPTION_KEY', 'encryptionKey'),
  variable('OUTFLOW_PREVIOUS_ENCRYPTION_KEYS', 'previousEncryptionKeys', 'list'),
  variable('OUTFLOW_INSECURE_PLAINTEXT_CREDENTIALS', 'insecurePlaintextCredentials', 'boolean'),
  variable('OUTFLOW_ALLOW_PRIVATE_NETWORKS', 'allowPrivateNetworks', 'boolean'),
  variable('OUTFLOW_RELAY_URL', 'relayUrl'),
  variable('OUTFLOW_SIGNING_KEYS', 'signing.keys', 'list'),
  variable('OUTFLOW_SIGNING_OVERLAP', 'signing.overlap'),
  variable('OUTFLOW_MAX_BODY_BYTES', 'maxBodyBytes', 'integer'),
  variable('OUTFLOW_PUBLIC_URL', 'publicUrl'),
  variable('OUTFLOW_PAYLOAD_LINK_TTL', 'payloadLinkTtl'),
  variable('OUTFLOW_MIGRATE', 'migrate', 'boolean'),
  variable('OUTFLOW_DELIVERY_WORKER', 'delivery.worker', 'boolean'),
  variable('OUTFLOW_DELIVERY_CONCURRENCY', 'delivery.concurrency', 'integer'),
  variable('OUTFLOW_DELIVERY_PER_DESTINATION_CONCURRENCY', 'delivery.perDestinationConcurrency', 'integer'),
  variable('OUTFLOW_DELIVERY_TIMEOUT_MS', 'delivery.timeoutMs', 'integer'),
  variable('OUTFLOW_DELIVERY_LEASE_MS', 'delivery.leaseMs', 'integer'),
  variable('OUTFLOW_DELIVERY_POLL_INTERVAL_MS', 'delivery.pollIntervalMs', 'integer'),
  variable('OUTFLOW_DELIVERY_BATCH_SIZE', 'delivery.batchSize', 'integer'),
  variable('OUTFLOW_DELIVERY_DRAIN_TIMEOUT_MS', 'delivery.drainTimeoutMs', 'integer'),
  variable('OUTFLOW_DELIVERY_PROXY', 'delivery.proxy'),
  variable('OUTFLOW_DELIVERY_RETRY_SCHEDULE', 'delivery.retry.schedule', 'numbers'),
  variable('OUTFLOW_DELIVERY_RETRY_BASE', 'delivery.retry.base', 'number'),
  variable('OUTFLOW_DELIVERY_RETRY_FACTOR', 'delivery.retry.factor', 'number'),
  variable('OUTFLOW_DELIVERY_RETRY_MAX_ATTEMPTS', 'delivery.retry.maxAttempts', 'integer'),
  variable('OUTFLOW_DELIVERY_RETRY_JITTER', 'delivery.retry.jitter', 'number'),
  variable('OUTFLOW_ALERTS_CONSECUTIVE_FAILURES', 'alerts.consecutiveFailures', 'integer'),
  variable('OUTFLOW_ALERTS_AUTO_DISABLE', 'alerts.autoDisable', 'boolean'),
  variable('OUTFLOW_ALERTS_CALLBACK_URL', 'alerts.callbackUrl'),
  variable('OUTFLOW_OPERATOR_EVENTS', 'operatorEvents', 'json'),
  variable('OUTFLOW_RETENTION_EVENTS', 'retention.events'),
  variable('OUTFLOW_RETENTION_BATCH_SIZE', 'retention.batchSize', 'integer'),
  variable('OUTFLOW_RETENTION_INTERVAL_MS', 'retention.intervalMs', 'integer'),
  variable('OUTFLOW_SUPERVISOR_RESTARTS', 'supervisor.restarts', 'integer'),
  variable('OUTFLOW_SUPERVISOR_BACKOFF_MS', 'supervisor.backoffMs', 'integer'),
  variable('OUTFLOW_SUPERVISOR_MAX_BACKOFF_MS', 'supervisor.maxBackoffMs', 'integer'),
  variable('OUTFLOW_TELEMETRY_PROPAGATE_TRACE_CONTEXT', 'telemetry.propagateTraceContext', 'boolean'),
]

const integer = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(min, `must be at least ${min}`), v.maxValue(max, `must be at most ${max}`))

const host = v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))

const postgresUrl = v.pipe(v.string('must be a string'), v.regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL'))

/** The CLI's settings: the engine's options (its own schema) and where the data lives, the HTTP server, the log level. */
export const SettingsSchema = v.pipe(
  v.object({
    ...OptionsSchema.entries,
    // Kept as text (`30d`): createOutflow validates the options again and turns the window into milliseconds.
    retention: RetentionInputSchema,
    signing: SigningInputSchema,
    postgres: v.optional(
      v.object({
        url: postgresUrl,
        readUrl: v.optional(postgresUrl),
        readMax: v.optional(integer(1)),
        maxReplicaLagMs: v.optional(integer(1)),
        max: v.optional(integer(1)),
        timeoutMs: v.optional(integer(1)),
        requestTimeoutMs: v.optional(integer(1)),
        schema: v.optional(v.pipe(v.string('must be a string'), v.regex(schemaNamePattern, 'must be lower-case letters, digits and _ (at most 50), starting with a letter or _'))),
        listenUrl: v.optional(postgresUrl),
        pooler: v.optional(v.picklist(['transaction'], 'must be transaction')),
        partitionHistory: v.optional(v.boolean('must be true or false')),
        tenantClaims: v.optional(v.boolean('must be true or false')),
        citus: v.optional(v.boolean('must be true or false')),
      }),
    ),
    sqlite: v.optional(
      v.object({
        path: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty')), './outflow.db'),
        synchronous: v.optional(v.picklist(['FULL', 'NORMAL'], 'must be FULL or NORMAL')),
        busyTimeoutMs: v.optional(integer(0)),
      }),
    ),
    server: v.optional(
      v.object({
        host: v.optional(host, '127.0.0.1'),
        port: v.optional(integer(0, 65535), 3000),
        headersTimeoutMs: v.optional(integer(1), 10_000),
        requestTimeoutMs: v.optional(integer(1), 30_000),
        keepAliveTimeoutMs: v.optional(integer(1), 5_000),
      }),
      {},
    ),
    // /metrics in Prometheus text format: on the API's port behind the admin key, or on a port of its own.
    prometheus: v.optional(
      v.object({
        enabled: v.optional(v.boolean('must be true or false')),
        port: v.optional(integer(0, 65535)),
        host: v.optional(host, '127.0.0.1'),
      }),
      {},
    ),
    logLevel: v.optional(v.picklist(['debug', 'info', 'warn', 'error', 'silent'], 'must be debug, info, warn, error or silent'), 'info'),
  }),
  v.forward(
    v.check((s) => s.server.headersTimeoutMs <= s.server.requestTimeoutMs, 'must not exceed the request timeout (OUTFLOW_REQUEST_TIMEOUT_MS)'),
    ['server', 'headersTimeoutMs'],
  ),
  v.forward(
    v.check((s) => !(s.prometheus.enabled === false && s.prometheus.port !== undefined), 'is set while OUTFLOW_PROMETHEUS is false: unset one of them'),
    ['prometheus', 'port'],
  ),
  v.forward(
    v.check((s) => s.prometheus.port === undefined || s.prometheus.port === 0 || s.prometheus.port !== s.server.port, 'must differ from the API port (PORT)'),
    ['prometheus', 'port'],
  ),
)

export type Settings = v.InferOutput<typeof SettingsSchema>

/** Validated settings, and where each came from (for errors found later, e.g. by the engine at start). */
export interface ReadSettings {
  settings: Settings
  /** Names where the setting at `path` came from: `OUTFLOW_API_KEY`, or `apiKey (in outflow.json)`. */
  origin(path: string): string
}

/**
 * Read the settings: the JSON file `configFile` if given, then the environment (which wins), validated
 * with the engine's option schema. Throws one OutflowError naming every bad variable or key.
 *
 * @example
 * const { settings } = readSettings({ env: { DATABASE_URL: 'postgres://localhost/outflow', OUTFLOW_API_KEY: '…' } })
 */
export function readSettings({ env, configFile }: { env: NodeJS.ProcessEnv; configFile?: string }): ReadSettings {
  const problems: [where: string, message: string][] = []
  const input = configFile ? readConfigFile(configFile, problems) : {}
  const fromEnv = new Map<string, string>()
  for (const { name, path, kind } of variables) {
    const text = env[name]
    if (text === undefined || text.trim() === '') continue // empty is unset, as compose files write it
    const value = parseVariable(text.trim(), kind)
    if (value instanceof Error) problems.push([name, value.message])
    else {
      setPath(input, path, value)
      fromEnv.set(path, name)
    }
  }
  const topicsFile = env.OUTFLOW_TOPICS_FILE?.trim()
  if (topicsFile) {
    const topics = readTopicsFile(topicsFile)
    if (fromEnv.has('topics')) problems.push(['OUTFLOW_TOPICS_FILE', 'set either OUTFLOW_TOPICS or OUTFLOW_TOPICS_FILE, not both'])
    else if (topics instanceof Error) problems.push(['OUTFLOW_TOPICS_FILE', topics.message])
    else {
      input.topics = topics
      fromEnv.set('topics', 'OUTFLOW_TOPICS_FILE')
    }
  }
  const origin = (path: string) => originOf(path, fromEnv, configFile)
  const result = v.safeParse(SettingsSchema, input)
  if (!result.success) for (const [path, message] of Object.entries(issuesToData(result.issues))) problems.push([origin(path), message])
  else if (result.output.postgres && result.output.sqlite) problems.push([`${origin('postgres.url')} and ${origin('sqlite.path')}`, 'set one storage: Postgres or SQLite'])
  if (problems.length > 0 || !result.success) throw invalid(problems)
  return { settings: result.output, origin }
}

/** One error for all problems, on one line: `invalid configuration: OUTFLOW_PORT: must be an integer, got "x"; …`. */
export function invalid(problems: [where: string, message: string][]): OutflowError {
  const data = Object.fromEntries(problems)
  return new OutflowError('validation', `invalid configuration: ${problems.map(([where, message]) => `${where}: ${message}`).join('; ')}`, { data })
}

function readConfigFile(file: string, problems: [string, string][]): Record<string, unknown> {
  let value: unknown
  try {
    value = JSON.parse(readFileSync(file, 'utf8'))
  } catch (error) {
    problems.push([file, (error as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : `not readable as JSON: ${(error as Error).message}`])
    return {}
  }
  if (!isObject(value)) {
    problems.push([file, 'must hold a JSON object'])
    return {}
  }
  // The engine's schema ignores unknown keys; in a file they are typos that would silently do nothing.
  for (const path of unknownKeys(SettingsSchema, value, '')) problems.push([`${path} (in ${file})`, 'unknown setting'])
  return value
}

/** Keys of `value` that `schema` does not define, as dotted paths (into nested objects the schema defines). */
function unknownKeys(schema: unknown, value: unknown, prefix: string): string[] {
  const inner = (schema as { wrapped?: unknown }).wrapped ?? schema
  const entries = (inner as { entries?: Record<string, unknown> }).entries
  if (!entries || !isObject(value)) return []
  return Object.entries(value).flatMap(([key, child]) => {
    const path = prefix ? `${prefix}.${key}` : key
    return key in entries ? unknownKeys(entries[key], child, path) : [path]
  })
}

/** Where a setting came from: the variable that set it (or a path above it), else the key in the file. */
function originOf(path: string, fromEnv: Map<string, string>, configFile: string | undefined): string {
  const segments = path.split('.')
  for (let i = segments.length; i > 0; i--) {
    const name = fromEnv.get(segments.slice(0, i).join('.'))
    if (name) return i === segments.length ? name : `${name} (${segments.slice(i).join('.')})`
  }
  // A check on an object (e.g. delivery.retry) names the variables set inside it.
  const inside = [...fromEnv].filter(([p]) => p.startsWith(`${path}.`)).map(([, name]) => name)
  if (inside.length > 0) return inside.join(', ')
  if (configFile) return `${path} (in ${configFile})`
  return variables.find((x) => x.path === path)?.name ?? path
}

function parseVariable(text: string, kind: Kind): unknown {
  const shown = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)
  switch (kind) {
    case 'string':
      return text
    case 'integer':
      return /^-?\d+$/.test(text) ? Number(text) : new Error(`must be an integer, got ${shown}`)
    case 'number':
      return text !== '' && Number.isFinite(Number(text)) ? Number(text) : new Error(`must be a number, got ${shown}`)
    case 'boolean':
      if (/^(true|1|yes|on)$/i.test(text)) return true
      if (/^(false|0|no|off)$/i.test(text)) return false
      return new Error(`must be true or false, got ${shown}`)
    case 'list':
      return text.split(',').map((item) => item.trim()).filter(Boolean)
    case 'numbers': {
      const items = text.split(',').map((item) => item.trim())
      return items.every((item) => item !== '' && Number.isFinite(Number(item))) ? items.map(Number) : new Error(`must be comma-separated numbers, got ${shown}`)
    }
    case 'json':
      try {
        return JSON.parse(text)
      } catch (error) {
        return new Error(`must be JSON: ${(error as Error).message}`)
      }
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const keys = path.split('.')
  let node = target
  for (const key of keys.slice(0, -1)) {
    if (!isObject(node[key])) node[key] = {}
    node = node[key] as Record<string, unknown>
  }
  node[keys.at(-1)!] = value
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** The options `createOutflow` takes, from the settings. */
export function engineOptions(settings: Settings): Omit<OutflowOptions, 'storage'> {
  const { postgres: _postgres, sqlite: _sqlite, server: _server, prometheus: _prometheus, logLevel: _logLevel, ...options } = settings
  return options
}

export interface StorageTarget {
  kind: 'postgres' | 'sqlite'
  open: (context?: StorageContext) => Promise<Storage>
  /** The SQLite path, or the Postgres URL without its password. */
  where: string
}

/** The storage the settings name: Postgres when `DATABASE_URL` is set, else SQLite (`./outflow.db` by default). */
export function storageOf(settings: Settings): StorageTarget {
  const { postgres } = settings
  if (postgres) {
    const url = new URL(postgres.url)
    url.password = url.password ? '***' : ''
    const open = async (context?: StorageContext) => (await storageModule(() => import('../storage/postgres.js'), 'postgres', 'Postgres storage')).postgres(postgres)(context)
    return { kind: 'postgres', open, where: url.toString() }
  }
  const options = settings.sqlite ?? { path: './outflow.db' }
  const open = async () => (await storageModule(() => import('../storage/sqlite.js'), 'better-sqlite3', 'SQLite storage')).sqlite(options)()
  return { kind: 'sqlite', open, where: options.path }
}

/**
 * A storage module, loaded only when chosen: each imports its driver through drizzle, and a service
 * installs one of them. A missing driver is the error loadPeer gives, naming the package to install.
 */
async function storageModule<T>(load: () => Promise<T>, driver: string, neededBy: string): Promise<T> {
  try {
    return await load()
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && (cause as Error).message.includes(`'${driver}'`))
      throw new OutflowError('unavailable', `the optional package "${driver}" is needed by ${neededBy} but is not installed: npm install ${driver}`, { cause })
    throw cause
  }
}

/**
 * A driver's error, prefixed with the storage it came from (`connect ECONNREFUSED …` alone does not
 * say which setting to check). Outflow's own errors pass unchanged.
 *
 * @example
 * throw storageError(target, err) // postgres storage at postgres://db:5432/outflow: connect ECONNREFUSED 10.0.0.2:5432
 */
export function storageError(target: StorageTarget, error: unknown): unknown {
  if (error instanceof OutflowError) return error
  const { message, code } = errorFields(error)
  return Object.assign(new Error(`${target.kind} storage at ${target.where}: ${message}`), { code })
}
