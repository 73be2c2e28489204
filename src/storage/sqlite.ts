import type BetterSqlite3 from 'better-sqlite3'
import { migrate } from 'drizzle-orm/better-sqlite3/migrator'
import { importPeer, loadPeer } from '../load-peer.js'
import { migrationsFolder } from './migrations-folder.js'
import * as schema from './schema/sqlite.js'
import type { Db, HotPath, SqlContext, Tables } from './sql-context.js'
import { createSqlStorage } from './sql-storage.js'
import { startCheckpointer } from './sqlite-checkpointer.js'
import { sqliteHotPath } from './sqlite-hot-path.js'
import { unavailable } from './faults.js'
import { sqliteHostConnection } from './sqlite-outbox.js'
import type { Storage } from './storage.js'

/** Where the SQLite storage keeps its database, and how it writes and waits. */
export interface SqliteOptions {
  /** A file path, or `:memory:`. */
  path: string
  /** `FULL` (default): a returned publish survives power loss. `NORMAL` trades that for speed. */
  synchronous?: 'FULL' | 'NORMAL'
  /** How long a statement waits for another process's write lock, ms (default 5000). */
  busyTimeoutMs?: number
}

/** SQLite's own checkpoint threshold, pages (~40 MiB): for `:memory:`, and if the checkpoint thread fails. */
const autocheckpointPages = 10_000

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
    const onDisk = options.path !== ':memory:' && options.path !== ''
    if (onDisk) client.pragma('journal_mode = WAL')
    // Checkpoint every ~40 MiB of WAL rather than 4: the queue rewrites the same pages, so fewer, larger
    // checkpoints copy (and fsync) far less. That is the fallback: a file's checkpoints run off the event loop.
    client.pragma(`wal_autocheckpoint = ${autocheckpointPages}`)
    const stopCheckpointer = onDisk ? startCheckpointer(client, options.path, autocheckpointPages) : async () => {}
    client.pragma(`synchronous = ${options.synchronous ?? 'FULL'}`)
    const busyTimeoutMs = options.busyTimeoutMs ?? 5000
    // Waits for another connection's write lock happen in retryBusy, asynchronously: SQLite's own busy
    // handler sleeps in the calling thread, which would stop every delivery of this process meanwhile.
    client.pragma('busy_timeout = 0')
    const db = drizzle({ client, schema })
    return createSqlStorage(sqliteContext(client, db as unknown as Db, options.synchronous ?? 'FULL', busyTimeoutMs), {
      path: options.path,
      async migrate() {
        // Synchronous, once at start: another process migrating at the same moment is waited for in the thread.
        client.pragma(`busy_timeout = ${busyTimeoutMs}`)
        try {
          migrate(db, { migrationsFolder: migrationsFolder('sqlite') })
        } finally {
          client.pragma('busy_timeout = 0')
        }
      },
      hostConnection: (hostDb) => sqliteHostConnection(hostDb, options.path),
      async close() {
        await stopCheckpointer()
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

function mapSqliteError(err: unknown): unknown {
  let error = err
  // drizzle's DrizzleQueryError carries the driver's error as its cause.
  for (let depth = 0; depth < 5 && error instanceof Error && !('code' in error) && error.cause !== undefined; depth++) error = error.cause
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' && unavailableCodes.test(code) ? unavailable(code, err) : err
}

const mapped = <T>(work: Promise<T>): Promise<T> =>
  work.catch((err: unknown) => {
    throw mapSqliteError(err)
  })

const isBusy = (err: unknown) => /^SQLITE_BUSY/.test(String((err as { code?: unknown } | null)?.code ?? (err as { cause?: { code?: unknown } } | null)?.cause?.code))

/**
 * Run `attempt` again while another connection holds the write lock (SQLITE_BUSY: nothing of it was
 * written), for up to `timeoutMs`, waiting with timers so the process goes on meanwhile: another process,
 * or the host's own connection holding a transaction open across awaits (see publishSync).
 */
async function retryBusy<T>(attempt: () => Promise<T>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (let delay = 1; ; delay = Math.min(delay * 2, 25)) {
    try {
      return await attempt()
    } catch (err) {
      if (!isBusy(err) || Date.now() >= deadline) throw err
    }
    await new Promise((resolve) => setTimeout(resolve, delay))
  }
}

/**
 * better-sqlite3 runs each statement synchronously on one connection, so async transaction bodies
 * are safe only if nothing else touches the connection meanwhile: every call goes through one mutex
 * (the approach of Kysely's SQLite driver) and transactions are plain BEGIN IMMEDIATE/COMMIT.
 */
function sqliteContext(client: BetterSqlite3.Database, db: Db, synchronous: 'FULL' | 'NORMAL', busyTimeoutMs: number): SqlContext {
  let tail: Promise<unknown> = Promise.resolve()
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const result = tail.then(fn)
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
    // Every statement of `run` is its own write (or a read): one that met the lock wrote nothing and can run again.
    run: (fn) => mapped(retryBusy(() => exclusive(() => fn(db)), busyTimeoutMs)),
    transaction: (fn, { durable = true } = {}) =>
      mapped(retryBusy(() => exclusive(async () => {
        // Begin in a macrotask of its own: the body only awaits statements of this connection (microtasks),
        // so the transaction ends within it and no code of the host runs while it holds the write lock. A
        // host's synchronous write on its own connection (publishSync) would otherwise meet the lock in a
        // promise continuation and wait for it in the thread, where the lock is never released.
        await new Promise((resolve) => setImmediate(resolve))
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
