import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { jsonLogger } from '../../src/cli/json-logger.js'
import { readSettings, variables } from '../../src/cli/settings.js'
import { OutflowError } from '../../src/errors.js'
import { OptionsSchema } from '../../src/options.js'

const dir = mkdtempSync(join(tmpdir(), 'outflow-settings-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The dotted paths of an object schema's leaves (objects inside optional or piped schemas are walked too). */
function leafPaths(schema: unknown, prefix = ''): string[] {
  const inner = (schema as { wrapped?: unknown }).wrapped ?? schema
  const entries = (inner as { entries?: Record<string, unknown> }).entries
  if (!entries) return [prefix]
  return Object.entries(entries).flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key))
}

/** The OutflowError `readSettings` throws for these inputs. */
function settingsError(env: Record<string, string>, configFile?: string): OutflowError {
  try {
    readSettings({ env, configFile })
  } catch (error) {
    return error as OutflowError
  }
  throw new Error('expected readSettings to throw')
}

describe('outflow settings', () => {
  it('has an environment variable for every engine option (a JSON one covers the options inside it)', () => {
    const covered = (path: string) => variables.some((x) => x.path === path || path.startsWith(`${x.path}.`))
    expect(leafPaths(OptionsSchema).filter((path) => !covered(path))).toEqual([])
  })

  it('docs/operating.md documents every variable', () => {
    const readme = readFileSync(join(import.meta.dirname, '../../docs/operating.md'), 'utf8')
    expect(variables.map((x) => x.name).filter((name) => !readme.includes(`\`${name}\``))).toEqual([])
  })

  it('reads integers, numbers, booleans, lists, JSON; an empty variable is unset', () => {
    const { settings } = readSettings({
      env: {
        OUTFLOW_DELIVERY_CONCURRENCY: '7',
        OUTFLOW_DELIVERY_RETRY_SCHEDULE: '1000, 5000,60000',
        OUTFLOW_DELIVERY_RETRY_JITTER: '0.5',
        OUTFLOW_ALLOW_PRIVATE_NETWORKS: 'TRUE',
        OUTFLOW_MIGRATE: 'no',
        OUTFLOW_TOPICS: 'order.created, order.paid,,',
        OUTFLOW_OPERATOR_EVENTS: '{"destination":{"type":"webhook","config":{"url":"https://ops.example/hook"}}}',
        OUTFLOW_JWT_SECRET: '',
        DATABASE_URL: 'postgres://db.example/outflow',
      },
    })
    expect(settings.delivery).toMatchObject({ concurrency: 7, retry: { schedule: [1000, 5000, 60000], jitter: 0.5 } })
    expect(settings).toMatchObject({ allowPrivateNetworks: true, migrate: false, topics: ['order.created', 'order.paid'] })
    expect(settings.operatorEvents).toMatchObject({ destination: { type: 'webhook', config: { url: 'https://ops.example/hook' } }, tenantId: 'outflow-operator' })
    expect(settings.jwtSecret).toBeUndefined()
    expect(settings.postgres).toEqual({ url: 'postgres://db.example/outflow' })
    expect(settings.server).toEqual({ host: '127.0.0.1', port: 3000, headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000 })
  })

  it("reads the Postgres schema of Outflow's tables, and names a bad one", () => {
    const { settings } = readSettings({ env: { DATABASE_URL: 'postgres://db.example/shop', OUTFLOW_POSTGRES_SCHEMA: 'outflow' } })
    expect(settings.postgres).toEqual({ url: 'postgres://db.example/shop', schema: 'outflow' })
    expect(settingsError({ DATABASE_URL: 'postgres://db.example/shop', OUTFLOW_POSTGRES_SCHEMA: 'Out-flow' }).data).toEqual({
      OUTFLOW_POSTGRES_SCHEMA: 'must be lower-case letters, digits and _ (at most 50), starting with a letter or _',
    })
  })

  it('reads a read replica of the database, its pool size and lag bound, and names a bad URL', () => {
    const env = { DATABASE_URL: 'postgres://db.example/shop', OUTFLOW_POSTGRES_READ_URL: 'postgres://replica.example/shop', OUTFLOW_POSTGRES_READ_MAX: '4', OUTFLOW_POSTGRES_MAX_REPLICA_LAG_MS: '5000' }
    expect(readSettings({ env }).settings.postgres).toEqual({ url: 'postgres://db.example/shop', readUrl: 'postgres://replica.example/shop', readMax: 4, maxReplicaLagMs: 5000 })
    expect(settingsError({ ...env, OUTFLOW_POSTGRES_READ_URL: 'replica.example' }).data).toEqual({ OUTFLOW_POSTGRES_READ_URL: 'must be a postgres:// or postgresql:// URL' })
  })

  it('reads a transaction pooler and the direct listenUrl beside it, and names a bad one', () => {
    const env = { DATABASE_URL: 'postgres://pgbouncer.example:6432/shop', OUTFLOW_POSTGRES_POOLER: 'transaction', OUTFLOW_POSTGRES_LISTEN_URL: 'postgres://db.example/shop' }
    expect(readSettings({ env }).settings.postgres).toEqual({ url: 'postgres://pgbouncer.example:6432/shop', pooler: 'transaction', listenUrl: 'postgres://db.example/shop' })
    expect(settingsError({ ...env, OUTFLOW_POSTGRES_POOLER: 'session', OUTFLOW_POSTGRES_LISTEN_URL: 'db.example' }).data).toEqual({
      OUTFLOW_POSTGRES_POOLER: 'must be transaction',
      OUTFLOW_POSTGRES_LISTEN_URL: 'must be a postgres:// or postgresql:// URL',
    })
  })

  it('keeps the retention window as text for createOutflow, and names a bad one', async () => {
    const { settings } = readSettings({ env: { OUTFLOW_RETENTION_EVENTS: '30d', OUTFLOW_RETENTION_BATCH_SIZE: '250' } })
    expect(settings.retention).toEqual({ events: '30d', batchSize: 250, intervalMs: 60_000 })
    expect(settingsError({ OUTFLOW_RETENTION_EVENTS: '30 days' }).data).toEqual({ OUTFLOW_RETENTION_EVENTS: 'retention.events must be a duration like 30d, 12h, 90m or 2w' })
  })

  it('reads where /metrics is served: off by default, on the API port, or on a port and host of its own', () => {
    expect(readSettings({ env: {} }).settings.prometheus).toEqual({ host: '127.0.0.1' })
    expect(readSettings({ env: { OUTFLOW_PROMETHEUS: 'true' } }).settings.prometheus).toEqual({ enabled: true, host: '127.0.0.1' })
    expect(readSettings({ env: { OUTFLOW_PROMETHEUS_PORT: '9464', OUTFLOW_PROMETHEUS_HOST: '0.0.0.0' } }).settings.prometheus).toEqual({ port: 9464, host: '0.0.0.0' })
    expect(settingsError({ OUTFLOW_PROMETHEUS_PORT: '3000' }).data).toEqual({ OUTFLOW_PROMETHEUS_PORT: 'must differ from the API port (PORT)' })
    expect(settingsError({ OUTFLOW_PROMETHEUS: 'false', OUTFLOW_PROMETHEUS_PORT: '9464' }).data).toEqual({ OUTFLOW_PROMETHEUS_PORT: 'is set while OUTFLOW_PROMETHEUS is false: unset one of them' })
    expect(settingsError({ OUTFLOW_PROMETHEUS_PORT: '70000', OUTFLOW_PROMETHEUS: 'sometimes' }).data).toEqual({
      OUTFLOW_PROMETHEUS: 'must be true or false, got "sometimes"',
      OUTFLOW_PROMETHEUS_PORT: 'must be at most 65535',
    })
  })

  it('takes the config file, with the environment winning', () => {
    const file = join(dir, 'outflow.json')
    writeFileSync(file, JSON.stringify({ apiKey: 'file-admin-key-0123456789', delivery: { concurrency: 5, timeoutMs: 2000 }, sqlite: { path: 'file.db' }, server: { port: 8080 } }))
    const { settings, origin } = readSettings({ env: { OUTFLOW_DELIVERY_CONCURRENCY: '9', PORT: '9090' }, configFile: file })
    expect(settings).toMatchObject({ apiKey: 'file-admin-key-0123456789', delivery: { concurrency: 9, timeoutMs: 2000 }, sqlite: { path: 'file.db' }, server: { port: 9090 } })
    expect(origin('delivery.concurrency')).toBe('OUTFLOW_DELIVERY_CONCURRENCY')
    expect(origin('delivery.timeoutMs')).toBe(`delivery.timeoutMs (in ${file})`)
  })

  it('names every bad variable at once, by name', () => {
    const error = settingsError({ PORT: '80a', OUTFLOW_AUTH: 'maybe', OUTFLOW_DELIVERY_LEASE_MS: '0', OUTFLOW_PORTAL_URL: 'not a url', OUTFLOW_OPERATOR_EVENTS: '{oops' })
    expect(error).toBeInstanceOf(OutflowError)
    expect(error.data).toEqual({
      PORT: 'must be an integer, got "80a"',
      OUTFLOW_AUTH: 'must be true or false, got "maybe"',
      OUTFLOW_OPERATOR_EVENTS: expect.stringMatching(/^must be JSON: /),
      OUTFLOW_PORTAL_URL: 'portal.url must be a URL',
      OUTFLOW_DELIVERY_LEASE_MS: 'delivery.leaseMs must be at least 1',
    })
    expect(error.message).toMatch(/^invalid configuration: PORT: must be an integer, got "80a"; OUTFLOW_AUTH: /)
    expect(error.message).not.toContain('\n')
  })

  it('names the variable and the field inside a JSON variable, and every variable of a cross-field check', () => {
    expect(settingsError({ OUTFLOW_OPERATOR_EVENTS: '{"destination":{"type":"webhook","extra":1}}' }).data).toEqual({ 'OUTFLOW_OPERATOR_EVENTS (destination.extra)': 'unexpected field' })
    expect(settingsError({ OUTFLOW_DELIVERY_RETRY_SCHEDULE: '1,2', OUTFLOW_DELIVERY_RETRY_BASE: '100' }).data).toEqual({
      'OUTFLOW_DELIVERY_RETRY_SCHEDULE, OUTFLOW_DELIVERY_RETRY_BASE': 'use either schedule or base/factor, not both',
    })
    expect(settingsError({ OUTFLOW_HEADERS_TIMEOUT_MS: '60000' }).data).toEqual({ OUTFLOW_HEADERS_TIMEOUT_MS: 'must not exceed the request timeout (OUTFLOW_REQUEST_TIMEOUT_MS)' })
  })

  it('refuses unknown keys in the config file, a file that is not a JSON object, and two storages', () => {
    const file = join(dir, 'typo.json')
    writeFileSync(file, JSON.stringify({ delivery: { concurency: 5 }, portal: { url: 'https://portal.example', colour: 'x' }, operatorEvents: { destination: { type: 'webhook', config: { anything: 1 } } } }))
    expect(settingsError({}, file).data).toEqual({ [`delivery.concurency (in ${file})`]: 'unknown setting', [`portal.colour (in ${file})`]: 'unknown setting' })
    const list = join(dir, 'list.json')
    writeFileSync(list, '[]')
    expect(settingsError({}, list).data).toEqual({ [list]: 'must hold a JSON object' })
    expect(settingsError({}, join(dir, 'missing.json')).data).toEqual({ [join(dir, 'missing.json')]: 'no such file' })
    expect(settingsError({ DATABASE_URL: 'postgres://db/outflow', OUTFLOW_SQLITE_PATH: 'x.db' }).data).toEqual({ 'DATABASE_URL and OUTFLOW_SQLITE_PATH': 'set one storage: Postgres or SQLite' })
  })
})

describe('the CLI logger', () => {
  it("writes pino's JSON lines at the level and above, and never throws on a field JSON cannot encode", () => {
    const lines: string[] = []
    const logger = jsonLogger('info', (line) => lines.push(line))
    logger.debug({ a: 1 }, 'hidden')
    logger.info({ tenant_id: 'acme' }, 'shown')
    logger.error({ n: 10n }, 'still written')
    expect(lines.every((l) => l.endsWith('\n'))).toBe(true)
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(parsed).toEqual([
      { level: 30, time: expect.any(Number), pid: process.pid, hostname: expect.any(String), tenant_id: 'acme', msg: 'shown' },
      { level: 50, time: expect.any(Number), pid: process.pid, hostname: expect.any(String), msg: 'still written', fields: 'not serializable' },
    ])
    const silent: string[] = []
    jsonLogger('silent', (line) => silent.push(line)).error({}, 'nothing')
    expect(silent).toEqual([])
  })
})
