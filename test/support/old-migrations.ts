import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { drizzle } from 'drizzle-orm/postgres-js'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import postgresJs from 'postgres'
import { migrationsFolder } from '../../src/storage/migrations-folder.js'

/**
 * Outflow's first `count` Postgres migrations applied to `schema` (made if missing), as a release that shipped only
 * those did: an install from before the rest, for a test of what `migrate()` does to it.
 */
export async function migrateFirst(url: string, schema: string, count: number): Promise<void> {
  const folder = mkdtempSync(join(tmpdir(), 'outflow-migrations-'))
  const client = postgresJs(url, { max: 1, onnotice: () => {}, connection: { search_path: `"${schema}"` } })
  try {
    cpSync(migrationsFolder('postgres'), folder, { recursive: true })
    const journalPath = join(folder, 'meta/_journal.json')
    const journal = JSON.parse(readFileSync(journalPath, 'utf8')) as { entries: Array<{ idx: number }> }
    journal.entries = journal.entries.filter((e) => e.idx < count)
    writeFileSync(journalPath, JSON.stringify(journal))
    await client.unsafe(`create schema if not exists "${schema}"`)
    await migrate(drizzle({ client }), { migrationsFolder: folder, migrationsSchema: schema, migrationsTable: '__outflow_migrations' })
  } finally {
    await client.end()
    rmSync(folder, { recursive: true, force: true })
  }
}
