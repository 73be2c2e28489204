import { sql } from 'drizzle-orm'
import type PostgresJs from 'postgres'
import { OutflowError } from '../errors.js'
import { importPeer, loadPeer } from '../load-peer.js'
import { migratePostgres } from './postgres-migrate.js'
import { qualifiedPostgresTables, schemaNamePattern } from './schema/postgres.js'
import type { Db, HotPath, SqlContext, Tables } from './sql-context.js'
import { eventInserts, postgresHotPath } from './postgres-hot-path.js'
import type { Driver } from './postgres-prepared.js'
import { parseTimestamptz, timestamptzOid } from './postgres-timestamps.js'
import { containedTransaction, mapStorageError, reconnectDelaySeconds, withDeadline } from './postgres-faults.js'
import { CommitWatch, commitStatuses } from './postgres-commit-watch.js'
import { insertEventsInTransaction, outboxChecks, serverStartedSql, type OutboxContext, type ServerIdentity } from './postgres-outbox.js'
import { PublishTargetCache, targetsReader } from './postgres-publish-targets.js'
import { postgresQueue } from './postgres-queue.js'
import { partitionsKeeper } from './postgres-partitions-keeper.js'
import { createSqlStorage } from './sql-storage.js'
import type { Storage } from './storage.js'

export { postgresTables } from './schema/postgres.js'

/** The Postgres storage's server, pool, time bounds and schema. */
export interface PostgresOptions {
  /** `postgres://user:pass@host:5432/db` */
  url: string
  /** Pool size (default 10). */
  max?: number
  /**
   * How long one storage call (a statement, or a whole transaction) waits for Postgres, ms (default
   * 10000). Past it the call fails with `unavailable` (HTTP 503 with Retry-After) instead of waiting for
   * a paused or unreachable server; it is also the connect timeout and the server's `statement_timeout`.
   */
  timeoutMs?: number
  /**
   * How long a call made for a caller waits, ms (default 3000, at most `timeoutMs`): each storage call of an API
   * request or of a typed-API call (`publish`, `listEvents`, …). A paused or unreachable server answers such
   * callers 503 with Retry-After within it, while the worker, the pruner and replays keep waiting `timeoutMs`.
   */
  requestTimeoutMs?: number
  /**
   * The Postgres schema that holds Outflow's tables (default `public`): lower-case letters, digits and `_`,
   * at most 50 characters. Created by `migrate()` when missing; migrations are recorded in its
   * `__outflow_migrations` table. Put Outflow beside your own tables in your database (one schema each).
   */
  schema?: string
  /**
   * Whether `migrate()` gives a new install (no event stored yet) the partitioned layout of the event log
   * (default true): events, deliveries and attempts in daily partitions that retention drops whole. An existing
   * install keeps its layout; both layouts work. See docs/operating.md#retention.
   */
  partitionHistory?: boolean
}

/**
 * Thrown inside a transaction whose caller stopped waiting (its deadline passed), so it rolls back.
 * Nobody sees it: the caller already has its `unavailable` error.
 */
class AbandonedTransactionError extends Error {
  constructor() {
    super('the caller stopped waiting for this transaction: rolled back')
  }
}

/** Held by the one instance pruning old events (the `retention` option); one per schema. */
const pruneLockKey = 0x6f7574667072 // "outfpr"

/** NOTIFY channel on which instances announce deliveries any of them may take (per schema: another install in the same database is not woken). */
const workChannelOf = (schema: string) => (schema === 'public' ? 'outflow_work' : `outflow_work_${schema}`)

/** A small stable hash (FNV-1a), so each schema's pruners take their own advisory lock. */
function schemaLockOffset(schema: string): number {
  if (schema === 'public') return 0
  let hash = 0x811c9dc5
  for (const c of schema) hash = Math.imul(hash ^ c.charCodeAt(0), 0x01000193) >>> 0
  return hash + 1
}

/** Runs one storage call within its deadline; `onExpired` is called if the caller stops waiting first. */
type Bound = <T>(work: () => Promise<T>, onExpired?: () => void) => Promise<T>

/** Every call bounded by `ms` (timeoutMs, or requestTimeoutMs for callers), connection faults reported as `unavailable`. */
const boundBy =
  (ms: number): Bound =>
  (work, onExpired) =>
    withDeadline(work(), ms, onExpired).catch((err: unknown) => {
      throw mapStorageError(err)
    })

