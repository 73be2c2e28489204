import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { sqlite } from '../../src/storage/sqlite.js'

const dir = mkdtempSync(join(tmpdir(), 'outflow-checkpoint-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

describe('sqlite: WAL checkpoints off the event loop', () => {
  it('copies committed pages into the database file from a worker thread, although the engine connection never checkpoints', async () => {
    const path = join(dir, 'checkpoint.db')
    const outflow = await createOutflow({ storage: sqlite({ path }), apiKey: 'k'.repeat(24), delivery: { worker: false } })
    try {
      await outflow.upsertTenant('t1')
      const before = statSync(path).size
      // ~6 MiB of events: under SQLite's own 40 MiB checkpoint threshold, so only the worker moves them.
      const blob = 'x'.repeat(20_000)
      for (let batch = 0; batch < 3; batch++)
        await outflow.publishMany(Array.from({ length: 100 }, (_, i) => ({ tenant_id: 't1', id: `e${batch}-${i}`, topic: 'order.created', data: { blob } })))
      await until(() => statSync(path).size >= before + 6_000_000, 'the database file to take in the WAL')
      expect(statSync(path).size).toBeGreaterThanOrEqual(before + 6_000_000)
    } finally {
      await outflow.close()
    }
    // The last connection to close (the engine's, after the worker's) folds the WAL away.
    expect(existsSync(`${path}-wal`)).toBe(false)
    const check = new Database(path, { readonly: true })
    expect((check.prepare('select count(*) as n from events').get() as { n: number }).n).toBe(300)
    check.close()
  })
})
