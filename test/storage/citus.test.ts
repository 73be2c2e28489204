import postgresJs from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Storage } from '../../src/storage/storage.js'
import { citusKind, citusUrl } from '../support/citus.js'
import { seedOwners } from '../support/records.js'

// On a Citus cluster (OUTFLOW_CITUS_URL; docs/citus.md): the tables distributed by tenant_id, the tenantClaims
// trigger firing on the shards, and a claim that names one tenant running there with its row locks (Citus refuses
// `FOR UPDATE` in a statement that reaches more than one shard).

const many = Array.from({ length: 12 }, (_, i) => `cm${i}`)

describe.runIf(citusUrl)('citus: claims per tenant on distributed tables', () => {
  const kind = citusKind()
  let s: Storage
  let sql: postgresJs.Sql
  let schema: string
  beforeAll(async () => {
    s = await kind.open()
    sql = postgresJs(citusUrl!, { max: 1, onnotice: () => {} })
    ;[{ schema } = { schema: '' }] = await sql<{ schema: string }[]>`
      select n.nspname as schema from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid join pg_namespace n on n.oid = c.relnamespace
      where c.relname = 'deliveries' order by c.oid desc limit 1`
    await seedOwners(s, Object.fromEntries(['ct', ...many].map((t) => [t, ['d']])))
  })
  afterAll(async () => {
    await sql?.end()
    await kind.cleanup()
  })

  it('distributes the tenant tables by tenant_id, co-located, and the shared ones as reference tables', async () => {
    const rows = await sql<{ table: string; method: string; column: string | null }[]>`
      select c.relname as table, p.partmethod as method, column_to_column_name(p.logicalrelid, p.partkey) as column
      from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} order by 1`
    const of = (table: string) => rows.find((r) => r.table === table)
    for (const table of ['attempts', 'deliveries', 'destinations', 'due_tenants', 'events', 'expunge_jobs', 'rate_buckets', 'replay_jobs']) expect(of(table)).toMatchObject({ method: 'h', column: 'tenant_id' })
    expect(of('tenants')).toMatchObject({ method: 'h', column: 'id' })
    for (const table of ['portal_codes', 'signing_keys']) expect(of(table)?.method).toBe('n')
  })

  it('marks the tenant due from a delivery written on its shard, claims it, and settles the tenant once it is done', async () => {
    const due = new Date(Date.now() - 1_000)
    await sql.unsafe(
      `insert into "${schema}".events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) values ('ct', 'e1', 't', $1, '{}', '{}', true, $1)`,
      [due],
    )
    await sql.unsafe(
      `insert into "${schema}".deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
       values ('dlv-ct-e1', 'ct', 'e1', 'd', 't', $1, 'pending', 0, false, $1, $1)`,
      [due],
    )
    const dueRow = async () => (await sql.unsafe(`select due_at from "${schema}".due_tenants where tenant_id = 'ct'`))[0]?.due_at as Date | undefined
    expect((await dueRow())?.getTime()).toBe(due.getTime())
    const now = new Date()
    const claimed = await s.claimDueDeliveries({ owner: 'w', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 10 })
    expect(claimed.map((c) => [c.id, c.event.id])).toEqual([['dlv-ct-e1', 'e1']])
    // Settled to the lease's end: the claim took all the tenant had.
    expect((await dueRow())?.getTime()).toBe(now.getTime() + 30_000)
    await sql.unsafe(`update "${schema}".deliveries set status = 'success', next_attempt_at = null, lease_owner = null, lease_until = null where tenant_id = 'ct' and id = 'dlv-ct-e1'`)
    const later = new Date(now.getTime() + 60_000)
    expect(await s.claimDueDeliveries({ owner: 'w', now: later, leaseUntil: new Date(later.getTime() + 30_000), limit: 10 })).toEqual([])
    expect(await dueRow()).toBeUndefined()
  })

  it('claims the due deliveries of tenants on several shards in one claim, a statement per shard', async () => {
    const due = new Date(Date.now() - 1_000)
    for (const t of many) {
      await sql.unsafe(
        `insert into "${schema}".events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) values ($1, 'e1', 't', $2, '{}', '{}', true, $2)`,
        [t, due],
      )
      await sql.unsafe(
        `insert into "${schema}".deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
         values ('dlv-' || $1, $1, 'e1', 'd', 't', $2, 'pending', 0, false, $2, $2)`,
        [t, due],
      )
    }
    const [{ shards } = { shards: 0 }] = await sql.unsafe(
      `select count(distinct get_shard_id_for_distribution_column('"${schema}".due_tenants', t))::int as shards from unnest($1::text[]) t`,
      [many],
    )
    expect(shards).toBeGreaterThan(1)
    const now = new Date()
    const claimed = await s.claimDueDeliveries({ owner: 'w', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 100 })
    expect(claimed.map((c) => c.id).sort()).toEqual(many.map((t) => `dlv-${t}`).sort())
    expect(await s.claimDueDeliveries({ owner: 'w2', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 100 })).toEqual([])
  })
})
