import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createKeyring } from '../../src/credentials.js'
import { createOutflow } from '../../src/create-outflow.js'
import { sqlite } from '../../src/storage/sqlite.js'

const root = join(import.meta.dirname, '../..')
const oldKey = 'script-old-key-0123456789abcdef'
const newKey = 'script-new-key-0123456789abcdef'

describe('npm run reencrypt (scripts/reencrypt.ts)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-reencrypt-'))
  const path = join(dir, 'outflow.db')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('moves the rows of the database in the environment to OUTFLOW_ENCRYPTION_KEY and prints the counts', async () => {
    const before = await createOutflow({ storage: sqlite({ path }), auth: false, encryptionKey: oldKey, delivery: { worker: false } })
    await before.upsertTenant('acme', {})
    const d = await before.createDestination('acme', { type: 'relay', topics: '*', credentials: { token: 'relay-token-123' } })
    await before.close()

    const proc = spawn(process.execPath, ['--import', 'tsx', 'scripts/reencrypt.ts'], {
      cwd: root,
      env: { ...process.env, DATABASE_URL: '', OUTFLOW_DB: path, OUTFLOW_ENCRYPTION_KEY: newKey, OUTFLOW_PREVIOUS_ENCRYPTION_KEYS: `unused-key-0123456789abcdef, ${oldKey}` },
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    let out = ''
    proc.stdout.on('data', (c: Buffer) => (out += c.toString()))
    const code = await new Promise((resolve) => proc.on('exit', resolve))
    expect(code).toBe(0)
    expect(JSON.parse(out.trim().split('\n').pop()!)).toEqual({ scanned: 1, reencrypted: 1, failed: 0, signing_keys: { scanned: 1, reencrypted: 1, failed: 0 } })

    const after = await createOutflow({ storage: sqlite({ path }), auth: false, encryptionKey: newKey, delivery: { worker: false } })
    try {
      expect((await after.storage.getDestination('acme', d.id))!.credentials.startsWith(`enc:v2:${createKeyring([newKey]).current.id}:`)).toBe(true)
      expect((await after.getDestination('acme', d.id)).credentials).toEqual({ token: 'rela****' })
    } finally {
      await after.close()
    }
  }, 90_000)
})
