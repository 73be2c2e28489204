import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { Logger } from '../../src/logger.js'
import { postgres } from '../../src/storage/postgres.js'
import { hotStatements } from '../../src/storage/postgres-hot-statements.js'
import { analyzeGrown } from '../../src/storage/postgres-plan-once.js'
import { apiKey, encryptionKey } from '../support/engines.js'
import { clusterAvailable, startCluster, type Cluster } from '../support/pg-cluster.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// The hot statements (publish, claims, results, publish targets) run through PL/pgSQL functions that plan them once
// per connection (src/storage/postgres-plan-once.ts): all of them on the plain layout, the publish and its targets on
// the partitioned one.

const names = Object.values(hotStatements('public')).map((s) => s.name)

function recordingLogger() {
  const warnings: string[] = []
  const logger: Logger = { debug: () => {}, info: () => {}, warn: (_fields, message) => void warnings.push(message), error: () => {} }
  return { logger, warnings }
}

async function engine(url: string, options: { migrate?: boolean; partitionHistory?: boolean; logger?: Logger } = {}): Promise<Outflow> {
  const { migrate = true, partitionHistory = false, logger = recordingLogger().logger } = options
  return createOutflow({ storage: postgres({ url, max: 3, partitionHistory }), apiKey, encryptionKey, jwtSecret: 'plan-once-test-jwt-secret', allowPrivateNetworks: true, migrate, logger, delivery: { pollIntervalMs: 200 } })
}

/** Publish `count` events of tenant t1 one after another; resolves when the receiver has `total` requests. */
async function publishAndReceive(outflow: Outflow, receiver: Awaited<ReturnType<typeof startReceiver>>, from: number, count: number): Promise<void> {
  for (let n = from; n < from + count; n++) await outflow.publish({ tenant_id: 't1', topic: 'order.created', data: { n } })
  await waitFor(() => receiver.received.length >= from + count, 30_000, `${from + count} deliveries`)
}

async function functionsIn(url: string): Promise<string[]> {
  const sql = postgresClient(url, { max: 1, onnotice: () => {} })
  try {
    const rows = await sql<{ name: string }[]>`select proname as name from pg_proc where proname = any(${names}::text[]) order by 1`
    return rows.map((r) => r.name)
  } finally {
    await sql.end()
  }
}

