import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKeyring } from '../../src/credentials.js'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { Logger } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import type { Storage } from '../../src/storage/storage.js'
import { engineKinds, jwtSecret, rejection } from '../support/engines.js'
import { sealV1 } from '../support/legacy-credentials.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

const oldKey = 'rotation-old-key-0123456789abcdef'
const newKey = 'rotation-new-key-0123456789abcdef'
const secret = (n: number) => `whsec_${Buffer.alloc(32, n).toString('base64')}`

/** Logger that keeps warnings, so a test can check what the engine announced. */
function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = []
  return { warnings, debug: () => {}, info: () => {}, warn: (fields, m) => warnings.push(`${m} ${JSON.stringify(fields)}`), error: () => {} }
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`credentials at rest: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      receiver = await startReceiver()
      outflow = await kind.create()
      await outflow.upsertTenant('acme', {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('encrypts credentials by default (enc:v2, never the secret in the row)', async () => {
      const d = await outflow.createDestination('acme', { type: 'webhook', topics: ['default'], config: { url: `${receiver.url}/default` }, credentials: { secret: secret(1) } })
      const stored = (await outflow.storage.getDestination('acme', d.id))!.credentials
      expect(stored).toMatch(/^enc:v2:/)
      expect(stored).not.toContain(secret(1).slice(6))
      expect((await outflow.getDestination('acme', d.id)).credentials.secret).toBe(secret(1))
    })

    it('does not deliver with credentials copied from another destination: the attempt fails as a configuration error', async () => {
      const a = await outflow.createDestination('acme', { id: 'swap-a', type: 'webhook', topics: ['swap.a'], config: { url: `${receiver.url}/swap-a` }, credentials: { secret: secret(2) } })
      const b = await outflow.createDestination('acme', { id: 'swap-b', type: 'webhook', topics: ['swap.b'], config: { url: `${receiver.url}/swap-b` }, credentials: { secret: secret(3) } })
      // What someone with write access to the table could do: put A's ciphertext on B's row.
      const rowA = (await outflow.storage.getDestination('acme', a.id))!
      const rowB = (await outflow.storage.getDestination('acme', b.id))!
      expect(await outflow.storage.updateDestination({ ...rowB, credentials: rowA.credentials }, rowB.updated_at)).toBe('updated')

      const { id } = await outflow.publish({ tenant_id: 'acme', topic: 'swap.b', data: { n: 1 } })
      // The event is listed from its first attempt on (404 before).
      const attempt = await waitFor(async () => (await outflow.listDeliveries('acme', id).catch(() => [])).find((a) => a.destination_id === 'swap-b'))
      expect(attempt).toMatchObject({ destination_id: 'swap-b', status: 'failed', error_kind: 'configuration' })
      expect(receiver.on('/swap-b')).toEqual([])
      await expect(outflow.getDestination('acme', b.id)).rejects.toThrow(/do not authenticate/)
    })

    it('rotates keys: old keys decrypt, re-encrypt moves every row (v2, enc:v1, plain JSON) to the newest key in batches', async () => {
      const storage = await kind.openStorage()
      const first = await kind.create({ storage, encryptionKey: oldKey, delivery: { worker: false } })
      await first.upsertTenant('rot', {})
      const webhook = (id: string, n: number) => ({ id, type: 'webhook', topics: '*', config: { url: 'https://example.com/hook' }, credentials: { secret: secret(n) } })
      for (const n of [1, 2, 3]) await first.createDestination('rot', webhook(`d${n}`, n))
      // Rows as earlier releases wrote them.
      for (const [id, credentials] of [['legacy-v1', sealV1({ secret: secret(4) }, oldKey)], ['legacy-plain', JSON.stringify({ secret: secret(5) })]] as const) {
        const created = await first.createDestination('rot', webhook(id, 9))
        const row = (await storage.getDestination('rot', created.id))!
        await storage.updateDestination({ ...row, credentials }, row.updated_at)
      }
      // And one that cannot be read: d1's ciphertext on another row.
      const tampered = await first.createDestination('rot', webhook('tampered', 6))
      const tamperedRow = (await storage.getDestination('rot', tampered.id))!
      await storage.updateDestination({ ...tamperedRow, credentials: (await storage.getDestination('rot', 'd1'))!.credentials }, tamperedRow.updated_at)

      // Quiet: re-encrypt logs the row it cannot read as an error.
      const logger = recordingLogger()
      const rotated = await kind.create({ storage, encryptionKey: newKey, previousEncryptionKeys: [oldKey], logger, delivery: { worker: false } })
      const expected = { d1: 1, d2: 2, d3: 3, 'legacy-v1': 4, 'legacy-plain': 5 }
      for (const [id, n] of Object.entries(expected)) expect((await rotated.getDestination('rot', id)).credentials.secret).toBe(secret(n))
      const before = await rows(storage)

      expect(await rotated.reencryptCredentials({ batchSize: 2 })).toEqual({ scanned: 6, reencrypted: 5, failed: 1, signing_keys: { scanned: 1, reencrypted: 1, failed: 0 } })
      const after = await rows(storage)
      const newId = createKeyring([newKey]).current.id
      for (const id of Object.keys(expected)) expect(after.get(id)).toMatch(new RegExp(`^enc:v2:${newId}:`))
      expect(after.get('tampered')).toBe(before.get('tampered'))
      // The newest key alone now reads every row; a second run has nothing to do.
      const onlyNew = await kind.create({ storage, encryptionKey: newKey, logger, delivery: { worker: false } })
      for (const [id, n] of Object.entries(expected)) expect((await onlyNew.getDestination('rot', id)).credentials.secret).toBe(secret(n))
      expect(await onlyNew.reencryptCredentials()).toEqual({ scanned: 6, reencrypted: 0, failed: 1, signing_keys: { scanned: 1, reencrypted: 0, failed: 0 } })
    })
  })
}

/** Stored credentials by destination id. */
async function rows(storage: Storage): Promise<Map<string, string>> {
  return new Map((await storage.scanCredentials(undefined, 1000)).map((r) => [r.id, r.credentials]))
}

describe('credentials key file: sqlite file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-keyfile-'))
  const path = join(dir, 'outflow.db')
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('generates a key in <database>.key (mode 0600) without an encryptionKey, and reuses it on restart', async () => {
    const logger = recordingLogger()
    const first = await createOutflow({ storage: sqlite({ path }), auth: false, jwtSecret, logger, delivery: { worker: false } })
    await first.upsertTenant('acme', {})
    const d = await first.createDestination('acme', { type: 'amqp_broker', topics: '*', config: { server_url: 'localhost:5672' }, credentials: { username: 'u', password: 'broker-password' } })
    expect((await first.storage.getDestination('acme', d.id))!.credentials).toMatch(/^enc:v2:/)
    await first.close()
    expect(existsSync(`${path}.key`)).toBe(true)
    expect(statSync(`${path}.key`).mode & 0o777).toBe(0o600)
    expect(logger.warnings.join('\n')).toContain(`${path}.key`)
    const key = readFileSync(`${path}.key`, 'utf8')

    const again = await createOutflow({ storage: sqlite({ path }), auth: false, jwtSecret, delivery: { worker: false } })
    try {
      expect((await again.getDestination('acme', d.id)).credentials).toEqual({ username: 'u', password: 'brok****' })
      expect(await again.reencryptCredentials()).toEqual({ scanned: 1, reencrypted: 0, failed: 0, signing_keys: { scanned: 1, reencrypted: 0, failed: 0 } })
    } finally {
      await again.close()
    }
    expect(readFileSync(`${path}.key`, 'utf8')).toBe(key)
  })
})

describe.runIf(postgresAvailable)('credentials key: postgres', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(() => db.drop())

  it('refuses to start without an encryptionKey', async () => {
    const err = await rejection(createOutflow({ storage: postgres({ url: db.url }), auth: false, jwtSecret }))
    expect(err.status).toBe(422)
    expect(err.message).toMatch(/encryptionKey/)
    expect(err.data).toHaveProperty(['encryptionKey'])
  })

  it('starts with insecurePlaintextCredentials: true, saying so, and stores plain JSON', async () => {
    const logger = recordingLogger()
    const outflow = await createOutflow({ storage: postgres({ url: db.url }), auth: false, jwtSecret, insecurePlaintextCredentials: true, logger, delivery: { worker: false } })
    try {
      expect(logger.warnings.join('\n')).toMatch(/insecurePlaintextCredentials/)
      await outflow.upsertTenant('dev', {})
      const d = await outflow.createDestination('dev', { type: 'relay', topics: '*', credentials: { token: 'relay-token-123' } })
      expect(JSON.parse((await outflow.storage.getDestination('dev', d.id))!.credentials)).toEqual({ token: 'relay-token-123' })
    } finally {
      await outflow.close()
    }
  })
})
