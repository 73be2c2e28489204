import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import postgresClient from 'postgres'
import type { OutflowOptions } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { migratedDatabase } from './pg-templates.js'
import { postgresAvailable } from './services.js'

/** A fresh database an engine can open, and a second connection the test reads its tables through. */
export interface SqlDatabase {
  storage: OutflowOptions['storage']
  /** Plain SQL; the same text runs on both dialects (SQLite on a file, read-only, sees every commit). */
  query: <T>(text: string) => Promise<T[]>
  close(): Promise<void>
}

export interface SqlStorage {
  name: 'sqlite' | 'postgres'
  available: boolean
  open(): Promise<SqlDatabase>
}

/** SQLite on a file and Postgres (a fresh database per `open()`), each with a SQL reader beside the engine's own connection. */
export const sqlStorages: SqlStorage[] = [
  {
    name: 'sqlite',
    available: true,
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'outflow-sql-'))
      const path = join(dir, 'outflow.db')
      let reader: Database.Database | undefined
      return {
        storage: sqlite({ path }),
        query: async <T>(text: string) => (reader ??= new Database(path, { readonly: true })).prepare(text).all() as T[],
        async close() {
          reader?.close()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    },
  },
  {
    name: 'postgres',
    available: postgresAvailable,
    async open() {
      const db = await migratedDatabase('partitioned')
      const client = postgresClient(db.url, { max: 2, onnotice: () => {} })
      return {
        // The callers' bound (default 3 s) is the fault suites' subject; here a request slower than it on a loaded
        // machine (load average 27 seen under stress-ng) would answer 503 where these suites assert the API's answer.
        storage: postgres({ url: db.url, requestTimeoutMs: 10_000 }),
        query: async <T>(text: string) => (await client.unsafe(text)) as unknown as T[],
        async close() {
          await client.end()
          await db.drop()
        },
      }
    },
  },
]
