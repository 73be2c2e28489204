import postgresJs from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgres } from '../../src/storage/postgres.js'
import type { Storage } from '../../src/storage/storage.js'
import { migratedDatabase } from '../support/pg-templates.js'
import { attemptWrite, seedOwners } from '../support/records.js'
import { waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Claims per tenant (postgres({ tenantClaims: true }), postgres-tenant-claims.ts): the table of tenants with due work
// that the claim reads, kept by a trigger, and settled when a tenant's due deliveries are all taken.

const t0 = Date.parse('2026-05-01T00:00:00.000Z')
const at = (ms: number) => new Date(t0 + ms)

for (const layout of ['plain', 'partitioned'] as const) {
  describe.runIf(postgresAvailable)(`postgres tenant claims (${layout} layout)`, () => {
    let db: { url: string; drop: () => Promise<void> }
    let s: Storage
    let sql: postgresJs.Sql
    beforeAll(async () => {
      db = await migratedDatabase(layout)
      s = await postgres({ url: db.url, max: 4, partitionHistory: layout === 'partitioned', tenantClaims: true })()
      await s.migrate()
      sql = postgresJs(db.url, { max: 2, onnotice: () => {} })
      await seedOwners(s, { a: ['d'], b: ['d'], c: ['d'], race: ['d'], late: ['d'], off: ['d'] })
    })
    afterAll(async () => {
      await s?.close()
      await sql?.end()
      await db?.drop()
    })

    const publish = (tenant: string, id: string, dueMs: number) =>
      s.insertEvents([
        {
          event: { tenant_id: tenant, id, topic: 't', time: at(0), data: { id }, metadata: {}, eligible_for_retry: true, created_at: at(0) },
          deliveries: [{ id: `dlv-${tenant}-${id}-d`, destination_id: 'd', next_attempt_at: at(dueMs) }],
        },
      ])
    const dueRow = async (tenant: string) =>
      (await sql<{ due: Date }[]>`select due_at as due from due_tenants where tenant_id = ${tenant}`)[0]?.due.getTime() ?? null
    let attempts = 0
    /** A successful attempt of each (tenant, event)'s delivery: it is due no more. */
    const succeed = (nowMs: number, ...pairs: Array<[string, string]>) =>
      s.recordAttempts(pairs.map(([tenant, event]) => attemptWrite(tenant, event, 'd', 'success', at(nowMs), { idSuffix: `-ok${++attempts}` })))
    /** A delivery published, claimed and delivered at `ms`: its tenant's row is left at the lease's end. */
    const delivered = async (tenant: string, event: string, ms: number) => {
      await publish(tenant, event, ms)
      expect(await claim(ms)).toEqual([`dlv-${tenant}-${event}-d`])
      await succeed(ms + 100, [tenant, event])
    }
    const claim = async (nowMs: number, owner = 'w', limit = 100) =>
      (await s.claimDueDeliveries({ owner, now: at(nowMs), leaseUntil: at(nowMs + 30_000), limit })).map((c) => c.id).sort()

    it('a publish makes its tenant due at its delivery; a claim takes it and moves the tenant to the lease end; a success leaves nothing due', async () => {
      await publish('a', 'a1', 1_000)
      expect(await dueRow('a')).toBe(t0 + 1_000)
      // Not yet due: nothing claimed, and the tenant keeps its row.
      expect(await claim(500)).toEqual([])
      expect(await dueRow('a')).toBe(t0 + 1_000)
      expect(await claim(1_000)).toEqual(['dlv-a-a1-d'])
      expect(await dueRow('a')).toBe(t0 + 31_000)
      await s.recordAttempts([attemptWrite('a', 'a1', 'd', 'success', at(1_100), { idSuffix: '-1' })])
      // The row is early (it said the lease's end): one empty claim then, which removes it.
      expect(await claim(31_000)).toEqual([])
      expect(await dueRow('a')).toBeNull()
    })

    it('a retry sooner than the lease end, a released lease and a manual retry each make the tenant due again', async () => {
      await publish('b', 'b1', 0)
      expect(await claim(0)).toEqual(['dlv-b-b1-d'])
      expect(await dueRow('b')).toBe(t0 + 30_000)
      // A failed attempt with its retry in 5 s (before the lease would have ended).
      const retry = attemptWrite('b', 'b1', 'd', 'pending', at(100), { idSuffix: '-2' })
      await s.recordAttempts([{ ...retry, delivery: { ...retry.delivery, next_attempt_at: at(5_000) } }])
      expect(await dueRow('b')).toBe(t0 + 5_000)
      expect(await claim(5_000)).toEqual(['dlv-b-b1-d'])
      expect(await s.releaseLeases('w', ['dlv-b-b1-d'])).toBe(1)
      expect(await dueRow('b')).toBe(t0 + 5_000)
      expect(await claim(6_000)).toEqual(['dlv-b-b1-d'])
      await s.recordAttempts([attemptWrite('b', 'b1', 'd', 'failed', at(6_100), { idSuffix: '-3' })])
      expect(await claim(60_000)).toEqual([])
      expect(await dueRow('b')).toBeNull()
      expect(await s.requeueDelivery('b', 'b1', 'd', at(70_000))).toBe(true)
      expect(await claim(70_000)).toEqual(['dlv-b-b1-d'])
      await succeed(70_100, ['b', 'b1'])
    })

    it('claims from many tenants in one round, a tenant with a backlog up to the limit, and settles only when all were taken', async () => {
      for (let i = 0; i < 5; i++) await publish('c', `c${i}`, 200_000 + i)
      await publish('a', 'a2', 200_010)
      const first = await claim(300_000, 'w', 4)
      expect(first).toHaveLength(4)
      // The limit was reached: no settle, the tenants stay due.
      expect(await dueRow('c')).toBe(t0 + 200_000)
      const rest = await claim(300_000, 'w', 100)
      expect([...first, ...rest].sort()).toEqual(['dlv-a-a2-d', 'dlv-c-c0-d', 'dlv-c-c1-d', 'dlv-c-c2-d', 'dlv-c-c3-d', 'dlv-c-c4-d'])
      expect(await dueRow('c')).toBe(t0 + 330_000)
      await succeed(300_100, ['a', 'a2'], ...[0, 1, 2, 3, 4].map((i): [string, string] => ['c', `c${i}`]))
    })

    it('a settle does not lose a publish that commits after it read the tenant: the row held by the publish is left due', async () => {
      await delivered('race', 'r0', 400_000)
      // A publish in an open transaction (a host's transaction, or a slow statement): the tenant's row is due at
      // the lease end (430,000), before the new delivery (500,000), so the trigger leaves it, holding it.
      const open = await sql.reserve()
      try {
        await open`begin`
        await open`insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at)
          values ('race', 'r1', 't', ${at(0)}, '{}', '{}', true, ${at(0)})`
        await open`insert into deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
          values ('dlv-race-r1-d', 'race', 'r1', 'd', 't', ${at(0)}, 'pending', 0, false, ${at(500_000)}, ${at(0)})`
        // The claim at the lease end finds nothing to take; its settle must not move the row past 500,000.
        expect(await claim(430_000)).toEqual([])
        expect(await dueRow('race')).toBe(t0 + 430_000)
        await open`commit`
      } finally {
        open.release()
      }
      expect(await claim(500_000)).toEqual(['dlv-race-r1-d'])
      await succeed(500_100, ['race', 'r1'])
    })

    it('a publish that comes while a settle holds the row waits for it, then lowers the row', async () => {
      await delivered('late', 'l0', 600_000)
      const settling = await sql.reserve()
      try {
        // What a settle does: lock the row, then (after the publish below has queued) delete it.
        await settling`begin`
        await settling`select tenant_id from due_tenants where tenant_id = 'late' for update skip locked`
        const published = publish('late', 'l1', 700_000)
        await new Promise((resolve) => setTimeout(resolve, 200))
        await settling`delete from due_tenants where tenant_id = 'late'`
        await settling`commit`
        await published
      } finally {
        settling.release()
      }
      expect(await dueRow('late')).toBe(t0 + 700_000)
      expect(await claim(700_000)).toEqual(['dlv-late-l1-d'])
      await succeed(700_100, ['late', 'l1'])
    })

    it('migrate() without the option drops the trigger and empties the table; with it, fills the table from the pending deliveries', async () => {
      await publish('off', 'o1', 800_000)
      const plain = await postgres({ url: db.url, max: 1, partitionHistory: layout === 'partitioned' })()
      await plain.migrate()
      await plain.close()
      expect(await sql`select * from due_tenants`).toHaveLength(0)
      await publish('off', 'o2', 800_500)
      expect(await dueRow('off')).toBeNull()
      await s.migrate()
      expect(await dueRow('off')).toBe(t0 + 800_000)
      expect(await claim(900_000)).toEqual(['dlv-off-o1-d', 'dlv-off-o2-d'])
    })
  })
}

describe.runIf(postgresAvailable)('postgres tenant claims through a move to the partitioned layout', () => {
  it('keeps marking tenants due: the moved table and every new day partition have the trigger once', async () => {
    const db = await migratedDatabase('plain')
    const s = await postgres({ url: db.url, max: 2, tenantClaims: true })()
    const sql = postgresJs(db.url, { max: 1, onnotice: () => {} })
    try {
      await s.migrate()
      await seedOwners(s, { m: ['d'] })
      const publish = (id: string, created: Date) =>
        s.insertEvents([
          {
            event: { tenant_id: 'm', id, topic: 't', time: created, data: {}, metadata: {}, eligible_for_retry: true, created_at: created },
            deliveries: [{ id: `dlv-m-${id}-d`, destination_id: 'd', next_attempt_at: created }],
          },
        ])
      const now = Date.now()
      await publish('before', new Date(now))
      expect((await s.partitionHistory!(() => {})).moved).toBe(true)
      // A day past the cutover: a partition of its own, made by the move.
      await publish('after', new Date(now + 3 * 86_400_000))
      const triggers = await sql<{ table: string; n: number }[]>`
        select c.relname as table, count(*)::int as n from pg_trigger g join pg_class c on c.oid = g.tgrelid
        where g.tgname = 'outflow_tenant_due_insert' group by 1 order by 1`
      expect(triggers.every((t) => t.n === 1)).toBe(true)
      expect(triggers.map((t) => t.table)).toEqual(expect.arrayContaining(['deliveries', 'deliveries_unpartitioned', 'deliveries_default']))
      const claimed = await s.claimDueDeliveries({ owner: 'w', now: new Date(now + 4 * 86_400_000), leaseUntil: new Date(now + 5 * 86_400_000), limit: 10 })
      expect(claimed.map((c) => c.id).sort()).toEqual(['dlv-m-after-d', 'dlv-m-before-d'])
    } finally {
      await s.close()
      await sql.end()
      await db.drop()
    }
  })
})

// A burst of publishes over many tenants lands on a table whose statistics do not know it yet (a new install, or
// autovacuum's last analyze before the burst). The claim's lookup per tenant must still go through that tenant's
// index: through the global due index it reads every due delivery once per tenant (the drain over 1,000 tenants
// went at half the global claim's rate). The plain layout only: the partitioned one runs the same statement, and
// each case waits about 10 s for the claim's backend to report its index reads.
describe.runIf(postgresAvailable)('postgres tenant claims of a burst (plain layout)', () => {
  let db: { url: string; drop: () => Promise<void> }
  let s: Storage
  let sql: postgresJs.Sql
  beforeAll(async () => {
    // Tables made by migrate() here, never analyzed or vacuumed (a template's were: its statistics say empty).
    db = await createTestDatabase()
    s = await postgres({ url: db.url, max: 4, schema: 'burst', partitionHistory: false, tenantClaims: true })()
    await s.migrate()
    sql = postgresJs(db.url, { max: 1, onnotice: () => {}, connection: { search_path: 'burst' } })
  })
  afterAll(async () => {
    await s?.close()
    await sql?.end()
    await db?.drop()
  })

  it('claims through each tenant\'s index, not the global due index, before the table is analyzed', async () => {
    const tenants = Array.from({ length: 300 }, (_, i) => `burst${i}`)
    await seedOwners(s, Object.fromEntries(tenants.map((t) => [t, ['d']])))
    const due = new Date(Date.now() - 60_000)
    await sql`insert into events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at)
      select t, 'e' || g, 't', ${due}, '{}', '{}', true, ${due} from unnest(${tenants}::text[]) t cross join generate_series(1, 20) g`
    await sql`insert into deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
      select 'dlv-' || t || '-e' || g || '-d', t, 'e' || g, 'd', 't', ${due}, 'pending', 0, false, ${due}, ${due} from unnest(${tenants}::text[]) t cross join generate_series(1, 20) g`
    /** Index tuples read so far from the global due index and from the per-tenant one (every day partition's). */
    const indexReads = async () => {
      const rows = await sql<{ name: string; n: string }[]>`
        select p.relname as name, coalesce(sum(s.idx_tup_read), 0)::text as n from pg_class p
        left join pg_inherits i on i.inhparent = p.oid
        join pg_stat_user_indexes s on s.indexrelid = coalesce(i.inhrelid, p.oid)
        where p.relname in ('deliveries_due_idx', 'deliveries_tenant_due_idx') and p.relnamespace = 'burst'::regnamespace group by p.relname`
      return { due: Number(rows.find((r) => r.name === 'deliveries_due_idx')?.n ?? 0), tenant: Number(rows.find((r) => r.name === 'deliveries_tenant_due_idx')?.n ?? 0) }
    }
    const before = await indexReads()
    const now = new Date()
    const claimed = await s.claimDueDeliveries({ owner: 'burst', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 200 })
    expect(claimed).toHaveLength(200)
    const after = await waitFor(async () => {
      const reads = await indexReads()
      return reads.due + reads.tenant > before.due + before.tenant && reads
    }, 20_000, 'the claim\'s index reads reported (a backend reports them once idle, 10 s after its last report)')
    expect(after.due - before.due).toBe(0)
    expect(after.tenant - before.tenant).toBeGreaterThanOrEqual(200)
  })
})
