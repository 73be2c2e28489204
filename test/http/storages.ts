import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import type { Storage } from '../../src/storage/storage.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

/** A storage the HTTP suite runs on: a fresh, empty database per suite. */
export interface StorageCase {
  name: 'sqlite' | 'postgres'
  available: boolean
  create: () => Promise<{ storage: () => Promise<Storage>; drop: () => Promise<void> }>
}

export const sqliteStorage: StorageCase = {
  name: 'sqlite',
  available: true,
  create: async () => ({ storage: sqlite({ path: ':memory:' }), drop: async () => {} }),
}

export const postgresStorage: StorageCase = {
  name: 'postgres',
  available: postgresAvailable,
  create: async () => {
    const db = await createTestDatabase()
    return { storage: postgres({ url: db.url }), drop: db.drop }
  },
}
