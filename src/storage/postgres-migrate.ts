import { readMigrationFiles } from 'drizzle-orm/migrator'
import { migrate } from 'drizzle-orm/postgres-js/migrator'
import type { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import type PostgresJs from 'postgres'
import { migrationsFolder } from './migrations-folder.js'
import { createPartitionsAhead, daysAhead, historyPartitioned, partitionEmptyHistory } from './postgres-partitions.js'
import { createClaimFunction } from './postgres-partitioned-claim.js'
import { movePlainHistory, type MoveProgress, type MoveReport } from './postgres-partition-move.js'
import { prepareTenantClaims } from './postgres-tenant-claims.js'
import { distributeTables } from './postgres-citus.js'
import { createPlanOnceFunctions } from './postgres-plan-once.js'
import { hotStatements } from './postgres-hot-statements.js'

/** Any constant works; it only has to be the same in every process migrating this database. */
const migrationLockKey = 0x6f7574666c6f77 // "outflow"
/** Where migrations are recorded, in Outflow's schema: a host's own drizzle migrations keep drizzle's default table. */
const migrationsTable = '__outflow_migrations'

/**
 * Apply Outflow's pending migrations to `schemaName`. One connection holds a session advisory lock, so two
 * processes starting at once migrate one after the other. Its search_path is Outflow's schema: the committed
 * migrations name their tables without one.
 */
export async function migratePostgres(
  connect: typeof PostgresJs,
  drizzle: typeof drizzlePostgres,
  url: string,
  schemaName: string,
  { partition = true, tenantClaims = false, citus = false } = {},
): Promise<void> {
  const lockClient = connect(url, { max: 1, onnotice: () => {}, connection: { search_path: `"${schemaName}"` } })
  try {
    await lockClient`select pg_advisory_lock(${migrationLockKey})`
    const folder = migrationsFolder('postgres')
    await adoptDrizzleMigrations(lockClient, schemaName, folder)
    await migrate(drizzle({ client: lockClient }), { migrationsFolder: folder, migrationsSchema: schemaName, migrationsTable })
    // On Citus: a new install's tables are made local by the migrations, then distributed (a migration's backfill
    // may join tables); a table a later migration makes is distributed before the triggers that write it are made.
    if (citus) await distributeTables(lockClient, schemaName)
    await prepareHistory(lockClient, schemaName, partition)
    await prepareTenantClaims(lockClient, schemaName, tenantClaims, citus)
    if (!citus) await createPlanOnceFunctions(lockClient, schemaName, Object.values(hotStatements(schemaName)))
    await lockClient`select pg_advisory_unlock(${migrationLockKey})`
  } finally {
    await lockClient.end()
  }
}

/**
 * Move an existing install's plain event log to the partitioned layout, online and resumably (see
 * postgres-partition-move.ts), under the migration lock; then the claim function and the coming days' partitions.
 */
export async function partitionPostgresHistory(connect: typeof PostgresJs, url: string, schemaName: string, progress: MoveProgress, tenantClaims = false): Promise<MoveReport> {
  const lockClient = connect(url, { max: 1, onnotice: () => {}, connection: { search_path: `"${schemaName}"` } })
  try {
    await lockClient`select pg_advisory_lock(${migrationLockKey})`
    const report = await movePlainHistory(lockClient, schemaName, progress)
    await prepareHistory(lockClient, schemaName, false)
    // The moved table keeps its triggers as a partition; the new parent gets them (and so every day's partition).
    await prepareTenantClaims(lockClient, schemaName, tenantClaims)
    await lockClient`select pg_advisory_unlock(${migrationLockKey})`
    return report
  } finally {
    await lockClient.end()
  }
}

/**
 * A new install (no event yet) gets the partitioned layout unless `partition` is false; on that layout, the claim
 * function and the partitions of the coming days are (re)made. See postgres-partitions.ts.
 */
async function prepareHistory(client: PostgresJs.Sql, schemaName: string, partition: boolean): Promise<void> {
  if (partition) await partitionEmptyHistory(client, schemaName)
  if (!(await historyPartitioned(client, schemaName))) return
  await createClaimFunction(client, schemaName)
  await createPartitionsAhead(client, schemaName, new Date(), daysAhead)
}

/**
 * Databases migrated by releases before `__outflow_migrations` recorded their migrations in drizzle's default
 * table (`drizzle.__drizzle_migrations`), which a host's own drizzle migrations may share. Carry Outflow's rows
 * over once (matched by the journal's timestamps), so its migrations are not applied again.
 */
async function adoptDrizzleMigrations(client: PostgresJs.Sql, schemaName: string, folder: string): Promise<void> {
  const [found] = await client<{ adopted: boolean; installed: boolean; legacy: boolean }[]>`
    select to_regclass(${`"${schemaName}".${migrationsTable}`}) is not null as adopted,
      to_regclass(${`"${schemaName}".deliveries`}) is not null as installed,
      to_regclass('drizzle.__drizzle_migrations') is not null as legacy`
  if (!found || found.adopted || !found.installed || !found.legacy) return
  const applied = readMigrationFiles({ migrationsFolder: folder }).map((m) => String(m.folderMillis))
  await client.begin(async (tx) => {
    await tx.unsafe(`create table "${schemaName}".${migrationsTable} (id serial primary key, hash text not null, created_at bigint)`)
    await tx.unsafe(
      `insert into "${schemaName}".${migrationsTable} (hash, created_at)
       select hash, created_at from drizzle.__drizzle_migrations where created_at = any($1::bigint[]) order by created_at`,
      [applied],
    )
  })
}