type Lifecycle = Parameters<typeof createSqlStorage>[1]

/**
 * Postgres storage on postgres.js. Several engines may share one database.
 *
 * @example
 * const outflow = await createOutflow({ storage: postgres({ url: process.env.DATABASE_URL! }) })
 */
export function postgres(options: PostgresOptions): () => Promise<Storage> {
  return async () => {
    const { default: connect } = await loadPeer<{ default: typeof PostgresJs }>('postgres', 'Postgres storage')
    // drizzle's driver module imports postgres itself: loaded after it, so a missing driver is the error above.
    // importPeer: in the CommonJS build a dynamic import() fails in Jest's sandbox, so it is a require there.
    const { drizzle } = await importPeer<typeof import('drizzle-orm/postgres-js')>('drizzle-orm/postgres-js')
    const timeoutMs = options.timeoutMs ?? 10_000
    const schemaName = checkedSchemaName(options.schema ?? 'public')
    const client = connectPool(connect, options, timeoutMs)
    const db = drizzle({ client }) as unknown as Db
    // After drizzle, which sets timestamptz to come as text and reads it with `new Date(text)`:
    // wrong for years 1–99 (see postgres-timestamps.ts). A Date from the parser is taken as it is.
    client.options.parsers[timestamptzOid] = parseTimestamptz
    const tables = qualifiedPostgresTables(schemaName)
    const workChannel = workChannelOf(schemaName)
    const bounded = boundBy(timeoutMs)
    const forCaller = boundBy(Math.min(options.requestTimeoutMs ?? 3_000, timeoutMs))
    const driver = client as unknown as Driver
    const statusesOf = commitStatuses(driver, workChannel)
    const commits = new CommitWatch((xacts) => bounded(() => statusesOf(xacts)))
    const outbox = outboxContext({ client, tables, schemaName, commits, bounded, forCaller })
    const partitions = partitionsKeeper(client, schemaName, bounded)
    const lifecycle: Lifecycle = {
      insertEventsInTransaction: (tx, tenantIds, plan) => insertEventsInTransaction(outbox, tx, tenantIds, plan),
      migrate: async () => {
        await migratePostgres(connect, drizzle, options.url, schemaName, options.partitionHistory ?? true)
        await partitions.migrated()
      },
      async close() {
        partitions.close()
        commits.close()
        await client.end({ timeout: 5 })
      },
      lockPruner: () => lockPruner(client, pruneLockKey + schemaLockOffset(schemaName)),
      async onWork(listener) {
        // postgres.js listens again on a new connection when its connection closes; onlisten runs each time.
        const { unlisten } = await client.listen(workChannel, () => listener(), () => listener())
        return unlisten
      },
    }
    const hotPath = postgresHotPath(tables)
    // One pool, two bounds: the same calls, each with the per-delivery statements of postgres-queue.ts.
    const storageBoundBy = (bound: Bound): Storage => {
      const { publishTargets, claimDueDeliveries, recordAttempts, extendLeases } = postgresQueue(tables, driver, bound, partitions.partitioned)
      const context = sqlContext(db, { tables, hotPath, workChannel }, bound)
      const prunePartitions = partitions.prune
      return { ...createSqlStorage(context, lifecycle), publishTargets, claimDueDeliveries, recordAttempts, extendLeases, prunePartitions }
    }
    // Not enumerable: a storage a host or a test wraps with `{ ...storage, … }` keeps one bound for every call,
    // rather than the callers' calls bypassing the wrapper.
    return Object.defineProperty(storageBoundBy(bounded), 'forCallers', { value: storageBoundBy(forCaller), enumerable: false })
  }
}

/** `options.schema`, refused (`validation`) unless it is a name Outflow can quote and put in a channel name. */
function checkedSchemaName(schemaName: string): string {
  if (!schemaNamePattern.test(schemaName))
    throw new OutflowError('validation', `invalid Postgres schema name "${schemaName}": use lower-case letters, digits and _ (at most 50 characters)`, {
      data: { schema: 'must be lower-case letters, digits and _, starting with a letter or _' },
    })
  return schemaName
}

