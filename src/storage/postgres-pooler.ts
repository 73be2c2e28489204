import type PostgresJs from 'postgres'
import { OutflowError } from '../errors.js'
import { reconnectDelaySeconds } from './postgres-faults.js'

// Postgres behind a transaction pooler (PgBouncer `pool_mode = transaction`): each transaction, or each statement
// outside one, runs on whichever server connection the pooler hands out. What needs a session of its own (LISTEN,
// session advisory locks, migrations) goes over `listenUrl`, a direct connection; the pool turns off what a
// pooler before PgBouncer 1.21 cannot carry from one transaction to the next.

/** Where the engine's connections go (see PostgresOptions `url`, `listenUrl`, `pooler`). */
export interface PostgresRoute {
  /** `url` is a transaction pooler. */
  pooled: boolean
  /** A direct connection for LISTEN, the pruners' lock and migrations; the pool's url when none is given. */
  directUrl: string
  /** `listenUrl` was given: session work gets connections of its own. */
  separate: boolean
}

/** The url, listenUrl and pooler options, checked: `validation` for a combination that cannot work. */
export function checkedRoute(options: { url: string; listenUrl?: string; pooler?: string }): PostgresRoute {
  const { url, listenUrl, pooler } = options
  if (pooler !== undefined && pooler !== 'transaction')
    throw invalid('pooler', `postgres({ pooler }) must be 'transaction' (got ${JSON.stringify(pooler)}); leave it out for a direct connection or a session-mode pooler`)
  if (listenUrl !== undefined && !isPostgresUrl(listenUrl))
    throw invalid('listenUrl', 'postgres({ listenUrl }) must be a postgres:// url of a direct connection to the database')
  if (pooler === 'transaction' && listenUrl === undefined)
    throw invalid(
      'listenUrl',
      "postgres({ pooler: 'transaction' }) needs listenUrl, a direct connection to the same database: a transaction pooler drops LISTEN and session advisory locks",
    )
  if (pooler === 'transaction' && sameServer(url, listenUrl!))
    throw invalid('listenUrl', 'postgres({ listenUrl }) must reach Postgres directly, not through the pooler at url')
  return { pooled: pooler === 'transaction', directUrl: listenUrl ?? url, separate: listenUrl !== undefined }
}

function invalid(field: string, message: string): OutflowError {
  return new OutflowError('validation', message, { data: { [field]: message } })
}

function isPostgresUrl(text: string): boolean {
  try {
    return ['postgres:', 'postgresql:'].includes(new URL(text).protocol)
  } catch {
    return false
  }
}

/** Both urls name the same host and port (a listenUrl equal to a pooler's url would be pooled too). */
function sameServer(a: string, b: string): boolean {
  try {
    const [x, y] = [new URL(a), new URL(b)]
    return x.hostname === y.hostname && (x.port || '5432') === (y.port || '5432')
  } catch {
    return a === b
  }
}

/** postgres.js settings that depend on the route (`max_pipeline` is a postgres.js option its types leave out). */
type PoolSettings = Pick<PostgresJs.Options<Record<string, never>>, 'connection' | 'prepare'> & { max_pipeline?: number }

/**
 * The postgres.js settings of an engine's pool that depend on the route: startup parameters, prepared statements and
 * pipelining. Through a transaction pooler the engine has two pools: `statements` for statements outside a
 * transaction, `transactions` for BEGIN … COMMIT.
 */
