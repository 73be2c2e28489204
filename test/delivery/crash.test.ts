import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import postgresClient from 'postgres'
import { afterAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { encryptionKey } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const child = join(import.meta.dirname, '../fixtures/crash-publisher.ts')

const kinds = [
  {
    name: 'sqlite file',
    available: true,
    async make() {
      const dir = mkdtempSync(join(tmpdir(), 'outflow-crash-'))
      const path = join(dir, 'crash.db')
      const count = async (table: string) => {
        const reader = new Database(path, { readonly: true })
        try {
          return reader.prepare(`select count(*) from ${table}`).pluck().get() as number
        } finally {
          reader.close()
        }
      }
      return { kind: 'sqlite', location: path, storage: sqlite({ path }), count, drop: async () => rmSync(dir, { recursive: true, force: true }) }
    },
  },
  {
    name: 'postgres',
    available: postgresAvailable,
    async make() {
      const db = await createTestDatabase()
      const count = async (table: string) => {
        const sql = postgresClient(db.url, { max: 1, onnotice: () => {} })
        try {
          const [row] = await sql.unsafe<{ n: number }[]>(`select count(*)::int as n from ${table}`)
          return row!.n
        } finally {
          await sql.end()
        }
      }
      return { kind: 'postgres', location: db.url, storage: postgres({ url: db.url }), count, drop: db.drop }
    },
  },
]

for (const k of kinds) {
  describe.runIf(k.available)(`crash recovery: ${k.name}`, () => {
    const cleanups: (() => Promise<void>)[] = []
    afterAll(async () => {
      for (const c of cleanups.reverse()) await c()
    })

    it('a publisher killed with SIGKILL mid-delivery loses nothing: a new engine delivers every event at least once', async () => {
      // A slow-ish receiver so the child is killed with most deliveries still to do.
      const receiver = await startReceiver(() => ({ delayMs: 5 }))
      cleanups.push(receiver.close)
      const db = await k.make()
      cleanups.push(db.drop)

      const proc = spawn(process.execPath, ['--import', 'tsx', child, db.kind, db.location, receiver.url, encryptionKey], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()))
      const exited = new Promise((resolve) => proc.on('exit', resolve))
      await waitFor(() => out.includes('published 2000') && receiver.on('/crash').length >= 50, 60_000, 'the child to publish and start delivering')
      proc.kill('SIGKILL')
      await exited
      const atKill = new Set(receiver.on('/crash').map((r) => r.headers['webhook-id'])).size
      expect(atKill).toBeLessThan(2000)

      const outflow = await createOutflow({
        storage: db.storage,
        encryptionKey,
        auth: false,
        allowPrivateNetworks: true,
        delivery: { concurrency: 16, leaseMs: 1500, pollIntervalMs: 100 },
      })
      cleanups.push(() => outflow.close())
      const ids = await waitFor(
        () => {
          const seen = new Set(receiver.on('/crash').map((r) => String(r.headers['webhook-id'])))
          return seen.size >= 2000 && seen
        },
        90_000,
        'every event delivered after the restart',
      )
      for (let i = 0; i < 2000; i++) expect(ids.has(`crash-${i}`)).toBe(true)
      const page = await outflow.listEvents('crash', { status: 'success', limit: 1000 })
      expect(page.models).toHaveLength(1000)
    }, 180_000)

    it('a host killed with SIGKILL right after committing orders with their events: the next engine delivers every one', async () => {
      const receiver = await startReceiver()
      cleanups.push(receiver.close)
      const db = await k.make()
      cleanups.push(db.drop)

      // The child's worker is off: nothing is delivered before the kill.
      const proc = spawn(process.execPath, ['--import', 'tsx', child, db.kind, db.location, receiver.url, encryptionKey, 'outbox'], { stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()))
      const exited = new Promise((resolve) => proc.on('exit', resolve))
      await waitFor(() => out.includes('committed 200'), 60_000, 'the child to commit its orders')
      proc.kill('SIGKILL')
      await exited
      expect(receiver.on('/crash')).toHaveLength(0)

      const outflow = await createOutflow({ storage: db.storage, encryptionKey, auth: false, allowPrivateNetworks: true, delivery: { pollIntervalMs: 100 } })
      cleanups.push(() => outflow.close())
      const ids = await waitFor(
        () => {
          const seen = new Set(receiver.on('/crash').map((r) => String(r.headers['webhook-id'])))
          return seen.size >= 200 && seen
        },
        60_000,
        'every committed event delivered after the restart',
      )
      expect([...ids].sort()).toEqual(Array.from({ length: 200 }, (_, n) => `crash-${n}`).sort())
      expect(await db.count('orders')).toBe(200)
    }, 120_000)
  })
}
