import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { eq } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate as drizzleMigrate } from 'drizzle-orm/postgres-js/migrator'
import postgresClient from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres, postgresTables } from '../../src/storage/postgres.js'
import { migrationsFolder } from '../../src/storage/migrations-folder.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

const folder = migrationsFolder('postgres')
const journal = JSON.parse(readFileSync(join(folder, 'meta/_journal.json'), 'utf8')) as { entries: { tag: string; when: number }[] }
const outflowTables = ['attempts', 'deliveries', 'destinations', 'due_tenants', 'events', 'expunge_jobs', 'portal_codes', 'rate_buckets', 'replay_jobs', 'signing_keys', 'tenants']

describe.runIf(postgresAvailable)('Outflow in a Postgres schema of the host database', () => {
  const cleanups: (() => Promise<void>)[] = []
  afterAll(async () => {
    for (const c of cleanups.reverse()) await c()
  })

  /** A fresh database and a client of the test's own on it. */
  async function database() {
    const db = await createTestDatabase()
    const sql = postgresClient(db.url, { max: 2, onnotice: () => {} })
    cleanups.push(async () => {
      await sql.end()
      await db.drop()
    })
    // The tables, not the day partitions of the partitioned layout (they live in the same schema).
    const tablesIn = async (schema: string) =>
      (
        await sql<{ name: string }[]>`
          select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
          where n.nspname = ${schema} and c.relkind in ('r', 'p') and not c.relispartition order by 1`
      ).map((r) => r.name)
    return { url: db.url, sql, tablesIn }
  }

  it("creates its tables and __outflow_migrations in the configured schema, nothing in public or drizzle's, and applies nothing twice", async () => {
    const { url, sql, tablesIn } = await database()
    const storage = await postgres({ url, schema: 'outflow_s' })()
    try {
      await storage.migrate()
      await storage.migrate()
    } finally {
      await storage.close()
    }
    expect(await tablesIn('outflow_s')).toEqual(['__outflow_migrations', ...outflowTables])
    expect(await tablesIn('public')).toEqual([])
    const [row] = await sql`select to_regclass('drizzle.__drizzle_migrations') is null as absent`
    expect(row!.absent).toBe(true)
    const recorded = await sql<{ created_at: string }[]>`select created_at from outflow_s.__outflow_migrations order by created_at`
    expect(recorded.map((r) => Number(r.created_at))).toEqual(journal.entries.map((e) => e.when))
  })

  it("migrates even when the host's own drizzle migrations (newer) share drizzle.__drizzle_migrations", async () => {
    const { url, sql, tablesIn } = await database()
    // Before __outflow_migrations, drizzle's default table held both, and a newer host row made Outflow skip its own.
    await sql`create schema drizzle`
    await sql`create table drizzle.__drizzle_migrations (id serial primary key, hash text not null, created_at bigint)`
    await sql`insert into drizzle.__drizzle_migrations (hash, created_at) values ('host-migration', ${String(Date.now() + 86_400_000)})`
    const storage = await postgres({ url })()
    try {
      await storage.migrate()
    } finally {
      await storage.close()
    }
    expect(await tablesIn('public')).toEqual(['__outflow_migrations', ...outflowTables])
  })

  it('adopts the migrations that earlier releases recorded in drizzle.__drizzle_migrations, and applies none again', async () => {
    const { url, sql } = await database()
    // What earlier releases did: drizzle's migrator with its defaults, tables in public.
    const old = postgresClient(url, { max: 1, onnotice: () => {} })
    try {
      await drizzleMigrate(drizzle({ client: old }), { migrationsFolder: folder })
    } finally {
      await old.end()
    }
    await sql`insert into drizzle.__drizzle_migrations (hash, created_at) values ('host-migration', 1)`
    await sql`insert into public.tenants (id, metadata, created_at, updated_at) values ('kept', '{}', now(), now())`
    const outflow = await createOutflow({ apiKey, jwtSecret, encryptionKey, storage: postgres({ url }), delivery: { worker: false } })
    try {
      expect((await outflow.getTenant('kept')).id).toBe('kept')
    } finally {
      await outflow.close()
    }
    const recorded = await sql<{ created_at: string }[]>`select created_at from public.__outflow_migrations order by created_at`
    expect(recorded.map((r) => Number(r.created_at))).toEqual(journal.entries.map((e) => e.when))
  })

  it("runs on tables a host migrated with its own tool (the SQL files under its search_path), and postgresTables() reads them in the host's transaction", async () => {
    const { url, sql, tablesIn } = await database()
    // The host's tool: each committed migration file, in journal order, with search_path set to the schema.
    await sql.begin(async (tx) => {
      await tx`create schema app_outflow`
      await tx`set local search_path to app_outflow`
      for (const { tag } of journal.entries) for (const statement of readFileSync(join(folder, `${tag}.sql`), 'utf8').split('--> statement-breakpoint')) await tx.unsafe(statement)
    })
    expect(await tablesIn('app_outflow')).toEqual(outflowTables)
    const outflow = await createOutflow({ apiKey, jwtSecret, encryptionKey, migrate: false, storage: postgres({ url, schema: 'app_outflow' }), delivery: { worker: false } })
    const ormClient = postgresClient(url, { max: 1, onnotice: () => {} })
    try {
      await outflow.upsertTenant('acme', {})
      await outflow.createDestination('acme', { id: 'hook', type: 'webhook', topics: '*', config: { url: 'https://example.com/hook' } })
      const t = postgresTables('app_outflow')
      const orm = drizzle({ client: ormClient })
      const seen = await orm.transaction(async (tx) => {
        await outflow.publish({ id: 'e1', tenant_id: 'acme', topic: 'order.created', data: {} }, { tx })
        return tx.select({ id: t.deliveries.event_id, destination: t.deliveries.destination_id, status: t.deliveries.status }).from(t.deliveries).where(eq(t.deliveries.event_id, 'e1'))
      })
      expect(seen).toEqual([{ id: 'e1', destination: 'hook', status: 'pending' }])
      expect(await tablesIn('public')).toEqual([])
    } finally {
      await outflow.close()
      await ormClient.end()
    }
  })

  it('refuses a schema name it cannot use', async () => {
    await expect(postgres({ url: 'postgres://127.0.0.1:1/none', schema: 'Shop-Outflow' })()).rejects.toMatchObject({ status: 422, data: { schema: expect.any(String) } })
  })
})
