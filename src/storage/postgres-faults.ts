import { OutflowError } from '../errors.js'
import { unavailable } from './faults.js'

// What the Postgres storage does when the database goes away (restart, killed backend, network cut)
// or stops answering (paused, overloaded): callers get a typed `unavailable` error within a bound,
// and one dead connection never takes the process down.

/**
 * postgres.js codes for a connection that is gone or could not be made, and the socket errors under
 * them. Codes of an error the server sent come as SQLSTATE (below).
 */
const lostConnectionCodes = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_DESTROYED',
  'CONNECTION_ENDED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
])

/**
 * SQLSTATEs of a server that is going away or cannot take the session: class 08 (connection exception),
 * 57P01 admin_shutdown (fast shutdown, pg_terminate_backend), 57P02 crash_shutdown, 57P03
 * cannot_connect_now (starting up or shutting down), 53300 too_many_connections. And 57014 query_canceled:
 * the server's statement_timeout, which is the storage's timeoutMs, fired before the caller's own deadline
 * (a busy event loop runs that timer late); either way the statement did not finish in time.
 */
const unavailableSqlStates = /^(08...|57P0[123]|53300|57014)$/

/** The driver's error under drizzle's `DrizzleQueryError` (which names the query and parameters). */
function driverError(err: unknown): unknown {
  let error = err
  for (let depth = 0; depth < 5 && error instanceof Error && error.cause !== undefined && 'query' in error && 'params' in error; depth++) error = error.cause
  return error
}

/** The error's SQLSTATE or postgres.js code, under drizzle's wrapper. */
export function codeOf(err: unknown): string | undefined {
  const code = (driverError(err) as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

/** The error means Postgres is unreachable or going away: the same call may succeed a moment later. */
export function isUnavailable(err: unknown): boolean {
  if (err instanceof OutflowError) return err.code === 'unavailable'
  const code = codeOf(err)
  return code !== undefined && (lostConnectionCodes.has(code) || unavailableSqlStates.test(code))
}

/** Connection faults become `unavailable`; any other error passes through unchanged. */
export function mapStorageError(err: unknown): unknown {
  if (err instanceof OutflowError || !isUnavailable(err)) return err
  return unavailable(codeOf(err) ?? 'connection lost', err)
}

/**
 * `work`, failing with `unavailable` if Postgres has not answered within `timeoutMs`. A paused or
 * unreachable server leaves a query waiting on its connection with nothing to cancel it (a cancel
 * request needs the server too): the caller stops waiting, and the query finishes or fails on its
 * own once the server answers again. So a single statement that timed out may still have been
 * applied; `onExpired` lets a transaction roll back instead (see postgres.ts).
 */
export function withDeadline<T>(work: PromiseLike<T>, timeoutMs: number, onExpired?: () => void): Promise<T> {
  // A drizzle query is a thenable that runs again on every `then`: subscribe exactly once.
  const result = Promise.resolve(work)
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onExpired?.()
      reject(unavailable(`no answer within ${timeoutMs} ms`))
    }, timeoutMs)
  })
  // The work may settle after the deadline: its failure then has no one to report to.
  result.catch(() => undefined)
  return Promise.race([result, deadline]).finally(() => clearTimeout(timer))
}

/**
 * How long a closed connection waits before reconnecting, in seconds (postgres.js `backoff`), after
 * `retries` closes with an error in a row. The driver's default grows as 3^retries / 100 up to 20 s, and
 * every connection killed with an error counts: after a few backend kills or a restart, connections
 * stay closed for seconds after the server is back, and every query meanwhile waits for its deadline.
 * Here it doubles from 50 ms and is capped at 1 s (with jitter): a handful of connection attempts per
 * second and pool at most, and service resumes within a second of the server.
 */
export function reconnectDelaySeconds(retries: number): number {
  return Math.min(0.05 * 2 ** retries, 1) * (0.5 + Math.random() / 2)
}

/** How long a transaction body that failed on a lost connection waits to see the transaction itself fail. */
const closeNoticeMs = 2_000

/**
 * Run `body` as postgres.js `begin()`'s callback such that nothing is ever written on the transaction's
 * connection after that connection closed.
 *
 * postgres.js 3.4.x pins a transaction to one connection. When the connection closes mid-transaction
 * (backend terminated, server restarted) the driver rejects the statement in flight, and `begin()`
 * answers the rejection by sending ROLLBACK on the same connection, whose socket is gone: the write is
 * deferred to a setImmediate that dereferences the null socket, an uncaught TypeError that no caller
 * can catch, and the process dies (porsager/postgres #1066, #1154, #1208; fix proposed in PR #1168).
 * A COMMIT or a next statement after the close would do the same.
 *
 * `begin()` also rejects by itself as soon as its connection closes. So when the body fails on a lost
 * connection, its settlement is held back until `begin()` has rejected: then the body never settles,
 * and the driver never writes ROLLBACK (the server already ended the transaction with the session;
 * the pending promise is garbage once nothing refers to it). If `begin()` has not rejected within
 * `closeNoticeMs`, the connection is alive after all and the error goes to `begin()` as usual.
 *
 * Bodies must only await statements on their transaction (no timers, no other I/O) so the connection
 * cannot close unnoticed between two statements.
 */
export function containedTransaction<Tx, T>(begin: (body: (tx: Tx) => Promise<T>) => Promise<T>, body: (tx: Tx) => Promise<T>): Promise<T> {
  let ended = false
  let noticeEnd: () => void = () => undefined
  const endedNotice = new Promise<void>((resolve) => (noticeEnd = resolve))
  const transaction = begin(async (tx) => {
    try {
      return await body(tx)
    } catch (err) {
      if (!isUnavailable(err)) throw err
      let timer: NodeJS.Timeout | undefined
      await Promise.race([endedNotice, new Promise<void>((resolve) => (timer = setTimeout(resolve, closeNoticeMs)))])
      clearTimeout(timer)
      if (ended) return new Promise<never>(() => undefined)
      throw err
    }
  })
  const settle = () => {
    ended = true
    noticeEnd()
  }
  transaction.then(settle, settle)
  return transaction
}