export function poolSettings(route: PostgresRoute, timeoutMs: number, purpose: 'statements' | 'transactions' = 'statements'): PoolSettings {
  // The server stops work no caller waits for any more; operators see whose sessions these are.
  // UTC: timestamps come back as `…+00` whatever the server's own time zone.
  const common = { application_name: 'outflow', TimeZone: 'UTC' }
  if (!route.pooled)
    return {
      // force_custom_plan: the engine's statements are named prepared statements, and after five runs the server
      // may keep one generic plan for good, costed with the statistics of that moment. An engine starts on empty
      // tables, so that plan scans them (a results write read every delivery and compared each with every id of
      // its batch: half the end-to-end rate at 30,000 stored deliveries) until an ANALYZE happens to replan it.
      // A plan made for each run's values costs planning on every run: at 500 events/s (pg_stat_statements with
      // track_planning, 2026-11-28) 2.5 ms per results write and 0.9 ms per publish, 0.44 of the 0.85 core the
      // server's backends used. With plan_cache_mode auto and the tables analyzed, planning went, but the generic
      // plans ran slower (results 3.7 ms instead of 0.9, publish 1.2 instead of 0.46). So the statements of every
      // publish and (on the plain layout) every batch run in functions that plan them once per connection, with
      // sequential and bitmap scans off (postgres-plan-once.ts); the rest is planned each run.
      connection: { ...common, statement_timeout: timeoutMs, plan_cache_mode: 'force_custom_plan' },
    }
  return {
    // PgBouncer refuses startup parameters it does not track (statement_timeout, plan_cache_mode) unless told to
    // ignore them: only application_name and TimeZone, which it sets on whichever server connection it hands out.
    // statement_timeout comes from the role or database settings (docs/scaling.md › Through PgBouncer); with
    // unnamed statements every run is planned for its values, so plan_cache_mode has nothing to do (the plan-once
    // functions set their own: the statement inside one is planned once per server connection).
    connection: common,
    // A named statement lives on one server connection; the next transaction may run on another.
    prepare: false,
    // postgres.js sends an unnamed statement with parameters as Parse/Describe/Flush, and Bind/Execute/Sync once it
    // is described. PgBouncer 1.18 keeps a server connection for as many ReadyForQuery as the client sent Syncs:
    // such a statement pipelined behind another is cut off from its server at the other's ReadyForQuery, and its
    // connection hangs. So statements outside a transaction go one at a time per connection. In a transaction the
    // server connection stays with the client, and postgres.js needs pipelining on to start one (its BEGIN reserves
    // the connection only when sent within max_pipeline): transactions have a pool of their own, as usual.
    ...(purpose === 'statements' ? { max_pipeline: 0 } : {}),
  }
}

/**
 * The engine's session-bound work: LISTEN for work and the pruners' session advisory lock. On the pool itself
 * unless `listenUrl` was given; then on a client of its own over it (postgres.js opens one connection for LISTEN,
 * one for the lock while a pass holds it).
 */
export function sessionConnection(connect: typeof PostgresJs, pool: PostgresJs.Sql, route: PostgresRoute, timeoutMs: number) {
  let direct: PostgresJs.Sql | undefined
  const session = (): PostgresJs.Sql =>
    route.separate
      ? (direct ??= connect(route.directUrl, {
          max: 1,
          onnotice: () => {},
          connect_timeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
          backoff: reconnectDelaySeconds,
          connection: { application_name: 'outflow', statement_timeout: timeoutMs },
        }))
      : pool
  let held = false
  return {
    async listen(channel: string, listener: () => void): Promise<() => Promise<void>> {
      // postgres.js listens again on a new connection when its connection closes; onlisten runs each time.
      const { unlisten } = await session().listen(channel, () => listener(), () => listener())
      return unlisten
    },
    /**
     * Take the pruners' session advisory lock `key` if no instance holds it: its release function, or null. A session
     * lock lives on one connection: one is reserved for as long as the pass holds it. If this process dies the
     * connection closes and another instance takes over.
     */
    async lockPruner(key: number): Promise<(() => Promise<void>) | null> {
      // This instance holds it already (another pass is running): no second connection for a lock it cannot get.
      if (held) return null
      const reserved = await session().reserve()
      try {
        const [row] = await reserved<{ locked: boolean }[]>`select pg_try_advisory_lock(${key}) as locked`
        if (row?.locked) {
          held = true
          return async () => void (await reserved`select pg_advisory_unlock(${key})`.finally(() => ((held = false), reserved.release())))
        }
      } catch (err) {
        reserved.release()
        throw err
      }
      reserved.release()
      return null
    },
    async close(): Promise<void> {
      await direct?.end({ timeout: 5 })
    },
  }
}
