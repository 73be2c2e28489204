import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import BetterSqlite3 from 'better-sqlite3'
import postgresJs from 'postgres'
import { Webhook } from 'standardwebhooks'
import { afterAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { keyFromSeed } from '../../src/net/ed25519.js'
import type { Outflow } from '../../src/engine.js'
import type { OutflowOptions } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { cliProcesses } from '../support/cli-process.js'
import { samples, scrape } from '../support/prometheus-text.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

const dir = mkdtempSync(join(tmpdir(), 'outflow-cli-'))
const cli = cliProcesses(dir)
const outflow = cli.run
const drops: (() => Promise<void>)[] = []
const apiKey = 'cli-test-admin-key-0123456789'
const encryptionKey = 'cli-test-encryption-key-0123456789'

afterAll(async () => {
  cli.killAll()
  await Promise.all(drops.map((drop) => drop()))
  rmSync(dir, { recursive: true, force: true })
})

/** Each storage `serve` runs on: env vars only, a fresh database, and how to read what the process left. */
const storages = [
  {
    name: 'sqlite',
    available: true,
    async create() {
      const path = join(dir, `serve-${Math.random().toString(36).slice(2)}.db`)
      return { env: { OUTFLOW_SQLITE_PATH: path }, open: (options: Partial<OutflowOptions> = {}) => createOutflow({ storage: sqlite({ path }), auth: false, delivery: { worker: false }, ...options }) }
    },
  },
  {
    name: 'postgres',
    available: postgresAvailable,
    async create() {
      const db = await createTestDatabase()
      drops.push(db.drop)
      return {
        env: { DATABASE_URL: db.url, OUTFLOW_ENCRYPTION_KEY: encryptionKey },
        open: (options: Partial<OutflowOptions> = {}) => createOutflow({ storage: postgres({ url: db.url, max: 2 }), auth: false, encryptionKey, delivery: { worker: false }, ...options }),
      }
    },
  },
]

for (const storage of storages) {
  describe.runIf(storage.available)(`outflow on ${storage.name}`, { timeout: 120_000 }, () => {
    it('serves from environment variables alone, delivers signed webhooks, and on SIGTERM stops accepting, drains the delivery in flight and exits 0', async () => {
      let release!: () => void
      const held = new Promise<void>((resolve) => (release = resolve))
      const receiver = await startReceiver((r) => (r.path === '/held' ? { until: held } : {}))
      try {
        const { env, open } = await storage.create()
        const server = outflow(['serve'], { ...env, OUTFLOW_API_KEY: apiKey, OUTFLOW_ALLOW_PRIVATE_NETWORKS: 'true', PORT: '0', LOG_LEVEL: 'debug' })
        const { url } = (await server.logged('listening')) as unknown as { url: string }
        const api = `${url}/api/v1`
        const call = (method: string, path: string, body?: unknown) =>
          fetch(`${api}${path}`, { method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })

        for (const health of [`${url}/healthz`, `${api}/healthz`]) expect((await fetch(health)).status).toBe(200)
        expect((await fetch(`${api}/tenants`)).status).toBe(401)
        expect((await call('PUT', '/tenants/acme', {})).status).toBe(201)
        const created = await call('POST', '/tenants/acme/destinations', { type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/hook` } })
        expect(created.status).toBe(201)
        const { credentials } = (await created.json()) as { credentials: { secret: string } }
        const published = await call('POST', '/publish', { id: 'order-1', tenant_id: 'acme', topic: 'order.created', data: { total: 42 } })
        expect(published.status).toBe(202)

        const [delivered] = await waitFor(() => receiver.on('/hook').length > 0 && receiver.on('/hook'), 20_000, 'the webhook')
        expect(new Webhook(credentials.secret).verify(delivered!.body, delivered!.headers as Record<string, string>)).toEqual({ total: 42 })
        expect(delivered!.headers['webhook-id']).toBe('order-1')
        await waitFor(() => server.lines().some((l) => l.msg === 'delivery attempt succeeded' && l.event_id === 'order-1'), 20_000, 'the attempt logged')

        // A delivery in flight when SIGTERM comes: the receiver answers only after the process started stopping.
        await call('POST', '/tenants/acme/destinations', { id: 'held', type: 'webhook', topics: ['order.paid'], config: { url: `${receiver.url}/held` } })
        expect((await call('POST', '/publish', { id: 'order-2', tenant_id: 'acme', topic: 'order.paid', data: {} })).status).toBe(202)
        await waitFor(() => receiver.on('/held').length === 1, 20_000, 'the held delivery to start')
        server.proc.kill('SIGTERM')
        await server.logged('stopping: no new connections; requests and deliveries in flight finish')
        await expect(fetch(`${url}/healthz`)).rejects.toThrow()
        expect(server.state.exitCode).toBeUndefined()
        release()

        expect(await server.exited).toBe(0)
        expect(server.lines().at(-1)?.msg).toBe('outflow stopped')
        expect(server.state.stderr).toBe('')
        const reader: Outflow = await open()
        try {
          expect((await reader.listDeliveries('acme', 'order-2')).map((a) => [a.destination_id, a.status])).toEqual([['held', 'success']])
        } finally {
          await reader.close()
        }
      } finally {
        release()
        await receiver.close()
      }
    })

    it('publishes the Ed25519 key set at /api/v1/signing-keys and /.well-known/webhook-signing-keys.json, generated and stored, or from OUTFLOW_SIGNING_KEYS', async () => {
      const { env, open } = await storage.create()
      const generated = outflow(['serve'], { ...env, OUTFLOW_API_KEY: apiKey, PORT: '0', OUTFLOW_DELIVERY_WORKER: 'false' })
      const { url } = (await generated.logged('listening')) as unknown as { url: string }
      const stored = (await (await fetch(`${url}/api/v1/signing-keys`)).json()) as { keys: { kid: string; status: string }[] }
      expect(stored.keys.map((k) => k.status)).toEqual(['active'])
      const wellKnown = await fetch(`${url}/.well-known/webhook-signing-keys.json`)
      expect(wellKnown.headers.get('cache-control')).toBe('public, max-age=300')
      expect(await wellKnown.json()).toEqual(stored)
      generated.proc.kill('SIGTERM')
      expect(await generated.exited).toBe(0)
      const reader: Outflow = await open()
      try {
        expect((await reader.storage.listSigningKeys()).map((k) => k.kid)).toEqual([stored.keys[0]!.kid])
      } finally {
        await reader.close()
      }

      const seed = Buffer.alloc(32, 9)
      const configured = outflow(['serve'], { ...env, OUTFLOW_API_KEY: apiKey, PORT: '0', OUTFLOW_DELIVERY_WORKER: 'false', OUTFLOW_SIGNING_KEYS: `whsk_${seed.toString('base64')}` })
      const second = ((await configured.logged('listening')) as unknown as { url: string }).url
      const set = (await (await fetch(`${second}/api/v1/signing-keys`)).json()) as { keys: { kid: string }[] }
      expect(set.keys.map((k) => k.kid)).toEqual([keyFromSeed(seed).kid])
      const rotate = await fetch(`${second}/api/v1/signing-keys/rotate`, { method: 'POST', headers: { authorization: `Bearer ${apiKey}` } })
      expect(rotate.status).toBe(409)
      configured.proc.kill('SIGTERM')
      expect(await configured.exited).toBe(0)
    })

    it('migrate creates the tables and exits 0', async () => {
      const { env } = await storage.create()
      const cwd = mkdtempSync(join(dir, 'migrate-'))
      // Without OUTFLOW_SQLITE_PATH, SQLite is ./outflow.db in the working directory.
      const { OUTFLOW_SQLITE_PATH: _default, ...rest } = env as Record<string, string>
      const run = outflow(['migrate'], rest, cwd)
      expect(await run.exited).toBe(0)
      expect(run.lines().map((l) => l.msg)).toEqual(['migrations applied'])
      const tables = storage.name === 'sqlite' ? sqliteTables(join(cwd, 'outflow.db')) : await postgresTables(rest.DATABASE_URL!)
      expect(tables).toEqual(expect.arrayContaining(['tenants', 'destinations', 'events', 'deliveries', 'attempts']))
    })

    it.runIf(storage.name === 'postgres')('migrate --partition-history moves the event log to daily partitions, logging its steps; again, says it already is', async () => {
      const { env } = await storage.create()
      const first = outflow(['migrate', '--partition-history'], env)
      expect(await first.exited).toBe(0)
      const messages = first.lines().map((l) => l.msg)
      expect(messages[0]).toBe('migrations applied')
      expect(messages).toEqual(expect.arrayContaining(['partition history: building the new primary key index beside traffic', 'partition history: moved']))
      expect(messages.at(-1)).toBe('the event log is partitioned by day')
      const again = outflow(['migrate', '--partition-history'], env)
      expect(await again.exited).toBe(0)
      expect(again.lines().map((l) => l.msg)).toEqual(['migrations applied', 'the event log was already partitioned by day'])
    })

    it('reencrypt moves the stored credentials to OUTFLOW_ENCRYPTION_KEY, prints the counts and exits as soon as it is done', async () => {
      const { env, open } = await storage.create()
      const oldKey = 'cli-old-key-0123456789abcdef'
      // Written under the old key: the storage's own key (SQLite's key file), or the one in env for Postgres.
      const previous = (env as Record<string, string>).OUTFLOW_ENCRYPTION_KEY ?? oldKey
      const before = await open({ encryptionKey: previous })
      await before.upsertTenant('acme', {})
      await before.createDestination('acme', { type: 'relay', topics: '*', credentials: { token: 'relay-token-123' } })
      await before.close()
      const newKey = 'cli-new-key-0123456789abcdef'
      // A drain timeout longer than the test's: the process must not wait for it after close().
      const run = outflow(['reencrypt'], { ...env, OUTFLOW_ENCRYPTION_KEY: newKey, OUTFLOW_PREVIOUS_ENCRYPTION_KEYS: previous, OUTFLOW_DELIVERY_DRAIN_TIMEOUT_MS: '600000' })
      expect(await run.exited).toBe(0)
      expect(JSON.parse(run.state.stdout.trim().split('\n').at(-1)!)).toEqual({ scanned: 1, reencrypted: 1, failed: 0, signing_keys: { scanned: 1, reencrypted: 1, failed: 0 } })
      const after = await open({ encryptionKey: newKey })
      try {
        expect((await after.listDestinations('acme'))[0]!.credentials).toEqual({ token: 'rela****' })
      } finally {
        await after.close()
      }
    })
  })
}

function sqliteTables(path: string): string[] {
  const db = new BetterSqlite3(path, { readonly: true })
  try {
    return db.prepare(`select name from sqlite_master where type = 'table'`).all().map((r) => (r as { name: string }).name)
  } finally {
    db.close()
  }
}

async function postgresTables(url: string): Promise<string[]> {
  const sql = postgresJs(url, { max: 1, onnotice: () => {} })
  try {
    return (await sql<{ table_name: string }[]>`select table_name from information_schema.tables where table_schema = 'public'`).map((r) => r.table_name)
  } finally {
    await sql.end()
  }
}

describe('outflow serve with OTEL_EXPORTER_OTLP_ENDPOINT', { timeout: 120_000 }, () => {
  it('exports its spans over OTLP/HTTP as service "outflow", flushed when it stops, and serves the same metrics to Prometheus', async () => {
    const posts: { path: string; body: string }[] = []
    const collector: Server = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => (body += c.toString()))
      req.on('end', () => {
        posts.push({ path: req.url ?? '', body })
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
      })
    })
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve))
    try {
      const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
      const server = outflow(['serve'], { OUTFLOW_SQLITE_PATH: join(dir, 'otel.db'), OUTFLOW_API_KEY: apiKey, PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: endpoint, OUTFLOW_PROMETHEUS_PORT: '0' })
      const { url, metrics } = (await server.logged('listening')) as unknown as { url: string; metrics: string }
      const headers = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }
      expect((await fetch(`${url}/api/v1/tenants/acme`, { method: 'PUT', headers })).status).toBe(201)
      const body = JSON.stringify({ tenant_id: 'acme', topic: 'order.created', data: {} })
      expect((await fetch(`${url}/api/v1/publish`, { method: 'POST', headers, body })).status).toBe(202)
      // One MeterProvider feeds both readers.
      const scraped = await scrape(metrics)
      expect(samples(scraped, 'published_events_total').map((s) => [s.labels.topic, s.value])).toEqual([['order.created', 1]])
      expect(samples(scraped, 'target_info')[0]!.labels.service_name).toBe('outflow')
      server.proc.kill('SIGTERM')
      expect(await server.exited).toBe(0)
      const sent = (path: string) => posts.filter((p) => p.path === path).map((p) => p.body).join('')
      expect(sent('/v1/traces')).toContain('"outflow.publish"')
      expect(sent('/v1/traces')).toMatch(/"service\.name","value":\{"stringValue":"outflow"\}/)
      expect(sent('/v1/metrics')).toContain('"api_response_latency"')
    } finally {
      await new Promise((resolve) => collector.close(resolve))
    }
  })
})

describe('outflow: bad settings and usage', { timeout: 60_000 }, () => {
  const file = join(dir, 'outflow.json')
  writeFileSync(file, JSON.stringify({ apiKey, delivery: { timeoutMs: 0, concurency: 5 } }))
  const cases: [string, string[], Record<string, string>, number, RegExp][] = [
    ['an integer variable that is not one', ['serve'], { OUTFLOW_API_KEY: apiKey, OUTFLOW_DELIVERY_CONCURRENCY: 'lots' }, 1, /^outflow: invalid configuration: OUTFLOW_DELIVERY_CONCURRENCY: must be an integer, got "lots"$/],
    ['a value the engine schema refuses', ['serve'], { OUTFLOW_API_KEY: apiKey, OUTFLOW_DELIVERY_CONCURRENCY: '0' }, 1, /^outflow: invalid configuration: OUTFLOW_DELIVERY_CONCURRENCY: delivery\.concurrency must be at least 1$/],
    ['no admin key', ['serve'], {}, 1, /^outflow: invalid configuration: OUTFLOW_API_KEY: required: the admin bearer key/],
    ['Postgres without an encryption key', ['serve'], { OUTFLOW_API_KEY: apiKey, DATABASE_URL: 'postgres://127.0.0.1:1/none' }, 1, /^outflow: invalid configuration: OUTFLOW_ENCRYPTION_KEY: required with Postgres/],
    ['a bad key and a misspelt one in the config file', ['serve', '--config', file], {}, 1, /^outflow: invalid configuration: delivery\.concurency \(in .*outflow\.json\): unknown setting; delivery\.timeoutMs \(in .*outflow\.json\): delivery\.timeoutMs must be at least 1$/],
    ['an unreachable database', ['migrate'], { DATABASE_URL: 'postgres://postgres:secret@127.0.0.1:1/none' }, 1, /^outflow: postgres storage at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:1\/none: connect ECONNREFUSED 127\.0\.0\.1:1$/],
    ['--partition-history on SQLite', ['migrate', '--partition-history'], { OUTFLOW_SQLITE_PATH: join(dir, 'partition.db') }, 2, /^outflow: --partition-history moves a Postgres event log: set DATABASE_URL to a postgres:\/\/ URL/],
    ['an unknown command', ['start'], {}, 2, /^outflow: unknown command: start \(see outflow --help\)$/],
  ]
  it.concurrent.each(cases)('%s: exits non-zero with one line naming it, no stack trace', async (_name, args, env, code, line) => {
    const run = outflow(args, env)
    expect(await run.exited).toBe(code)
    expect(run.state.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(line)])
    expect(run.state.stdout).toBe('')
  })

  it('the environment overrides the config file', async () => {
    const run = outflow(['migrate', '--config', file], { OUTFLOW_DELIVERY_TIMEOUT_MS: '5000', OUTFLOW_SQLITE_PATH: join(dir, 'override.db') })
    expect(await run.exited).toBe(1)
    // delivery.timeoutMs is fixed by the variable; the misspelt key remains.
    expect(run.state.stderr.trim()).toMatch(/^outflow: invalid configuration: delivery\.concurency \(in .*\): unknown setting$/)
  })
})
