import postgresJs from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { postgres } from '../../src/storage/postgres.js'
import { distributeTables } from '../../src/storage/postgres-citus.js'
import { citusUrl } from '../support/citus.js'
import { migrateFirst } from '../support/old-migrations.js'

// A migration that comes after the tables were distributed (docs/citus.md, the audit's problem 10): an install on
// Citus from before migration 0015 (claims per tenant) takes it on its distributed tables.

describe.runIf(citusUrl)('citus: migrations after the tables were distributed', () => {
  const schema = `outflow_cm${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  const sql = postgresJs(citusUrl ?? '', { max: 1, onnotice: () => {} })
  afterAll(async () => {
    await sql.unsafe(`drop schema if exists "${schema}" cascade`)
    await sql.end()
  })

  it('an install distributed at migration 0014 takes 0015: due_tenants made, filled from its pending deliveries, distributed, and claimed from', async () => {
    await migrateFirst(citusUrl!, schema, 15)
    const dist = postgresJs(citusUrl!, { max: 1, onnotice: () => {} })
    await distributeTables(dist, schema).finally(() => dist.end())
    const s = `"${schema}"`
    const due = new Date(Date.now() - 60_000)
    await sql.unsafe(`insert into ${s}.tenants (id, metadata, created_at, updated_at) values ('mt', '{}', $1, $1)`, [due])
    await sql.unsafe(`insert into ${s}.events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) values ('mt', 'e1', 't', $1, '{}', '{}', true, $1)`, [due])
    await sql.unsafe(
      `insert into ${s}.deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
       values ('dlv-mt-e1', 'mt', 'e1', 'd', 't', $1, 'pending', 0, false, $1, $1)`,
      [due],
    )
    const storage = await postgres({ url: citusUrl!, schema, max: 2, citus: true })()
    try {
      await storage.migrate()
      const [table] = await sql<{ method: string; column: string }[]>`
        select p.partmethod as method, column_to_column_name(p.logicalrelid, p.partkey) as column from pg_dist_partition p
        where p.logicalrelid = ${`${s}.due_tenants`}::regclass`
      expect(table).toEqual({ method: 'h', column: 'tenant_id' })
      expect((await sql.unsafe(`select tenant_id, due_at from ${s}.due_tenants`)).map((r) => [r.tenant_id, (r.due_at as Date).getTime()])).toEqual([['mt', due.getTime()]])
      const now = new Date()
      const claimed = await storage.claimDueDeliveries({ owner: 'w', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 10 })
      expect(claimed.map((c) => c.id)).toEqual(['dlv-mt-e1'])
      // The trigger made by the migration fires on the shards: a new pending delivery marks its tenant due.
      await sql.unsafe(`insert into ${s}.tenants (id, metadata, created_at, updated_at) values ('mt2', '{}', $1, $1)`, [due])
      await sql.unsafe(
        `insert into ${s}.deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
         values ('dlv-mt2-e1', 'mt2', 'e1', 'd', 't', $1, 'pending', 0, false, $1, $1)`,
        [due],
      )
      expect((await sql.unsafe(`select due_at from ${s}.due_tenants where tenant_id = 'mt2'`)).map((r) => (r.due_at as Date).getTime())).toEqual([due.getTime()])
    } finally {
      await storage.close()
    }
  })
})