describe.runIf(clusterAvailable)('postgres: hot statements planned once per connection (pg_stat_statements)', () => {
  let cluster: Cluster
  beforeAll(async () => {
    cluster = await startCluster({ statements: true, settings: '-c pg_stat_statements.track=all -c pg_stat_statements.track_planning=on' })
  }, 120_000)
  afterAll(async () => {
    await cluster?.stop()
  })

  /**
   * An engine on a new database of the cluster delivers `count` events with pg_stat_statements reset after its setup:
   * its hot statements' rows (first 20 characters, whether sent by the engine itself, calls, plans) and what was received.
   */
  async function statementsOf(name: string, count: number, partitionHistory = false) {
    const url = await cluster.createDatabase(name)
    const receiver = await startReceiver()
    const outflow = await engine(url, { partitionHistory })
    const sql = postgresClient(url, { max: 1, onnotice: () => {} })
    try {
      expect(await functionsIn(url)).toEqual([...names].sort())
      await outflow.upsertTenant('t1', {})
      await outflow.createDestination('t1', { type: 'webhook', topics: ['*'], config: { url: receiver.url } })
      await sql`create extension if not exists pg_stat_statements`
      await sql`select pg_stat_statements_reset()`
      await publishAndReceive(outflow, receiver, 0, count)
      // The attempts are logged by the results write: wait until the last one is.
      await waitFor(async () => (await sql`select count(*)::int as n from attempts`)[0]!.n === count, 15_000, 'the attempts logged')
      const rows = await sql<{ toplevel: boolean; calls: number; plans: number; head: string }[]>`
        select toplevel, calls::int, plans::int, ltrim(left(query, 24), E' \n') as head from pg_stat_statements
        where ltrim(query, E' \n') similar to '(with input as|with v as|with picked as|select tn.id, d.tenant_id)%'`
      const received = receiver.received.map((r) => (JSON.parse(r.body) as { n: number }).n).sort((a, b) => a - b)
      return { rows, received }
    } finally {
      await sql.end()
      await outflow.close()
      await receiver.close()
    }
  }

  it('runs publishes, claims and results writes through their functions, each statement planned once per connection', async () => {
    const { rows, received } = await statementsOf('plan_once', 120)
    const of = (head: string, toplevel: boolean) => rows.filter((r) => r.head.startsWith(head) && r.toplevel === toplevel)
    for (const head of ['with input as', 'with v as', 'with picked as']) {
      // Never sent by the engine itself: only run inside the functions.
      expect(of(head, true), head).toEqual([])
      const nested = of(head, false)
      expect(nested.reduce((n, r) => n + r.calls, 0), head).toBeGreaterThanOrEqual(10)
      // Each statement (the claims are two: with and without the claim window) has a generic plan per
      // connection of the pool (3), made on its first run: not one per run.
      for (const statement of nested) expect(statement.plans, head).toBeLessThanOrEqual(3)
    }
    expect(received).toEqual(Array.from({ length: 120 }, (_, n) => n))
  }, 90_000)

  it('on the partitioned layout runs the publish and its targets through their functions, and the results write planned each run', async () => {
    const { rows, received } = await statementsOf('plan_once_partitioned', 60, true)
    const sum = (head: string, toplevel: boolean, field: 'calls' | 'plans') =>
      rows.filter((r) => r.head.startsWith(head) && r.toplevel === toplevel).reduce((n, r) => n + r[field], 0)
    for (const head of ['with input as', 'select tn.id']) {
      expect(sum(head, true, 'calls'), head).toBe(0)
      expect(sum(head, false, 'calls'), head).toBeGreaterThanOrEqual(60)
      expect(sum(head, false, 'plans'), head).toBeLessThanOrEqual(3)
    }
    // The results write: sent by the engine itself, planned at each run.
    expect(sum('with v as', false, 'calls')).toBe(0)
    expect(sum('with v as', true, 'calls')).toBeGreaterThanOrEqual(10)
    expect(sum('with v as', true, 'plans')).toBe(sum('with v as', true, 'calls'))
    expect(received).toEqual(Array.from({ length: 60 }, (_, n) => n))
  }, 90_000)
})

describe.runIf(postgresAvailable)('postgres: hot statements without their functions', () => {
  let db: { url: string; drop: () => Promise<void> }
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  async function dropFunctions(url: string): Promise<void> {
    const sql = postgresClient(url, { max: 1, onnotice: () => {} })
    try {
      for (const row of await sql<{ signature: string }[]>`select oid::regprocedure::text as signature from pg_proc where proname = any(${names}::text[])`)
        await sql.unsafe(`drop function ${row.signature}`)
    } finally {
      await sql.end()
    }
  }

  it('delivers with the statements by themselves on an install migrated without them, and a migrate() makes them', async () => {
    const receiver = await startReceiver()
    const first = await engine(db.url)
    await first.upsertTenant('t1', {})
    await first.createDestination('t1', { type: 'webhook', topics: ['*'], config: { url: receiver.url } })
    await first.close()
    // As an install migrated by a release before the functions.
    await dropFunctions(db.url)
    const { logger, warnings } = recordingLogger()
    const outflow = await engine(db.url, { migrate: false, logger })
    try {
      await publishAndReceive(outflow, receiver, 0, 20)
      expect(await functionsIn(db.url)).toEqual([])
      // Nothing was missing at a call: the engine knew from the start.
      expect(warnings, warnings.join('\n')).toEqual([])
      await outflow.migrate()
      expect(await functionsIn(db.url)).toEqual([...names].sort())
      await publishAndReceive(outflow, receiver, 20, 20)
    } finally {
      await outflow.close()
      await receiver.close()
    }
  }, 60_000)

  it('goes on delivering when the functions are dropped while it runs, with a warning', async () => {
    const receiver = await startReceiver()
    const { logger, warnings } = recordingLogger()
    const outflow = await engine(db.url, { logger })
    try {
      const [destination] = await outflow.listDestinations('t1')
      await outflow.updateDestination('t1', destination!.id, { config: { url: receiver.url } })
      await publishAndReceive(outflow, receiver, 0, 10)
      await dropFunctions(db.url)
      await publishAndReceive(outflow, receiver, 10, 30)
      expect(warnings.filter((w) => w.includes('plan-once function'))).toHaveLength(1)
      const ns = receiver.received.map((r) => (JSON.parse(r.body) as { n: number }).n)
      expect(new Set(ns).size).toBe(40)
    } finally {
      await outflow.close()
      await receiver.close()
    }
  }, 60_000)

})

