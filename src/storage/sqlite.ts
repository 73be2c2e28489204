import type BetterSqlite3 from 'better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import { importPeer, loadPeer } from '../load-peer.js'
import { migrationsFolder } from './migrations-folder.js'
import * as schema from './schema/sqlite.js'
import type { Db, HotPath, SqlContext, Tables } from './sql-context.js'
import { createSqlStorage } from './sql-storage.js'
import { sqliteHotPath } from './sqlite-hot-path.js'
import { setTimeout as sleep } from 'node:timers/promises'
import { unavailable } from './faults.js'
import type { Storage } from './storage.js'

export interface SqliteOptions {
  /** A file path, or `:memory:`. */
  path: string
  /** `FULL` (default): a returned publish survives power loss. `NORMAL` trades that for speed. */
  synchronous?: 'FULL' | 'NORMAL'
  /** How long a statement waits for another process's write lock, ms (default 5000). */
  busyTimeoutMs?: number
}

/**
 * SQLite storage on better-sqlite3: one connection, WAL, one writer.
 *
 * @example
 * const outflow = await createOutflow({ storage: sqlite({ path: './outflow.db' }) })
 */
export function sqlite(options: SqliteOptions): () => Promise<Storage> {
  return async () => {
    const { default: Database } = await loadPeer<{ default: typeof BetterSqlite3 }>('better-sqlite3', 'SQLite storage')
    // drizzle's driver module imports better-sqlite3 itself: loaded after it, so a missing driver is the error above.
    // importPeer: in the CommonJS build a dynamic import() fails in Jest's sandbox, so it is a require there.
    const { drizzle } = await importPeer<typeof import('drizzle-orm/better-sqlite3')>('drizzle-orm/better-sqlite3')
    const client = new Database(options.path)
    if (options.path !== ':memory:') client.pragma('journal_mode = WAL')
    // Checkpoint every ~40 MiB of WAL rather than 4: the queue rewrites the same pages, so fewer, larger
    // checkpoints copy (and fsync) far less.
    client.pragma('wal_autocheckpoint = 10000')
    client.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`)
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000
    // SQLite's own wait for a lock sleeps inside the call, which here blocks the event loop: every request
    // of the process would stand still while another process writes. Calls fail at once instead and
    // wait asynchronously (sqliteContext), up to busyTimeoutMs.
    client.pragma('busy_timeout = 0')
    const db = drizzle({ client, schema })
    return createSqlStorage(sqliteContext(client, db as unknown as Db, options.synchronous ?? 'FULL', busyTimeoutMs), {
      path: options.path,
      async migrate() {
        // Once, at start-up: blocking on another process's lock is acceptable here.
        client.pragma(`busy_timeout = ${busyTimeoutMs}`)
        try {
          migrate(db, { migrationsFolder: migrationsFolder('sqlite') })
        } finally {
          client.pragma('busy_timeout = 0')
        }
      },
      async close() {
        client.close()
      },
    })
  }
}

/**
 * SQLite result codes of a database that cannot take the call right now (disk full, file system
 * read-only or failing, another process holding the write lock past busyTimeoutMs): `unavailable`,
 * HTTP 503. The transaction was rolled back, so nothing of the call was written.
 */
const unavailableCodes = /^SQLITE_(FULL|IOERR|READONLY|BUSY|CANTOPEN|PROTOCOL|NOMEM)/

function sqliteCode(err: unknown): string | undefined {
  let error = err
  // drizzle's DrizzleQueryError carries the driver's error as its cause.
  for (let depth = 0; depth < 5 && error instanceof Error && !('code' in error) && error.cause !== undefined; depth++) error = error.cause
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' ? code : undefined
}

function mapSqliteError(err: unknown): unknown {
  const code = sqliteCode(err)
  return code !== undefined && unavailableCodes.test(code) ? unavailable(code, err) : err
}

const mapped = <T>(work: Promise<T>): Promise<T> =>
  work.catch((err: unknown) => {
    throw mapSqliteError(err)
  })

/**
 * `attempt` again while another process holds the lock it needs (SQLITE_BUSY), waiting asynchronously
 * between tries (5 ms, doubling up to 100 ms) until `busyTimeoutMs` after the call began; then the
 * BUSY error stands (`unavailable`). A failed try changed nothing: BEGIN IMMEDIATE did not begin, and a
 * statement outside a transaction is atomic (run() bodies that write are one statement).
 */
async function whenUnlocked<T>(attempt: () => Promise<T>, busyTimeoutMs: number): Promise<T> {
  const deadline = Date.now() + busyTimeoutMs
  for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
    try {
      return await attempt()
    } catch (err) {
      if (!sqliteCode(err)?.startsWith('SQLITE_BUSY') || Date.now() + wait > deadline) throw err
      await sleep(wait)
    }
  }
}

/**
 * Space the WAL holds, given back when the disk is full. Between two automatic checkpoints the WAL grows
 * to about 40 MiB (wal_autocheckpoint), so on a disk with less free space than that it is the WAL that
 * fills it, and the checkpoint that would free it never comes: the engine stayed on SQLITE_FULL after
 * space had returned (fault scenario 9 under load). After a write fails for want of space, each call
 * checkpoints and truncates the WAL until that succeeds (it needs room for pages the database file
 * does not have yet, so it may only succeed once some space returned), and from then on the WAL is
 * checkpointed at SQLite's default size (4 MiB) so that it cannot take the room again.
 */
function walReclaimer(client: BetterSqlite3.Database) {
  let pending = false
  let shortened = false
  const checkpoint = () => {
    if (client.inTransaction) return
    try {
      const [result] = client.pragma('wal_checkpoint(TRUNCATE)') as { busy: number }[]
      if (result?.busy === 0) pending = false
    } catch {
      // Still no room (or the file system still failing): the next call tries again.
    }
  }
  return {
    afterSuccess: () => void (pending && checkpoint()),
    afterFailure(code: string | undefined) {
      if (!code || !/^SQLITE_(FULL|IOERR)/.test(code)) return
      pending = true
      if (!shortened) {
        client.pragma('wal_autocheckpoint = 1000')
        shortened = true
      }
      checkpoint()
    },
  }
}

/**
 * better-sqlite3 runs each statement synchronously on one connection, so async transaction bodies
 * are safe only if nothing else touches the connection meanwhile: every call goes through one mutex
 * (the approach of Kysely's SQLite driver) and transactions are plain BEGIN IMMEDIATE/COMMIT. A call
 * that meets another process's lock waits outside the mutex, so reads (which WAL never blocks) go on.
 */
function sqliteContext(client: BetterSqlite3.Database, db: Db, synchronous: 'FULL' | 'NORMAL', busyTimeoutMs: number): SqlContext {
  let tail: Promise<unknown> = Promise.resolve()
  const reclaim = walReclaimer(client)
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const result = tail.then(async () => {
      try {
        const value = await fn()
        reclaim.afterSuccess()
        return value
      } catch (err) {
        reclaim.afterFailure(sqliteCode(err))
        throw err
      }
    })
    tail = result.catch(() => undefined)
    return result
  }
  let hotPath: HotPath | undefined
  return {
    dialect: 'sqlite',
    tables: schema as unknown as Tables,
    // Prepared on first use: statements need their tables, which exist only after migrating.
    get hotPath() {
      return (hotPath ??= sqliteHotPath(client))
    },
    run: (fn) => mapped(whenUnlocked(() => exclusive(() => fn(db)), busyTimeoutMs)),
    transaction: (fn, { durable = true } = {}) =>
      mapped(whenUnlocked(() => exclusive(async () => {
        // In WAL mode NORMAL skips the fsync at commit but never risks consistency; a later FULL
        // commit (the next publish) makes these writes durable too.
        const relax = !durable && synchronous === 'FULL'
        if (relax) client.pragma('synchronous = NORMAL')
        client.exec('BEGIN IMMEDIATE')
        try {
          const result = await fn(db)
          client.exec('COMMIT')
          return result
        } catch (err) {
          if (client.inTransaction) client.exec('ROLLBACK')
          throw err
        } finally {
          if (relax) client.pragma('synchronous = FULL')
        }
      }), busyTimeoutMs)),
  }
}
