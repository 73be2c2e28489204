import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PortalCodeRecord, Storage } from '../../src/storage/storage.js'
import { sqlStorages, type SqlDatabase } from '../support/sql-storages.js'

const t0 = new Date('2026-01-01T00:00:00.000Z')
const at = (ms: number) => new Date(t0.getTime() + ms)
const code = (hash: string, expiresMs: number, tenant = 'acme'): PortalCodeRecord => ({ code_hash: hash, tenant_id: tenant, tenant_created_at: at(-1000), expires_at: at(expiresMs) })

for (const kind of sqlStorages) {
  describe.runIf(kind.available)(`storage portal codes: ${kind.name}`, () => {
    let db: SqlDatabase
    let storage: Storage
    // A second storage on the same database (Postgres: another pool; SQLite: another connection to the file) stands for another engine instance.
    let second: Storage
    beforeAll(async () => {
      db = await kind.open()
      const open = db.storage as () => Promise<Storage>
      storage = await open()
      await storage.migrate()
      second = await open()
    })
    afterAll(async () => {
      await second?.close()
      await storage?.close()
      await db?.close()
    })

    it('returns a stored code once, with its tenant, creation time and expiry', async () => {
      await storage.insertPortalCode(code('h1', 300_000), at(0))
      expect(await storage.takePortalCode('h1')).toEqual(code('h1', 300_000))
      expect(await storage.takePortalCode('h1')).toBeNull()
      expect(await storage.takePortalCode('never-issued')).toBeNull()
    })

    it('gives a code to exactly one of many takers at once', async () => {
      await storage.insertPortalCode(code('h-race', 300_000), at(0))
      const taken = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 ? second : storage).takePortalCode('h-race')))
      expect(taken.filter(Boolean)).toHaveLength(1)
    })

    it('deletes codes that expired when a new one is stored, keeping the live ones', async () => {
      await storage.insertPortalCode(code('h-old', 1000), at(0))
      await storage.insertPortalCode(code('h-live', 600_000), at(0))
      await storage.insertPortalCode(code('h-new', 700_000), at(2000))
      expect(await storage.takePortalCode('h-old')).toBeNull()
      expect(await storage.takePortalCode('h-live')).not.toBeNull()
      expect(await storage.takePortalCode('h-new')).not.toBeNull()
    })

    it('returns an expired code that was not swept yet (the engine checks expiry)', async () => {
      await storage.insertPortalCode(code('h-expired', 10), at(0))
      expect((await storage.takePortalCode('h-expired'))?.expires_at).toEqual(at(10))
    })
  })
}