describe.runIf(postgresAvailable)('postgres: statistics for the plan-once functions', () => {
  it('analyzes a table of 500 rows or more that was never analyzed, not again until it has grown tenfold', async () => {
    const db = await createTestDatabase()
    const outflow = await engine(db.url)
    await outflow.close()
    const sql = postgresClient(db.url, { max: 1, onnotice: () => {} })
    const analyzed = async () =>
      Object.fromEntries(
        (await sql<{ name: string; count: number }[]>`select relname as name, (analyze_count + autoanalyze_count)::int as count from pg_stat_user_tables where relname in ('tenants', 'events')`).map((r) => [r.name, r.count]),
      )
    // The inserting session's counts reach the statistics when it goes idle: they are what the engine reads.
    const liveEvents = (n: number) =>
      waitFor(async () => (await sql`select n_live_tup::int as n from pg_stat_user_tables where relname = 'events'`)[0]!.n === n, 15_000, `${n} live events in the statistics`)
    try {
      await sql`alter table events set (autovacuum_enabled = false)`
      await sql`alter table tenants set (autovacuum_enabled = false)`
      await sql`insert into tenants (id, metadata, created_at, updated_at) select 't' || n, '{}', now(), now() from generate_series(1, 499) n`
      await sql`insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) select 't1', 'e' || n, 'x', now(), '{}', '{}', true, now() from generate_series(1, 600) n`
      await liveEvents(600)
      expect(await analyzeGrown(sql, 'public')).toEqual(['events'])
      expect(await analyzed()).toEqual({ tenants: 0, events: 1 })
      expect(await analyzeGrown(sql, 'public')).toEqual([])
      await sql`insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) select 't1', 'f' || n, 'x', now(), '{}', '{}', true, now() from generate_series(1, 5000) n`
      await liveEvents(5_600)
      // 5,600 rows: not yet ten times the 600 of the last statistics.
      expect(await analyzeGrown(sql, 'public')).toEqual([])
      await sql`insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) select 't1', 'g' || n, 'x', now(), '{}', '{}', true, now() from generate_series(1, 400) n`
      await liveEvents(6_000)
      expect(await analyzeGrown(sql, 'public')).toEqual(['events'])
      expect(await analyzed()).toEqual({ tenants: 0, events: 2 })
    } finally {
      await sql.end()
      await db.drop()
    }
  }, 60_000)

  it('an engine analyzes its young tables by itself once it has delivered 500 events', async () => {
    const db = await createTestDatabase()
    const receiver = await startReceiver()
    const outflow = await engine(db.url)
    const sql = postgresClient(db.url, { max: 1, onnotice: () => {} })
    try {
      await sql`alter table deliveries set (autovacuum_enabled = false)`
      await sql`alter table attempts set (autovacuum_enabled = false)`
      await outflow.upsertTenant('t1', {})
      await outflow.createDestination('t1', { type: 'webhook', topics: ['*'], config: { url: receiver.url } })
      for (let b = 0; b < 6; b++) await outflow.publishMany(Array.from({ length: 100 }, (_, k) => ({ tenant_id: 't1', topic: 'order.created', data: { n: b * 100 + k } })))
      await waitFor(() => receiver.received.length >= 600, 30_000, '600 deliveries')
      const counts = async () =>
        (await sql<{ name: string; count: number }[]>`select relname as name, analyze_count::int as count from pg_stat_user_tables where relname in ('deliveries', 'attempts') order by 1`).map((r) => `${r.name} ${r.count}`)
      // The engine's sessions report their counts within 10 s of going idle; it looks every 5 s.
      await waitFor(async () => (await counts()).join(', ') === 'attempts 1, deliveries 1', 30_000, 'the engine analyzing attempts and deliveries')
    } finally {
      await sql.end()
      await outflow.close()
      await receiver.close()
      await db.drop()
    }
  }, 60_000)
})
