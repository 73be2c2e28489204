import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { OutflowError } from '../../src/errors.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, jwtSecret, rejection } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { tableDumper } from '../support/table-dump.js'

// Postgres storage calls are bounded by `timeoutMs` (503 once it passes). A transaction that is still
// running then must not commit later: the caller was told it failed. Each test holds row locks the
// engine's transaction meets one after another, each released before the server's statement_timeout
// (also timeoutMs) would cancel the wait, so the transaction as a whole outlives its deadline and
// then finishes. It must roll back.

const timeoutMs = 2000
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Rows left without their owner (as in the race suite). */
const orphanQuery = `
  select 'destination' as kind, id from destinations x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'event', id from events x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'delivery', id from deliveries x where not exists (select 1 from tenants t where t.id = x.tenant_id)
  union all select 'attempt', id from attempts x where not exists (select 1 from tenants t where t.id = x.tenant_id)`

describe.runIf(postgresAvailable)('Postgres: a call answered 503 on its deadline changed nothing', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>
  let sql: postgresClient.Sql
  let outflow: Outflow
  const query = async <T>(text: string) => (await sql.unsafe(text)) as unknown as T[]
  beforeAll(async () => {
    db = await createTestDatabase()
    sql = postgresClient(db.url, { max: 6, onnotice: () => {} })
    outflow = await createOutflow({ storage: postgres({ url: db.url, timeoutMs }), apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { worker: false } })
  })
  afterAll(async () => {
    await outflow?.close()
    await sql?.end()
    await db?.drop()
  })

  /**
   * Open transactions holding the rows each statement selects, released one by one, `stepMs` apart:
   * each wait is shorter than timeoutMs, and the deadline passes during one of them.
   */
  async function holdInTurn(statements: string[], stepMs: number): Promise<{ released: Promise<void> }> {
    const holders = []
    for (const statement of statements) {
      const reserved = await sql.reserve()
      await reserved.unsafe('begin')
      await reserved.unsafe(statement)
      holders.push(reserved)
    }
    const released = (async () => {
      for (const reserved of holders) {
        await sleep(stepMs)
        await reserved.unsafe('rollback')
        reserved.release()
      }
    })()
    return { released }
  }

  /** Wait until no transaction holds `tenant`'s row (the engine's abandoned one has ended), then report whether it exists. */
  async function tenantRowAfterWriters(tenant: string): Promise<boolean> {
    const rows = await sql.begin(async (tx) => {
      await tx.unsafe(`set local lock_timeout = '20s'`)
      return tx.unsafe(`select id from tenants where id = $1 for update`, [tenant])
    })
    return rows.length > 0
  }

  async function seedTenant(tenant: string) {
    await outflow.upsertTenant(tenant, { metadata: { keep: true } })
    for (const id of ['d1', 'd2']) await outflow.createDestination(tenant, { id, type: 'webhook', topics: '*', config: { url: 'http://127.0.0.1:9/' } })
    for (let i = 0; i < 3; i++) await outflow.publish({ id: `e${i}`, tenant_id: tenant, topic: 'order.created', data: { i } })
  }

  it('a tenant delete that waited past its deadline answers 503 and rolls back: the tenant keeps everything', async () => {
    await seedTenant('held')
    const tables = tableDumper({ query }, 'postgres')
    const before = await tables.dump()
    // The delete's statements in order: the tenant row, its destinations, its deliveries, its events.
    const { released } = await holdInTurn([
      `select id from tenants where id = 'held' for key share`,
      `select id from destinations where tenant_id = 'held' for share`,
      `select id from deliveries where tenant_id = 'held' for share`,
      `select id from events where tenant_id = 'held' for share`,
    ], 800)
    const err = await rejection(outflow.deleteTenant('held'))
    expect(err).toBeInstanceOf(OutflowError)
    expect(err.status).toBe(503)
    await released
    expect(await tenantRowAfterWriters('held')).toBe(true)
    expect(await tables.dump()).toEqual(before)
    // Nothing half-done either: a delete that gets its locks removes it all.
    expect(await outflow.deleteTenant('held')).toEqual({ success: true })
    expect(await query(orphanQuery)).toEqual([])
  }, 30_000)

  it('a destination create that waited past its deadline answers 503 and creates nothing', async () => {
    await outflow.upsertTenant('slow', {})
    // createDestination holds the tenant row, then inserts: a held row lock, then a pending insert of the same key.
    const { released } = await holdInTurn([
      `select id from tenants where id = 'slow' for update`,
      `insert into destinations (tenant_id, id, type, topics, config, credentials, created_at, updated_at)
       values ('slow', 'late', 'webhook', '["*"]', '{}', '{}', now(), now())`,
    ], 1200)
    const err = await rejection(outflow.createDestination('slow', { id: 'late', type: 'webhook', topics: '*', config: { url: 'http://127.0.0.1:9/' } }))
    expect(err.status).toBe(503)
    await released
    await tenantRowAfterWriters('slow')
    expect(await query(`select id from destinations where tenant_id = 'slow'`)).toEqual([])
    expect(await rejection(outflow.getDestination('slow', 'late'))).toMatchObject({ status: 404 })
  }, 30_000)

  it('with a 100 ms bound under concurrent creates, publishes and a tenant delete: only 2xx, 404, 409 or 503, and nothing left half-deleted', async () => {
    const tight = await createOutflow({ storage: postgres({ url: db.url, timeoutMs: 10_000, requestTimeoutMs: 100, max: 4 }), apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { worker: false } })
    try {
      await seedTenant('busy')
      const calls: Promise<unknown>[] = []
      for (let i = 0; i < 60; i++) {
        if (i === 30) calls.push(tight.deleteTenant('busy'))
        calls.push(i % 2 ? tight.createDestination('busy', { type: 'webhook', topics: '*', config: { url: 'http://127.0.0.1:9/' } }) : tight.publish({ tenant_id: 'busy', topic: 'order.created', data: { i } }))
      }
      const settled = await Promise.allSettled(calls)
      const failures = settled.flatMap((s) => (s.status === 'rejected' ? [s.reason as unknown] : []))
      expect(failures.filter((e) => !(e instanceof OutflowError) || ![404, 409, 503].includes(e.status))).toEqual([])
      await tenantRowAfterWriters('busy')
      expect(await query(orphanQuery)).toEqual([])
    } finally {
      await tight.close()
    }
  }, 60_000)
})
