import postgresJs from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import type { Storage } from '../../src/storage/storage.js'
import { migratedDatabase } from '../support/pg-templates.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { postgresAvailable } from '../support/services.js'

// `outflow migrate --partition-history` (storage.partitionHistory): an install on the plain layout, with history
// from before event_created_at existed, moved to daily partitions while an engine publishes and delivers; an
// interrupted move resumed; nothing lost, nothing delivered twice.

const day = 86_400_000
const T = 'mover'

describe.runIf(postgresAvailable)('moving a plain Postgres event log to daily partitions, online', () => {
  let db: { url: string; drop: () => Promise<void> }
  let sql: postgresJs.Sql
  let outflow: Outflow
  let mover: Storage
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  const published: string[] = []
  const steps: string[] = []
  /** What the engine beside the move logged as warnings and errors. */
  const troubles: string[] = []

  beforeAll(async () => {
    db = await migratedDatabase('plain')
    receiver = await startReceiver()
    outflow = await createOutflow({
      storage: postgres({ url: db.url, max: 4 }),
      apiKey: 'partition-move-admin-key',
      jwtSecret: 'partition-move-jwt-secret-0123456789',
      allowPrivateNetworks: true,
      insecurePlaintextCredentials: true,
      logger: { debug() {}, info() {}, warn: (_f, m) => troubles.push(m), error: (f, m) => troubles.push(`${m}: ${JSON.stringify(f)}`) },
      delivery: { pollIntervalMs: 50, timeoutMs: 5_000 },
    })
    troubles.length = 0 // the warning about plaintext credentials, at start
    await outflow.upsertTenant(T, {})
    await outflow.createDestination(T, { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/hook` } })
    sql = postgresJs(db.url, { max: 1, onnotice: () => {} })
    // History: 300 events of three days ago, delivered; a third of their rows written before event_created_at existed.
    const old = new Date(Date.now() - 3 * day)
    await sql`insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at)
      select ${T}, 'old-' || g, 'order.created', ${old}, '{}', '{}', true, ${old} from generate_series(1, 300) g`
    await sql`insert into deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, successful_at, event_created_at)
      select 'dlv-old-' || g, ${T}, 'old-' || g, 'hook', 'order.created', ${old}, 'success', 1, false, ${old}, case when g % 3 = 0 then null else ${old}::timestamptz end
      from generate_series(1, 300) g`
    await sql`insert into attempts (id, tenant_id, event_id, destination_id, delivery_id, attempt_number, manual, status, delivered_at, event_created_at)
      select 'att-old-' || g, ${T}, 'old-' || g, 'hook', 'dlv-old-' || g, 1, false, 'success', ${old}, case when g % 3 = 0 then null else ${old}::timestamptz end
      from generate_series(1, 300) g`
    // The operator's `outflow migrate --partition-history`: another process's storage on the same database.
    mover = await postgres({ url: db.url, max: 2 })()
    await mover.migrate()
  }, 60_000)

  afterAll(async () => {
    await outflow?.close()
    await mover?.close()
    await sql?.end()
    await receiver?.close()
    await db?.drop()
  })

  const delivered = () => new Set(receiver.on('/hook').map((r) => r.headers['webhook-id']))
  const layout = async () =>
    (await sql<{ partitioned: boolean }[]>`select exists (select 1 from pg_partitioned_table where partrelid = 'events'::regclass) as partitioned`)[0]!.partitioned

  it('moves while events are published and delivered, resumes after an interruption, and loses nothing', async () => {
    let publishing = true
    const publisher = (async () => {
      for (let i = 0; publishing; i++) {
        const { id } = await outflow.publish({ tenant_id: T, id: `live-${i}`, topic: 'order.created', data: { i } })
        published.push(id)
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    await waitFor(() => published.length >= 50, 10_000, 'publishing under way')

    // Interrupted once the rows are checked, before the index builds and the swap: the next run resumes.
    const interrupted = await mover
      .partitionHistory!((message) => {
        steps.push(message)
        if (message.includes('building the new primary key index')) throw new Error('interrupted')
      })
      .catch((error: Error) => error.message)
    expect(interrupted).toBe('interrupted')
    expect(await layout()).toBe(false)
    expect(steps.filter((m) => m.includes('filling in event_created_at')).length).toBeGreaterThan(0)

    steps.length = 0
    const report = await mover.partitionHistory!((message) => steps.push(message))
    const cutover = new Date((Math.floor(Date.now() / day) + 2) * day).toISOString().slice(0, 10)
    expect(report).toEqual({ moved: true, cutover, backfilled: 0 })
    // The checks the first run validated were kept; nothing was filled in again.
    expect(steps.some((m) => m.includes('checking every row'))).toBe(false)
    expect(steps.some((m) => m.includes('building the new primary key index'))).toBe(true)
    expect(await layout()).toBe(true)

    const before = published.length
    await waitFor(() => published.length >= before + 50, 10_000, 'publishing after the move')
    publishing = false
    await publisher
    await waitFor(() => delivered().size === published.length, 30_000, 'every published event delivered')
    expect(receiver.on('/hook')).toHaveLength(published.length)
    expect([...delivered()].sort()).toEqual([...published].sort())
    // Its statements gave way to none of the move's: no claim or write failed (the day partitions' creation, taking
    // the tables' locks while claims held one and wanted another, used to make claims deadlock victims).
    expect(troubles).toEqual([])

    // Each plain table is the partition before the cutover, the days after it have their own, and the old rows are all there.
    const partitions = await sql<{ parent: string; name: string; bound: string }[]>`
      select p.relname as parent, c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
      from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
      where p.relname in ('events', 'deliveries', 'attempts') and c.relkind = 'r'`
    for (const table of ['events', 'deliveries', 'attempts']) {
      const mine = partitions.filter((p) => p.parent === table)
      expect(mine.find((p) => p.name === `${table}_unpartitioned`)?.bound).toContain(`FROM (MINVALUE) TO ('${cutover}`)
      expect(mine.map((p) => p.name)).toEqual(expect.arrayContaining([`${table}_default`, `${table}_p${cutover.replaceAll('-', '')}`]))
    }
    const [counts] = await sql<{ events: number; deliveries: number; attempts: number; unfilled: number }[]>`
      select (select count(*)::int from events where id like 'old-%') as events, (select count(*)::int from deliveries where event_id like 'old-%') as deliveries,
        (select count(*)::int from attempts where event_id like 'old-%') as attempts,
        (select count(*)::int from attempts where event_created_at is null) + (select count(*)::int from deliveries where event_created_at is null) as unfilled`
    expect(counts).toEqual({ events: 300, deliveries: 300, attempts: 300, unfilled: 0 })
    // Read across the moved partition and the new ones through the engine that ran beside the move.
    expect((await outflow.getEvent(T, 'old-7')).id).toBe('old-7')
    expect((await outflow.getEvent(T, published.at(-1)!)).id).toBe(published.at(-1))
    expect((await outflow.listEvents(T, { limit: 100 })).models).toHaveLength(100)

    // Moved once: running it again does nothing.
    expect(await mover.partitionHistory!(() => {})).toEqual({ moved: false })
  }, 120_000)

  it('retention drops the days after the cutover whole and deletes the older rows', async () => {
    const now = new Date(Date.now() + 10 * day)
    const dropped = await mover.prunePartitions!({ before: now, now })
    // The days from the cutover on were empty (every live event is before it): dropped whole, the moved table kept.
    expect(dropped.length).toBeGreaterThan(0)
    expect(dropped.every((d) => d.events === 0)).toBe(true)
    const [left] = await sql<{ n: number }[]>`select count(*)::int as n from events_unpartitioned`
    expect(left!.n).toBeGreaterThanOrEqual(300)
  })
})
