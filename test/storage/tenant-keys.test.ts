import postgresJs from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { postgres } from '../../src/storage/postgres.js'
import { migrateFirst } from '../support/old-migrations.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Citus's rule for a table distributed by tenant_id: every primary key and unique index includes tenant_id
// (issue 31 part 5). Tables that are not tenant data: tenants (its id is the tenant), signing_keys and portal_codes
// (reference tables, on every node), the migrations record (the coordinator's).
const notTenantData = new Set(['tenants', 'signing_keys', 'portal_codes', '__outflow_migrations'])

interface Key {
  table: string
  index: string
  columns: string[]
}

/** The unique indexes (primary keys among them) of the public schema's tables, partitions left out. */
async function uniqueKeys(sql: postgresJs.Sql): Promise<Key[]> {
  return sql<Key[]>`
    select t.relname as table, c.relname as index,
      array(select a.attname from unnest(i.indkey) k join pg_attribute a on a.attrelid = t.oid and a.attnum = k)::text[] as columns
    from pg_index i join pg_class c on c.oid = i.indexrelid join pg_class t on t.oid = i.indrelid
    join pg_namespace n on n.oid = t.relnamespace
    where n.nspname = 'public' and i.indisunique and not t.relispartition and t.relkind in ('r', 'p')
    order by 1, 2`
}

const keysWithoutTenant = (keys: Key[]) => keys.filter((k) => !notTenantData.has(k.table) && !k.columns.includes('tenant_id'))

describe.runIf(postgresAvailable)('postgres: every key of tenant data includes tenant_id', () => {
  const dropped: Array<() => Promise<void>> = []
  afterAll(async () => {
    for (const drop of dropped) await drop()
  })

  for (const partitionHistory of [false, true]) {
    it(`on a new install, ${partitionHistory ? 'partitioned' : 'plain'} layout`, async () => {
      const db = await createTestDatabase()
      dropped.push(db.drop)
      const s = await postgres({ url: db.url, max: 1, partitionHistory })()
      await s.migrate()
      await s.close()
      const sql = postgresJs(db.url, { max: 1, onnotice: () => {} })
      try {
        const keys = await uniqueKeys(sql)
        expect(keysWithoutTenant(keys)).toEqual([])
        const primary = (table: string) => keys.find((k) => k.table === table && k.index.endsWith(partitionHistory && table !== 'replay_jobs' ? '_pkey' : '_pk'))
        for (const table of ['deliveries', 'attempts']) expect(primary(table)?.columns.slice(0, 2)).toEqual(['id', 'tenant_id'])
        for (const table of ['replay_jobs', 'expunge_jobs']) expect(keys.find((k) => k.table === table)?.columns).toEqual(['id', 'tenant_id'])
      } finally {
        await sql.end()
      }
    })
  }

  it('an install from before migration 0014 gets the new keys, its rows kept, and lookups by id still use the key', async () => {
    const db = await createTestDatabase()
    dropped.push(db.drop)
    // The migrations up to 0013, as a release before this one applied them.
    await migrateFirst(db.url, 'public', 14)
    const sql = postgresJs(db.url, { max: 1, onnotice: () => {} })
    try {
      expect(keysWithoutTenant(await uniqueKeys(sql)).map((k) => k.table)).toEqual(['attempts', 'deliveries', 'expunge_jobs', 'replay_jobs'])
      await sql`insert into deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual)
        select 'dlv_' || g, 't' || (g % 3), 'evt_' || g, 'd1', 'topic', now(), 'success', 1, false from generate_series(1, 500) g`
      const s = await postgres({ url: db.url, max: 1, partitionHistory: false })()
      await s.migrate()
      await s.close()
      expect(keysWithoutTenant(await uniqueKeys(sql))).toEqual([])
      expect((await sql<{ n: number }[]>`select count(*)::int as n from deliveries`)[0]!.n).toBe(500)
      await sql`analyze deliveries`
      const plan = await sql.unsafe(`explain (format text) select id from deliveries where id = 'dlv_7'`)
      expect(plan.map((r) => String(Object.values(r)[0])).join('\n')).toMatch(/Index (Only )?Scan using deliveries_id_tenant_id_pk/)
    } finally {
      await sql.end()
    }
  })
})
