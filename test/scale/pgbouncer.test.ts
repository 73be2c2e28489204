import pg from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { OutflowOptions } from '../../src/options.js'
import { postgres, type PostgresOptions } from '../../src/storage/postgres.js'
import { checkedRoute, poolSettings } from '../../src/storage/postgres-pooler.js'
import type { Storage } from '../../src/storage/storage.js'
import { encryptionKey, jwtSecret } from '../support/engines.js'
import { pgbouncerAvailable, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Engines whose pool goes through a real PgBouncer in transaction mode with 2 server connections per database,
// so each engine's pool of 10 is multiplexed, with LISTEN, the pruners' lock and migrations on `listenUrl`.

type Database = Awaited<ReturnType<typeof createTestDatabase>>

describe.runIf(postgresAvailable && pgbouncerAvailable())('engines through PgBouncer in transaction mode', () => {
  let bouncer: PgBouncer
  const cleanups: (() => Promise<unknown>)[] = []
  beforeAll(async () => {
    bouncer = await startPgBouncer({ poolSize: 2 })
  })
  afterAll(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined)
    await bouncer?.stop()
  })

  const database = async (): Promise<Database> => {
    const db = await createTestDatabase()
    cleanups.push(db.drop)
    return db
  }
  const pooled = (db: Database, more: Partial<PostgresOptions> = {}): PostgresOptions => ({ url: bouncer.pooledUrl(db.url), listenUrl: db.url, pooler: 'transaction', ...more })
  const engine = async (db: Database, options: Partial<OutflowOptions> = {}): Promise<Outflow> => {
    const outflow = await createOutflow({ storage: postgres(pooled(db)), encryptionKey, jwtSecret, auth: false, allowPrivateNetworks: true, ...options })
    cleanups.push(() => outflow.close())
    return outflow
  }

  it('delivers to a real receiver with retries and FIFO order, prunes old events and replays, under concurrent publishes', async () => {
    // The flaky path fails each event's first two attempts; the FIFO path fails every third request.
    const attempts = new Map<string, number>()
    const succeeded = { plain: new Set<string>(), flaky: new Set<string>(), fifo: new Set<string>() }
    const fifoOrder: number[][] = Array.from({ length: 25 }, () => [])
    const receiver = await startReceiver((r, countOnPath) => {
      const id = String(r.headers['webhook-id'])
      const path = r.path.slice(1) as keyof typeof succeeded
      attempts.set(`${path} ${id}`, (attempts.get(`${path} ${id}`) ?? 0) + 1)
      if (path === 'flaky' && attempts.get(`${path} ${id}`)! <= 2) return { status: 500 }
      if (path === 'fifo' && countOnPath % 3 === 2) return { status: 503 }
      if (path === 'fifo' && !succeeded.fifo.has(id)) {
        const { key, n } = JSON.parse(r.body) as { key: string; n: number }
        fifoOrder[Number(key.slice(1))]!.push(n)
      }
      succeeded[path].add(id)
      return {}
    })
    cleanups.push(receiver.close)
    const db = await database()
    // autoDisable off: the flaky destination's first 250 attempts all fail.
    const outflow = await engine(db, { retention: { events: '60m' }, delivery: { concurrency: 20 }, alerts: { autoDisable: false } })
    await outflow.upsertTenant('t', {})
    await outflow.createDestination('t', { id: 'plain', type: 'webhook', topics: '*', config: { url: `${receiver.url}/plain` } })
    await outflow.createDestination('t', { id: 'flaky', type: 'webhook', topics: '*', config: { url: `${receiver.url}/flaky` }, delivery: { schedule: [20, 20, 20] } })
    await outflow.createDestination('t', {
      id: 'fifo',
      type: 'webhook',
      topics: '*',
      config: { url: `${receiver.url}/fifo` },
      delivery: { ordering: 'fifo', ordering_key: 'data.key', schedule: [20], max_attempts: 100 },
    })

    // 200 recent events and 50 two hours old, published by 25 concurrent callers in batches and one by one, each
    // caller's events in order under an ordering key of its own.
    const EVENTS = 250
    const old = new Date(Date.now() - 2 * 3_600_000).toISOString()
    const input = (n: number) => ({ id: `ev-${n}`, tenant_id: 't', topic: 'order.created', data: { key: `k${Math.floor(n / 10)}`, n }, ...(n >= 200 ? { time: old } : {}) })
    await Promise.all(
      Array.from({ length: 25 }, async (_, caller) => {
        for (let i = caller * 10; i < caller * 10 + 10; i += 5) {
          if (caller % 2) await outflow.publishMany([0, 1, 2, 3, 4].map((j) => input(i + j)))
          else for (let j = 0; j < 5; j++) await outflow.publish(input(i + j))
        }
      }),
    )
    await waitFor(() => Object.values(succeeded).every((ids) => ids.size === EVENTS), 30_000, 'every delivery succeeded').catch((e) => { console.log('DEBUG', Object.entries(succeeded).map(([k, v]) => [k, v.size]), [...new Set(bouncer.log().split('\n').filter((l) => /WARNING|ERROR|closing because/.test(l)).map((l) => l.replace(/^.*?(WARNING|ERROR|LOG)/, '$1').replace(/0x[0-9a-f]+|\d+\.\d+\.\d+\.\d+:\d+|age=\S+|outflow_t_\w+/g, '')))].join('\n')); throw e })
    // Each plain delivery was sent once; each flaky one three times: two failures, then the success.
    expect(receiver.on('/plain')).toHaveLength(EVENTS)
    expect(receiver.on('/flaky')).toHaveLength(3 * EVENTS)
    // FIFO: per key, the first successful receipt of each event comes in publish order.
    for (const order of fifoOrder) {
      expect(order).toHaveLength(10)
      expect(order).toEqual([...order].sort((a, b) => a - b))
    }

    // Retention's prune pass (the pruners' lock on the direct connection) removes the 50 old events, and only them.
    let pruned = 0
    await waitFor(async () => (pruned += (await outflow.prune()).events) >= 50, 30_000, 'a prune pass')
    expect(pruned).toBe(50)
    // Listed once per destination.
    const listed = await outflow.listEvents('t', { limit: 1000 })
    expect([...new Set(listed.models.map((e) => e.id))].sort()).toEqual(Array.from({ length: 200 }, (_, n) => `ev-${n}`).sort())

    // A replay of the plain destination's successes sends each recent event again.
    // (once every success is recorded: results are written in batches after the receiver answers)
    const recorded = async () => (await outflow.listEvents('t', { limit: 1000, destination_id: 'plain', status: 'success' })).models.length
    await waitFor(async () => (await recorded()) === 200, 30_000, 'the plain successes recorded')
    const job = await outflow.replayDestination('t', 'plain', { since: new Date(Date.now() - 3_600_000).toISOString(), status: 'success' })
    expect(job.matched).toBe(200)
    await waitFor(async () => (await outflow.getReplay('t', 'plain', job.id)).status === 'completed', 60_000, 'the replay')
    expect(receiver.on('/plain')).toHaveLength(EVENTS + 200)
  }, 180_000)

  it('a publish on engine A wakes engine B at once through NOTIFY, B listening on listenUrl with a 10-minute poll', async () => {
    const receiver = await startReceiver()
    cleanups.push(receiver.close)
    const db = await database()
    const a = await engine(db, { delivery: { worker: false } })
    await a.upsertTenant('w', {})
    await a.createDestination('w', { id: 'd', type: 'webhook', topics: '*', config: { url: `${receiver.url}/d` } })
    await engine(db, { delivery: { pollIntervalMs: 600_000 } })
    // B is listening (its LISTEN session is on the direct connection), and has polled once at start.
    const admin = pg(db.url, { max: 1, onnotice: () => {} })
    cleanups.push(() => admin.end())
    await new Promise((r) => setTimeout(r, 3000))
    await a.publish({ id: 'wake-1', tenant_id: 'w', topic: 'order.created', data: {} })
    await waitFor(() => receiver.on('/d').length === 1, 20_000, 'B delivering the event')
    await a.publish({ id: 'wake-2', tenant_id: 'w', topic: 'order.created', data: {} })
    await waitFor(() => receiver.on('/d').length === 2, 20_000, 'B delivering the second event')
    expect(receiver.on('/d').map((r) => r.headers['webhook-id'])).toHaveLength(2)
  }, 60_000)

  it('publishes inside a host transaction that goes through the same PgBouncer', async () => {
    const receiver = await startReceiver()
    cleanups.push(receiver.close)
    const db = await database()
    const outflow = await engine(db)
    await outflow.upsertTenant('h', {})
    await outflow.createDestination('h', { id: 'd', type: 'webhook', topics: '*', config: { url: `${receiver.url}/d` } })
    // The host's own postgres.js through the pooler, as PgBouncer 1.18 needs it: no named prepared statements.
    const host = pg(bouncer.pooledUrl(db.url), { max: 4, prepare: false, onnotice: () => {} })
    cleanups.push(() => host.end())
    await host`create table orders (id text primary key)`
    // The first publish reads the tenant's targets and the server's identity on the engine's pool, while the host's
    // transaction holds a server connection: alone, so it finds the other one (docs/scaling.md › Through PgBouncer).
    const publishOrder = (i: number) =>
      host.begin(async (tx) => {
        await tx`insert into orders values (${`o${i}`})`
        await outflow.publish({ id: `o${i}`, tenant_id: 'h', topic: 'order.created', data: { i } }, { tx })
      })
    await publishOrder(0)
    await Promise.all(Array.from({ length: 19 }, (_, i) => publishOrder(i + 1)))
    await expect(host.begin(async (tx) => {
      await outflow.publish({ id: 'rolled-back', tenant_id: 'h', topic: 'order.created', data: {} }, { tx })
      throw new Error('roll back')
    })).rejects.toThrow('roll back')
    await waitFor(() => receiver.on('/d').length === 20, 30_000, 'the committed publishes delivered')
    // An event is listed from its first attempt on: the results are written in batches after the receiver answers.
    const listed = async () => (await outflow.listEvents('h', { limit: 100 })).models.map((e) => e.id).sort()
    await waitFor(async () => (await listed()).length === 20, 30_000, 'the attempts recorded')
    expect(await listed()).toEqual(Array.from({ length: 20 }, (_, i) => `o${i}`).sort())
  }, 60_000)

  it("the pooled pool's settings answer a statement with parameters sent while one without is in flight on the same connection", async () => {
    // postgres.js sends a statement with parameters as Parse/Describe/Flush (Bind/Execute/Sync once described) and
    // pipelines queries on a busy connection. PgBouncer 1.18 keeps the server connection for as many answers as it
    // saw Syncs: behind a query without parameters in flight, the Describe's answer would go nowhere and hang.
    const db = await database()
    const route = checkedRoute(pooled(db))
    const client = pg(route.pooled ? bouncer.pooledUrl(db.url) : db.url, { max: 2, onnotice: () => {}, ...poolSettings(route, 10_000) })
    cleanups.push(() => client.end({ timeout: 1 }))
    const answers = await Promise.all(Array.from({ length: 400 }, (_, i) => (i % 2 ? client.unsafe('select $1::int as n', [i]) : client.unsafe(`select ${i} as n`)).then(([row]) => row!.n as number)))
    expect(answers).toEqual(Array.from({ length: 400 }, (_, i) => i))
  }, 30_000)

  it('engines migrating one fresh database at once through the pooler both succeed, and one instance at a time holds the pruners\' lock', async () => {
    const db = await database()
    const [a, b] = [await postgres(pooled(db))(), await postgres(pooled(db))()] as Storage[]
    cleanups.push(() => a!.close(), () => b!.close())
    await Promise.all([a!.migrate(), b!.migrate()])
    await a!.upsertTenant('m', {}, new Date())
    expect(await b!.getTenant('m')).not.toBeNull()
    const release = await a!.lockPruner!()
    expect(release).toBeTypeOf('function')
    expect(await b!.lockPruner!()).toBeNull()
    await release!()
    const again = await b!.lockPruner!()
    expect(again).toBeTypeOf('function')
    expect(await a!.lockPruner!()).toBeNull()
    await again!()
  }, 60_000)
})

