import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type BetterSqlite3 from 'better-sqlite3'

/** How often the checkpointer copies the WAL into the database file, ms. */
const intervalMs = 200

// The worker's own connection: a PASSIVE checkpoint never waits for, nor blocks, the engine's writer.
// Eval'd source rather than a file of its own, so both builds (ESM and CommonJS) run it unchanged.
const workerSource = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.path)
db.pragma('busy_timeout = 1000')
const timer = setInterval(() => {
  try { db.pragma('wal_checkpoint(PASSIVE)') } catch { /* busy or gone: the next tick tries again */ }
}, workerData.intervalMs)
parentPort.on('message', () => {
  clearInterval(timer)
  try { db.pragma('wal_checkpoint(PASSIVE)') } finally { db.close(); parentPort.close() }
})
`

/**
 * Checkpoints a WAL-mode SQLite file on a worker thread. SQLite's automatic checkpoint runs inside
 * whichever commit crosses the threshold, on the event loop: copying and fsyncing 40 MiB of WAL
 * stalled every request for ~280 ms while the pruner deleted a million rows. Here the engine's
 * connection never checkpoints; a second connection on a worker thread does it every 200 ms. If the
 * worker fails, the engine's connection goes back to checkpointing itself.
 *
 * @example
 * const stop = startCheckpointer(client, './outflow.db', 10_000)
 * await stop() // before client.close()
 */
export function startCheckpointer(client: BetterSqlite3.Database, path: string, fallbackPages: number): () => Promise<void> {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  client.pragma('wal_autocheckpoint = 0')
  const worker = new Worker(workerSource, { eval: true, workerData: { driver, path, intervalMs } })
  worker.unref()
  let failed = false
  worker.on('error', () => {
    failed = true
    if (client.open) client.pragma(`wal_autocheckpoint = ${fallbackPages}`)
  })
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()))
  return async () => {
    // Held while it closes: an unref'd worker would let the process exit with close() still pending.
    worker.ref()
    if (!failed) worker.postMessage('close')
    await exited
  }
}
