import { sql } from 'drizzle-orm'
import type PostgresJs from 'postgres'
import type { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { OutflowError } from '../errors.js'
import { importPeer, loadPeer } from '../load-peer.js'
import { migratePostgres, partitionPostgresHistory } from './postgres-migrate.js'
import { qualifiedPostgresTables, schemaNamePattern } from './schema/postgres.js'
import type { Db, HotPath, SqlContext, Tables } from './sql-context.js'
import { citusPublish, eventInserts, postgresHotPath } from './postgres-hot-path.js'
import type { Driver } from './postgres-prepared.js'
import { parseTimestamptz, timestamptzOid } from './postgres-timestamps.js'
import { containedTransaction, mapStorageError, reconnectDelaySeconds, withDeadline } from './postgres-faults.js'
import { CommitWatch, commitStatuses } from './postgres-commit-watch.js'
import { insertEventsInTransaction, outboxChecks, serverStartedSql, type OutboxContext, type ServerIdentity } from './postgres-outbox.js'
import { PublishTargetCache, targetsReader } from './postgres-publish-targets.js'
import { postgresQueue } from './postgres-queue.js'
import { checkedReplicaOptions, readingFromReplica, replicaLag, ReplicaRouter, type ReplicaOptions } from './postgres-replica.js'
import { checkedRoute, poolSettings, sessionConnection, type PostgresRoute } from './postgres-pooler.js'
import { partitionsKeeper } from './postgres-partitions-keeper.js'
import { planOnceUse, type PlanOnceLayout } from './postgres-plan-once.js'
import { hotStatements } from './postgres-hot-statements.js'
import { tenantClaims } from './postgres-tenant-claims.js'
import { deliveryLocks, shardGroups, type ShardGroups } from './postgres-citus.js'
import { citusRecordAttempts } from './postgres-citus-results.js'
import { createSqlStorage } from './sql-storage.js'
import type { Storage, StorageContext } from './storage.js'
import type { Logger } from '../logger.js'

export { postgresTables } from './schema/postgres.js'

/** The Postgres storage's server, pool, time bounds and schema, and a read replica (see ReplicaOptions). */
export interface PostgresOptions extends ReplicaOptions {
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
   * A direct connection to the same database (`postgres://…`, not through a pooler) for what needs a session of its
   * own: LISTEN for work published by other instances, the pruners' advisory lock, and `migrate()`. Required with
   * `pooler: 'transaction'`; without a pooler it is optional (the pool's connections do it). One connection for
   * LISTEN, one more while a pruning pass holds the lock.
   */
  listenUrl?: string
  /**
   * `'transaction'`: `url` is a pooler in transaction mode (PgBouncer `pool_mode = transaction`), which hands each
   * transaction to any server connection. The engine then uses unnamed statements (no named prepared statements),
   * sends statements one at a time per connection, runs transactions on a second pool of `max` connections to the
   * pooler, and passes only `application_name` and `TimeZone` at connect: set `statement_timeout` for the role or
   * database instead (docs/scaling.md › Through PgBouncer). Needs `listenUrl`. Leave it out for a session-mode pooler
   * or a direct connection.
   *
   * @example
   * postgres({ url: 'postgres://app@pgbouncer:6432/app', listenUrl: 'postgres://app@db:5432/app', pooler: 'transaction' })
   */
  pooler?: 'transaction'
  /**
   * Whether `migrate()` gives a new install (no event stored yet) the partitioned layout of the event log
   * (default false, opt-in while it costs publishes ~10 %): events, deliveries and attempts in daily partitions that
   * retention drops whole. An existing
   * install keeps its layout; both layouts work. See docs/operating.md#retention.
   */
  partitionHistory?: boolean
  /**
   * Claim due deliveries tenant by tenant (default false): each claim names the tenants it leases from, read from
   * a small table of tenants with due work that a trigger on deliveries keeps. What Citus needs (a row lock only in
   * a statement that names its tenants); on one Postgres it delivers at the rate of the global claim (see
   * docs/citus.md). Every engine on a database must use the same setting; `migrate()` sets the database up for it.
   */
  tenantClaims?: boolean
  /**
   * The database is a Citus coordinator (default false): `migrate()` distributes Outflow's tables by tenant
   * (co-located; `signing_keys` and `portal_codes` as reference tables), claims go tenant by tenant (as
   * `tenantClaims`), and what locks rows for several tenants runs once per shard group. Not with `partitionHistory`.
   * An idle engine looks for jobs and waiting FIFO deliveries less often (each look reads every shard). Tested on a
   * 3-node cluster, not measured at scale: docs/citus.md.
   */
  citus?: boolean
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
 * // Listings and metrics from a streaming replica (eventually consistent; see docs/scaling.md › Read replica):
 * postgres({ url: process.env.DATABASE_URL!, readUrl: process.env.DATABASE_REPLICA_URL })
 */
export function postgres(options: PostgresOptions): (context?: StorageContext) => Promise<Storage> {
  return async (context) => {
    const { schemaName, route, claimsByTenant } = checkedOptions(options)
    const { default: connect } = await loadPeer<{ default: typeof PostgresJs }>('postgres', 'Postgres storage')
    // drizzle's driver module imports postgres itself: loaded after it, so a missing driver is the error above.
    // importPeer: in the CommonJS build a dynamic import() fails in Jest's sandbox, so it is a require there.
    const { drizzle } = await importPeer<typeof import('drizzle-orm/postgres-js')>('drizzle-orm/postgres-js')
    const timeoutMs = options.timeoutMs ?? 10_000
    const { client, db, txDb, txClient, end } = connectPools(connect, drizzle, options, route, timeoutMs)
    const session = sessionConnection(connect, client, route, timeoutMs)
    // Connected on its first read: an engine starts while its replica is down (reads go to the primary meanwhile).
    // Behind a transaction pooler the replica's pool takes the pool's statement settings: it may be pooled too.
    const replica = options.readUrl ? openPool(connect, drizzle, { ...options, url: options.readUrl, max: options.readMax ?? options.max }, route, timeoutMs) : undefined
    const router = new ReplicaRouter(options.maxReplicaLagMs, context?.logger)
    const tables = qualifiedPostgresTables(schemaName)
    const workChannel = workChannelOf(schemaName)
    const bounded = boundBy(timeoutMs)
    const forCaller = boundBy(Math.min(options.requestTimeoutMs ?? 3_000, timeoutMs))
    const driver = client as unknown as Driver
    const statusesOf = commitStatuses(driver, workChannel)
    const commits = new CommitWatch((xacts) => bounded(() => statusesOf(xacts)))
    const shards = options.citus ? shardGroups(driver, schemaName) : undefined
    const outbox = outboxContext({ client, tables, schemaName, commits, bounded, forCaller, shards })
    const { partitions, hot, planned } = historyLayout({ client, txClient, schemaName, citus: Boolean(shards), logger: context?.logger }, bounded)
    const lifecycle: Lifecycle = {
      insertEventsInTransaction: (tx, tenantIds, plan) => insertEventsInTransaction(outbox, tx, tenantIds, plan),
      // On the direct connection: the migration lock is a session lock, and the migration's search_path a startup parameter.
      migrate: async () => {
        const layout = { partition: options.partitionHistory ?? false, tenantClaims: claimsByTenant, citus: options.citus ?? false }
        await migratePostgres(connect, drizzle, route.directUrl, schemaName, layout)
        await Promise.all([partitions.migrated(), planned.migrated()])
      },
      async close() {
        partitions.close()
        planned.close()
        commits.close()
        await Promise.all([end(), session.close(), replica?.client.end({ timeout: 5 })])
      },
      lockPruner: () => session.lockPruner(pruneLockKey + schemaLockOffset(schemaName)),
      onWork: (listener) => session.listen(workChannel, listener),
    }
    const hotPath = postgresHotPath(tables, shards, { publish: hot.publish, use: planned })
    const partitionHistory: Storage['partitionHistory'] = async (progress) =>
      options.citus ? Promise.reject(citusKeepsPlainHistory()) : partitionPostgresHistory(connect, route.directUrl, schemaName, progress, claimsByTenant).finally(() => partitions.migrated())
    // One pool, two bounds: the same calls, each with the per-delivery statements of postgres-queue.ts.
    const storageBoundBy = (bound: Bound): Storage => {
      const context = { ...sqlContext({ db, txDb }, { tables, hotPath, workChannel }, bound), settledDays: () => partitions.settledDays(bound), ...(shards && { deliveryLocks: deliveryLocks(tables, shards) }) }
      const shared = createSqlStorage(context, lifecycle)
      const perDelivery = perDeliveryCalls({ tables, driver, txClient, schemaName, shards, partitioned: partitions.partitioned, claimsByTenant, hot: { statements: hot, use: planned } }, shared, bound)
      const storage: Storage = { ...shared, ...perDelivery, prunePartitions: partitions.prune, partitionHistory, ...(shards && { readsEveryShard: true }) }
      if (!replica) return storage
      // Listings and metrics only: single statements, no transaction.
      const fromReplica = createSqlStorage({ ...sqlContext({ db: replica.db, txDb: replica.db }, { tables, hotPath, workChannel }, bound), settledDays: () => partitions.settledDays(bound) }, lifecycle)
      return readingFromReplica(storage, fromReplica, router, () => bound(() => replicaLag(replica.client)))
    }
    // Not enumerable: a storage a host or a test wraps with `{ ...storage, … }` keeps one bound for every call,
    // rather than the callers' calls bypassing the wrapper.
    return Object.defineProperty(storageBoundBy(bounded), 'forCallers', { value: storageBoundBy(forCaller), enumerable: false })
  }
}

/**
 * What depends on the layout of the event log: the partitioned layout's keeper (its DDL runs in transactions: on the
 * pool that may hold one, see connectPools), and which hot statements run through their plan-once functions once
 * migrate() has made them (postgres-plan-once.ts: all on the plain layout, the publish's on the partitioned one, none on Citus).
 */
function historyLayout(parts: { client: PostgresJs.Sql; txClient: PostgresJs.Sql; schemaName: string; citus: boolean; logger?: Logger }, bound: Bound) {
  const { client, txClient, schemaName, citus, logger } = parts
  const partitions = partitionsKeeper(txClient, schemaName, bound)
  const hot = hotStatements(schemaName)
  const layout = async (): Promise<PlanOnceLayout> => (citus ? 'other' : (await partitions.partitioned()) ? 'partitioned' : 'plain')
  return { partitions, hot, planned: planOnceUse(client, schemaName, Object.values(hot).map((s) => s.name), layout, bound, logger) }
}

/**
 * The calls the worker makes for every delivery, with the statements of postgres-queue.ts; claims per tenant
 * (`tenantClaims`, `citus`); on Citus, results written per shard group, and a lease renewal through the shared
 * writes' locks (SqlContext.deliveryLocks).
 */
function perDeliveryCalls(
  parts: {
    tables: Tables
    driver: Driver
    txClient: PostgresJs.Sql
    schemaName: string
    shards?: ShardGroups
    partitioned: () => Promise<boolean>
    claimsByTenant: boolean
    hot: Parameters<typeof postgresQueue>[4]
  },
  shared: Storage,
  bound: Bound,
): Pick<Storage, 'publishTargets' | 'claimDueDeliveries' | 'recordAttempts' | 'extendLeases'> {
  const { tables, driver, txClient, schemaName, shards } = parts
  const { publishTargets, recordAttempts, extendLeases, claimDueDeliveries } = postgresQueue(tables, driver, bound, parts.partitioned, parts.hot)
  const claims = parts.claimsByTenant ? tenantClaims(tables, driver, txClient, bound, schemaName) : claimDueDeliveries
  if (!shards) return { publishTargets, claimDueDeliveries: claims, recordAttempts, extendLeases }
  return { publishTargets, claimDueDeliveries: claims, recordAttempts: citusRecordAttempts(tables, shards, txClient, bound), extendLeases: shared.extendLeases }
}

const citusKeepsPlainHistory = () =>
  new OutflowError('validation', 'the citus option keeps the plain layout of the event log: leave partitionHistory out', { data: { partitionHistory: 'must be false with citus' } })

/** The options checked (a `validation` error for a wrong one), with what follows from them. */
function checkedOptions(options: PostgresOptions) {
  checkedReplicaOptions(options)
  if (options.citus && options.partitionHistory) throw citusKeepsPlainHistory()
  return { schemaName: checkedSchemaName(options.schema ?? 'public'), route: checkedRoute(options), claimsByTenant: (options.tenantClaims ?? false) || (options.citus ?? false) }
}

/** `options.schema`, refused (`validation`) unless it is a name Outflow can quote and put in a channel name. */
function checkedSchemaName(schemaName: string): string {
  if (!schemaNamePattern.test(schemaName))
    throw new OutflowError('validation', `invalid Postgres schema name "${schemaName}": use lower-case letters, digits and _ (at most 50 characters)`, {
      data: { schema: 'must be lower-case letters, digits and _, starting with a letter or _' },
    })
  return schemaName
}

/** A pool with its drizzle database (the primary's, or the replica's at `options.url`), for statements or for transactions (see poolSettings). */
function openPool(connect: typeof PostgresJs, drizzle: typeof drizzlePostgres, options: PostgresOptions, route: PostgresRoute, timeoutMs: number, purpose: 'statements' | 'transactions' = 'statements') {
  const client = connect(options.url, {
    max: options.max ?? 10,
    onnotice: () => {},
    connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
    backoff: reconnectDelaySeconds,
    ...poolSettings(route, timeoutMs, purpose),
  })
  const db = drizzle({ client }) as unknown as Db
  // After drizzle, which sets timestamptz to come as text and reads it with `new Date(text)`:
  // wrong for years 1–99 (see postgres-timestamps.ts). A Date from the parser is taken as it is.
  client.options.parsers[timestamptzOid] = parseTimestamptz
  return { client, db }
}

/**
 * The engine's connection pool (`client`, with drizzle over it: `db`), and the one its transactions run on (`txDb`):
 * the same pool, except through a transaction pooler, where transactions get a pool of their own (see poolSettings).
 */
function connectPools(connect: typeof PostgresJs, drizzle: typeof drizzlePostgres, options: PostgresOptions, route: PostgresRoute, timeoutMs: number) {
  const { client, db } = openPool(connect, drizzle, options, route, timeoutMs)
  const transactions = route.pooled ? openPool(connect, drizzle, options, route, timeoutMs, 'transactions') : undefined
  return {
    client,
    db,
    txDb: transactions?.db ?? db,
    txClient: transactions?.client ?? client,
    end: async () => void (await Promise.all([client.end({ timeout: 5 }), transactions?.client.end({ timeout: 5 })])),
  }
}

/** The shared queries' context over the pool, every call within `bound`. */
function sqlContext({ db, txDb }: { db: Db; txDb: Db }, { tables, hotPath, workChannel }: { tables: Tables; hotPath: HotPath; workChannel: string }, bound: Bound): SqlContext {
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
            (body: (tx: Db) => Promise<T>) => txDb.transaction((tx) => body(tx as unknown as Db)),
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
function outboxContext(parts: { client: PostgresJs.Sql; tables: Tables; schemaName: string; commits: CommitWatch; bounded: Bound; forCaller: Bound; shards?: ShardGroups }): OutboxContext {
  const { client, tables, bounded, forCaller, shards } = parts
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
  const readTargets = targetsReader(tables, client as unknown as Driver, shards !== undefined)
  const targets = new PublishTargetCache((tenantIds) => forCaller(() => readTargets(tenantIds)))
  const onShards = shards && citusPublish(tables, shards, outboxChecks(tables, true))
  return { inserts: onShards?.inserts ?? eventInserts(tables, outboxChecks(tables)), onShards, schema: parts.schemaName, serverIdentity, targets, commits: parts.commits }
}