describe('postgres({ pooler, listenUrl }) validation', () => {
  const opening = (options: PostgresOptions) => postgres(options)().then(
    () => null,
    (err: unknown) => err,
  )

  it("refuses pooler: 'transaction' without listenUrl", async () => {
    expect(await opening({ url: 'postgres://u@127.0.0.1:6432/db', pooler: 'transaction' })).toMatchObject({ code: 'validation', data: { listenUrl: expect.stringContaining('needs listenUrl') } })
  })

  it('refuses a pooler mode other than transaction', async () => {
    expect(await opening({ url: 'postgres://u@127.0.0.1:6432/db', listenUrl: 'postgres://u@127.0.0.1:5432/db', pooler: 'session' as 'transaction' })).toMatchObject({
      code: 'validation',
      data: { pooler: expect.stringContaining("must be 'transaction'") },
    })
  })

  it("refuses a listenUrl on the pooler's own host and port, and one that is not a postgres url", async () => {
    expect(await opening({ url: 'postgres://u@127.0.0.1:6432/db', listenUrl: 'postgres://u@127.0.0.1:6432/db', pooler: 'transaction' })).toMatchObject({
      code: 'validation',
      data: { listenUrl: expect.stringContaining('directly') },
    })
    expect(await opening({ url: 'postgres://u@127.0.0.1:6432/db', listenUrl: 'http://127.0.0.1:5432/db' })).toMatchObject({ code: 'validation', data: { listenUrl: expect.stringContaining('postgres://') } })
  })
})
