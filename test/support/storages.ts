import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import type { Storage } from '../../src/storage/storage.js'
import { migratedDatabase } from './pg-templates.js'
import { startPgBouncer, pgbouncerAvailable, type PgBouncer } from './pgbouncer.js'
import { createTestDatabase, postgresAvailable } from './services.js'
import { citusKind, citusUrl } from './citus.js'

const tenantClaimsEverywhere = process.env.OUTFLOW_TEST_TENANT_CLAIMS === '1'

/** A storage under test: `open()` gives a fresh, migrated, empty one; `cleanup()` removes what it made. */
export interface StorageKind {
  name: string
  available: boolean
  /** Postgres claiming tenant by tenant (`tenantClaims`): it takes the worker's claim window as a hint only. */
  tenantClaims?: boolean
  open(): Promise<Storage>
  cleanup(): Promise<void>
}

/**
 * SQLite in memory, SQLite on a file, and Postgres (a fresh database per `open()`, with the partitioned layout new
 * installs get). `{ plainPostgres: true }` adds Postgres with the plain tables (a host's drizzle-kit layout, or an
 * install from before partitioning). `{ tenantClaims: true }` adds Postgres claiming tenant by tenant (the
 * `tenantClaims` option); OUTFLOW_TEST_TENANT_CLAIMS=1 makes every Postgres kind claim so (a whole-suite run of
 * that mode, docs/testing.md). With OUTFLOW_CITUS_URL, a `citus` kind on that coordinator. Each call gives new kinds
 * with their own cleanup.
 */
export function storageKinds({ plainPostgres = false, tenantClaims = false } = {}): StorageKind[] {
  const dirs: string[] = []
  const dbs: { drop(): Promise<void> }[] = []
  const opened: Storage[] = []
  const track = async (s: Storage) => {
    opened.push(s)
    await s.migrate()
    return s
  }
  const closeAll = async () => {
    await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})))
  }
  const postgresKind = (name: string, partitionHistory: boolean, claimByTenant = tenantClaimsEverywhere): StorageKind => ({
    name,
    available: postgresAvailable,
    tenantClaims: claimByTenant,
    open: async () => {
      const db = await migratedDatabase(partitionHistory ? 'partitioned' : 'plain')
      dbs.push(db)
      return track(await postgres({ url: db.url, max: 4, partitionHistory, tenantClaims: claimByTenant })())
    },
    cleanup: async () => {
      await closeAll()
      for (const db of dbs.splice(0)) await db.drop()
    },
  })
  return [
    { name: 'sqlite :memory:', available: true, open: async () => track(await sqlite({ path: ':memory:' })()), cleanup: closeAll },
    {
      name: 'sqlite file',
      available: true,
      open: async () => {
        const dir = mkdtempSync(join(tmpdir(), 'outflow-'))
        dirs.push(dir)
        return track(await sqlite({ path: join(dir, 'outflow.db') })())
      },
      cleanup: async () => {
        await closeAll()
        for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
      },
    },
    postgresKind('postgres', true),
    ...(plainPostgres ? [postgresKind('postgres plain tables', false)] : []),
    ...(tenantClaims && !tenantClaimsEverywhere ? [postgresKind('postgres tenant claims', false, true)] : []),
    // With OUTFLOW_CITUS_URL (a Citus coordinator; docs/citus.md): Postgres with the `citus` option too.
    ...(citusUrl ? [citusKind()] : []),
  ]
}

/** One storage kind by name, with its own cleanup (e.g. one per HTTP mount). */
export function storageKind(name: 'sqlite :memory:' | 'sqlite file' | 'postgres'): StorageKind {
  return storageKinds().find((k) => k.name === name)!
}

/**
 * Postgres through a PgBouncer in transaction mode (2 server connections per database, so the storage's pool of 4
 * is multiplexed), with LISTEN, locks and migrations on the direct connection. The PgBouncer starts at the first
 * `open()`; `cleanup()` stops it.
 */
export function pgbouncerKind(): StorageKind {
  const dbs: { drop(): Promise<void> }[] = []
  const opened: Storage[] = []
  let bouncer: Promise<PgBouncer> | undefined
  return {
    name: 'postgres through pgbouncer',
    available: postgresAvailable && pgbouncerAvailable(),
    tenantClaims: tenantClaimsEverywhere,
    open: async () => {
      const db = await createTestDatabase()
      dbs.push(db)
      const pooledUrl = (await (bouncer ??= startPgBouncer())).pooledUrl(db.url)
      const s = await postgres({ url: pooledUrl, listenUrl: db.url, pooler: 'transaction', max: 4, tenantClaims: tenantClaimsEverywhere })()
      opened.push(s)
      await s.migrate()
      return s
    },
    cleanup: async () => {
      await Promise.all(opened.splice(0).map((s) => s.close().catch(() => {})))
      for (const db of dbs.splice(0)) await db.drop()
      const started = bouncer
      bouncer = undefined
      await (await started)?.stop()
    },
  }
}
