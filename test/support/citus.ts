import postgresClient from 'postgres'
import { postgres } from '../../src/storage/postgres.js'
import type { StorageKind } from './storages.js'

// Outflow on Citus (issue 31 part 5): the suites run against a Citus coordinator when OUTFLOW_CITUS_URL names one
// (docs/citus.md says how to build and start a cluster here). Citus is not in Debian or npm, so CI runs without it.

export const citusUrl = process.env.OUTFLOW_CITUS_URL

/** Tables distributed by tenant_id, co-located with `tenants` (distributed by its id, the tenant). */
const byTenant = ['destinations', 'events', 'deliveries', 'attempts', 'rate_buckets', 'replay_jobs', 'expunge_jobs', 'due_tenants']
/** Tables without a tenant, or read by a key without one: a copy on every node. */
const reference = ['signing_keys', 'portal_codes']

/**
 * Distributes a migrated schema's tables as the `citus` option is to: each tenant's rows on one shard group.
 * Idempotent (tables already distributed are left alone). The migrations record and `delivery_order_seq` stay
 * on the coordinator.
 */
export async function distributeForCitus(sql: postgresClient.Sql, schema: string): Promise<void> {
  const distributed = new Set(
    (await sql<{ name: string }[]>`select logicalrelid::regclass::text as name from pg_dist_partition`).map((r) => r.name.replace(/^.*\./, '').replaceAll('"', '')),
  )
  const q = (table: string) => `"${schema}".${table}`
  // The tenantClaims trigger on deliveries writes only its own tenant's due_tenants row (co-located).
  await sql`set citus.enable_unsafe_triggers = on`
  if (!distributed.has('tenants')) await sql`select create_distributed_table(${q('tenants')}, 'id')`
  for (const table of byTenant) {
    if (!distributed.has(table)) await sql`select create_distributed_table(${q(table)}, 'tenant_id', colocate_with => ${q('tenants')})`
  }
  for (const table of reference) if (!distributed.has(table)) await sql`select create_reference_table(${q(table)})`
}

/**
 * Postgres storage on the Citus coordinator: a fresh schema per `open()`, migrated (plain layout, claims per
 * tenant unless told otherwise), then distributed. Available only with OUTFLOW_CITUS_URL.
 */
export function citusKind({ tenantClaims = true } = {}): StorageKind {
  const schemas: string[] = []
  const opened: Array<{ close(): Promise<void> }> = []
  return {
    name: 'citus',
    available: Boolean(citusUrl),
    tenantClaims,
    open: async () => {
      const schema = `outflow_c${process.pid}_${Math.random().toString(36).slice(2, 8)}`
      schemas.push(schema)
      const storage = await postgres({ url: citusUrl!, schema, max: 4, partitionHistory: false, tenantClaims })()
      opened.push(storage)
      await storage.migrate()
      const sql = postgresClient(citusUrl!, { max: 1, onnotice: () => {} })
      try {
        await distributeForCitus(sql, schema)
      } finally {
        await sql.end()
      }
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
