import postgresClient from 'postgres'
import { postgres } from '../../src/storage/postgres.js'
import type { StorageKind } from './storages.js'

// Outflow on Citus (issue 31 part 5): the suites run against a Citus coordinator when OUTFLOW_CITUS_URL names one
// (docs/citus.md says how to build and start a cluster here). Citus is not in Debian or npm, so CI runs without it.

export const citusUrl = process.env.OUTFLOW_CITUS_URL

/**
 * Postgres storage on the Citus coordinator with the `citus` option: a fresh schema per `open()`, migrated and
 * distributed by `migrate()`. Available only with OUTFLOW_CITUS_URL.
 */
export function citusKind(): StorageKind {
  const schemas: string[] = []
  const opened: Array<{ close(): Promise<void> }> = []
  return {
    name: 'citus',
    available: Boolean(citusUrl),
    tenantClaims: true,
    open: async () => {
      const schema = `outflow_c${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      schemas.push(schema)
      const storage = await postgres({ url: citusUrl!, schema, max: 4, citus: true })()
      opened.push(storage)
      await storage.migrate()
      return storage
    },
    cleanup: async () => {
      await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})))
      const sql = postgresClient(citusUrl!, { max: 1, onnotice: () => {} })
      try {
        for (const schema of schemas.splice(0)) await sql.unsafe(`drop schema if exists "${schema}" cascade`)
      } finally {
        await sql.end()
      }
    },
  }
}
