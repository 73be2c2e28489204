// The faults of the scenarios (test/faults/scenarios.ts): each acts on the target's database or on the
// engine processes, marks its window, and resolves once it is over.
import Database from 'better-sqlite3'
import { closeSync, openSync, rmSync, statSync, truncateSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'postgres'
import { postgresOf, type FaultContext, type ReceiverMode } from './scenarios.js'

/** `pg_ctl restart -m fast` once. */
export const restart = async ({ target, mark }: FaultContext) => {
  mark('start')
  await postgresOf(target).cluster.restart()
  mark('end')
}

/** pg_terminate_backend of every session of the engines' database, every `everyMs` for `forMs`. */
export const terminateBackends =
  (everyMs: number, forMs: number) =>
  async ({ target, mark }: FaultContext) => {
    const { cluster, database } = postgresOf(target)
    const until = Date.now() + forMs
    while (Date.now() < until) {
      mark('start')
      await cluster.terminateBackends(database)
      mark('end')
      await sleep(everyMs)
    }
  }

/** SIGSTOP the postmaster and every backend for `forMs`, then SIGCONT. */
export const pause =
  (forMs: number) =>
  async ({ target, mark }: FaultContext) => {
    const { cluster } = postgresOf(target)
    mark('start')
    cluster.pause()
    await sleep(forMs)
    cluster.resume()
    mark('end')
  }

/** SIGKILL one of the engines (in turn) every `everyMs` for `forMs`, starting a new process in its place. */
export const killEngines =
  (everyMs: number, forMs: number) =>
  async ({ engines, replaceEngine, mark }: FaultContext) => {
    const until = Date.now() + forMs
    for (let i = 0; Date.now() < until; i++) {
      mark('start')
      await replaceEngine(i % engines.length)
      mark('end')
      await sleep(everyMs)
    }
  }

/**
 * Pool exhaustion on Postgres: a host's job (a bulk update, a migration) holds an EXCLUSIVE lock on the
 * `deliveries` table for `forMs`. Every engine statement that claims, leases, records or publishes
 * waits on it, so each connection of the engine's pool is taken by a waiting statement and every other
 * call, reads included, queues behind them.
 */
export const lockQueueTable =
  (forMs: number) =>
  async ({ target, mark }: FaultContext) => {
    const sql = pg(postgresOf(target).url, { max: 1, onnotice: () => {} })
    try {
      await sql.begin(async (tx) => {
        await tx`lock table deliveries in exclusive mode`
        mark('start')
        await sleep(forMs)
      })
      mark('end')
    } finally {
      await sql.end()
    }
  }

/**
 * The SQLite counterpart: another process (the host, a backup or an admin tool) holds the database's
 * write lock for `forMs`; every write of the engine meets SQLITE_BUSY.
 */
export const holdWriteLock =
  (forMs: number) =>
  async ({ target, mark }: FaultContext) => {
    const db = new Database(target.url)
    try {
      db.exec('BEGIN IMMEDIATE')
      mark('start')
      await sleep(forMs)
      db.exec('COMMIT')
      mark('end')
    } finally {
      db.close()
    }
  }

/** The receiver misbehaves for `forMs`: never answers (`hang`), or answers 200 after the attempt timed out. */
export const receiverFault =
  (mode: ReceiverMode, forMs: number) =>
  async ({ receiver, mark }: FaultContext) => {
    mark('start')
    receiver(mode)
    await sleep(forMs)
    receiver(undefined)
    mark('end')
  }

/** Fill the file system of `dir` with one file until it has no space left; returns the file to remove. */
export function fill(dir: string): string {
  const path = join(dir, 'filler')
  const fd = openSync(path, 'w')
  const chunk = Buffer.alloc(64 * 1024, 1)
  try {
    for (;;) writeSync(fd, chunk)
  } catch (err) {
    if ((err as { code?: string }).code !== 'ENOSPC') throw err
  } finally {
    closeSync(fd)
  }
  return path
}

/** How long a full disk waits at most for a publish to meet it. */
const diskFullMetWithinMs = 60_000

/**
 * SQLite on a small file system of its own (the caller mounts it): full for `forMs` and until a publish was
 * refused (503), then `returnBytes` of space return (all of it by default) — an operator who cleared some room,
 * not all. Writes go on into the pages the WAL already has while the disk is full, so on a busy machine that
 * publishes slowly `forMs` can pass before any write needs more room: the fault lasts until it was met.
 */
export const diskFull =
  (forMs: number, returnBytes?: number) =>
  async ({ target, mark, unavailableAnswers }: FaultContext) => {
    const filler = fill(dirname(target.url))
    mark('start')
    const start = Date.now()
    await sleep(forMs)
    while (unavailableAnswers() === 0 && Date.now() - start < diskFullMetWithinMs) await sleep(100)
    if (returnBytes === undefined) rmSync(filler)
    else truncateSync(filler, Math.max(0, statSync(filler).size - returnBytes))
    mark('end')
  }
