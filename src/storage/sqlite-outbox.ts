import { statSync } from 'node:fs'
import type BetterSqlite3 from 'better-sqlite3'
import { OutflowError } from '../errors.js'
import type { JsonObject } from '../model/common.js'
import { sqliteEventInserts } from './sqlite-hot-path.js'
import type { HostConnection, PublishTarget } from './storage.js'

// Publishing through the host's own SQLite connection, inside the host's (synchronous) transaction: the
// event and its deliveries are written by the host's connection, so they commit or roll back with the
// host's rows. Statements are prepared once per connection.

const prepared = new WeakMap<BetterSqlite3.Database, HostConnection>()

/**
 * The host's better-sqlite3 connection behind `db` (the Database itself, a drizzle database over it, or
 * a drizzle transaction), checked to be a connection to `path`, the engine's database file.
 */
export function sqliteHostConnection(db: unknown, path: string): HostConnection {
  const client = betterSqliteOf(db)
  const cached = prepared.get(client)
  if (cached) return cached
  if (!client.open) throw refused('the connection is closed')
  if (client.memory || path === ':memory:' || !sameFile(client.name, path))
    throw refused(`it is a connection to ${client.memory ? 'an in-memory database' : `"${client.name}"`}, Outflow's storage is "${path}"`)
  let connection: HostConnection
  try {
    connection = prepare(client)
  } catch (err) {
    // Prepared against the file's schema: without Outflow's tables (not migrated yet), a clear error.
    throw refused(`Outflow's tables are not in it (${(err as Error).message}); run createOutflow() or outflow.migrate() first`)
  }
  prepared.set(client, connection)
  return connection
}

function prepare(client: BetterSqlite3.Database): HostConnection {
  const insertEvents = sqliteEventInserts(client)
  // A tenant with each of its destinations (or once with nulls), oldest destination first, as Storage.publishTargets.
  const targets = client
    .prepare(
      `select t.id, d.id, d.topics, d.filter, d.disabled_at from tenants t left join destinations d on d.tenant_id = t.id
       where t.id = ? order by d.created_at, d.id`,
    )
    .raw()
  const eventExists = client.prepare('select 1 from events where tenant_id = ? and id = ?').pluck()
  return {
    get inTransaction() {
      return client.open && client.inTransaction
    },
    publishTargets(tenantIds) {
      const result = new Map<string, PublishTarget[]>()
      for (const tenantId of new Set(tenantIds)) {
        const rows = targets.all(tenantId) as [string, string | null, string | null, string | null, number | null][]
        if (rows.length === 0) continue
        result.set(
          tenantId,
          rows
            .filter((r) => r[1] !== null)
            .map(([, id, topics, filter, disabledAt]) => ({
              id: id!,
              topics: JSON.parse(topics!) as string[],
              filter: filter === null ? null : (JSON.parse(filter) as JsonObject | null),
              disabled_at: disabledAt === null ? null : new Date(disabledAt),
            })),
        )
      }
      return result
    },
    insertEvents,
    hasEvent: (tenantId, eventId) => client.open && eventExists.get(tenantId, eventId) !== undefined,
  }
}

/** better-sqlite3's Database behind `db`: drizzle keeps it as `$client` on a database and in the session of a transaction. */
function betterSqliteOf(db: unknown): BetterSqlite3.Database {
  const holder = db as { $client?: unknown; session?: { client?: unknown } } | null
  for (const candidate of [holder?.$client, holder?.session?.client, db]) if (isBetterSqlite(candidate)) return candidate
  throw refused('not a better-sqlite3 Database, nor a drizzle database or transaction over one')
}

function isBetterSqlite(value: unknown): value is BetterSqlite3.Database {
  const v = value as Partial<BetterSqlite3.Database> | null
  return typeof v === 'object' && v !== null && typeof v.prepare === 'function' && typeof v.inTransaction === 'boolean' && typeof v.name === 'string'
}

/** The same file, however its path is written (relative, through a link). */
function sameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a)
    const y = statSync(b)
    return x.dev === y.dev && x.ino === y.ino
  } catch {
    return false
  }
}

function refused(what: string): OutflowError {
  return new OutflowError('validation', `publishSync { db }: ${what}`, { data: { db: what } })
}