/** The engine's connection pool. */
function connectPool(connect: typeof PostgresJs, options: PostgresOptions, timeoutMs: number): PostgresJs.Sql {
  return connect(options.url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
    backoff: reconnectDelaySeconds,
    // The server stops work no caller waits for any more; operators see whose sessions these are.
    // UTC: timestamps come back as `…+00` whatever the server's own time zone.
    // force_custom_plan: the per-delivery statements are named prepared statements, and after five runs the
    // server may keep one generic plan for good, costed with the statistics of that moment. An engine starts on
    // empty tables, so that plan scans them (a results write read every delivery and compared each with every id
    // of its batch: half the end-to-end rate at 30,000 stored deliveries) until an ANALYZE happens to replan it.
    // A plan made for each run's values costs a few tens of µs of planning per batch statement.
    connection: { application_name: 'outflow', statement_timeout: timeoutMs, TimeZone: 'UTC', plan_cache_mode: 'force_custom_plan' },
  })
}

/** The shared queries' context over the pool, every call within `bound`. */
function sqlContext(db: Db, { tables, hotPath, workChannel }: { tables: Tables; hotPath: HotPath; workChannel: string }, bound: Bound): SqlContext {
  return {
    dialect: 'postgres',
    tables,
    hotPath,
    run: (fn) => bound(() => fn(db)),
    transaction: <T>(fn: (db: Db) => Promise<T>, { durable = true } = {}) => {
      // Set once the caller has been answered `unavailable`: from then on the transaction rolls back
      // instead of committing, so a call that failed on its deadline has changed nothing (unless the
      // deadline passed while the COMMIT itself was on its way).
      let expired = false
      const abandon = () => {
        if (expired) throw new AbandonedTransactionError()
      }
      return bound(
        () =>
          containedTransaction(
            (body: (tx: Db) => Promise<T>) => db.transaction((tx) => body(tx as unknown as Db)),
            async (tx) => {
              abandon()
              // Attempt results and leases may be lost on a crash (the delivery is attempted again), so they
              // need not wait for a WAL flush; publishes and directory changes always do.
              if (!durable) await tx.execute(sql`set local synchronous_commit = off`)
              const result = await fn(tx)
              abandon()
              return result
            },
          ),
        () => (expired = true),
      )
    },
    notifyWork: async (tx) => {
      await tx.execute(sql`select pg_notify(${workChannel}, '')`)
    },
  }
}

/** What publishing through a host's own transaction needs (see postgres-outbox.ts). */
function outboxContext(parts: { client: PostgresJs.Sql; tables: Tables; schemaName: string; commits: CommitWatch; bounded: Bound; forCaller: Bound }): OutboxContext {
  const { client, tables, bounded, forCaller } = parts
  // The database and server this engine's connections reach, to recognise a host's transaction on the same one.
  let identity: Promise<ServerIdentity> | undefined
  const serverIdentity = (refresh = false): Promise<ServerIdentity> => {
    if (refresh || !identity) {
      identity = bounded(() => client.unsafe(`select current_database(), ${serverStartedSql}`).values()).then(([row]) => ({ database: String(row![0]), started: String(row![1]) }))
      identity.catch(() => (identity = undefined))
    }
    return identity
  }
  // Read for a host's publish { tx }: a caller waits, so the caller's bound.
  const readTargets = targetsReader(tables, client as unknown as Driver)
  const targets = new PublishTargetCache((tenantIds) => forCaller(() => readTargets(tenantIds)))
  return { inserts: eventInserts(tables, outboxChecks(tables)), schema: parts.schemaName, serverIdentity, targets, commits: parts.commits }
}

/**
 * Take the pruners' session advisory lock `key` if no instance holds it: its release function, or null. A session
 * lock lives on one connection: one is reserved for as long as the pass holds it. If this process dies the
 * connection closes and another instance takes over.
 */
async function lockPruner(client: PostgresJs.Sql, key: number): Promise<(() => Promise<void>) | null> {
  const reserved = await client.reserve()
  try {
    const [row] = await reserved<{ locked: boolean }[]>`select pg_try_advisory_lock(${key}) as locked`
    if (row?.locked) return async () => void (await reserved`select pg_advisory_unlock(${key})`.finally(() => reserved.release()))
  } catch (err) {
    reserved.release()
    throw err
  }
  reserved.release()
  return null
}
