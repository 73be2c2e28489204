import { createOutflow } from '../../src/create-outflow.js'
import { type Outflow } from '../../src/engine.js'
import type { OutflowOptions } from '../../src/options.js'
import { storageKinds } from './storages.js'

export const apiKey = 'test-admin-key-0123456789'
export const jwtSecret = 'test-jwt-secret-0123456789'
/** Postgres has no key file: its engines need an explicit key (SQLite engines use their default key). */
export const encryptionKey = 'test-encryption-key-0123456789abcdef'

/** Engines over SQLite (memory) and Postgres (fresh database), closed and dropped by `cleanup()`. */
export function engineKinds() {
  return storageKinds()
    .filter((k) => k.name !== 'sqlite file')
    .map((kind) => {
      const engines: Outflow[] = []
      return {
        name: kind.name,
        available: kind.available,
        /** A fresh, migrated storage of this kind (closed by cleanup). */
        openStorage: () => kind.open(),
        async create(options: Partial<OutflowOptions> = {}): Promise<Outflow> {
          const storage = options.storage ?? (await kind.open())
          const keys = kind.name.startsWith('sqlite') ? {} : { encryptionKey }
          const outflow = await createOutflow({ apiKey, jwtSecret, allowPrivateNetworks: true, ...keys, ...options, storage })
          engines.push(outflow)
          return outflow
        },
        async cleanup() {
          await Promise.all(engines.splice(0).map((e) => e.close().catch(() => {})))
          await kind.cleanup()
        },
      }
    })
}

/** Everything the directory holds, to assert a rejected call left storage unchanged. */
export async function snapshot(outflow: Outflow): Promise<string> {
  const { rows } = await outflow.storage.listTenants({ dir: 'asc', limit: 10_000 })
  const out = []
  for (const t of rows) out.push({ t, d: await outflow.storage.listDestinations(t.id) })
  return JSON.stringify(out)
}

/** The OutflowError a call rejects with (fails the test when it resolves). */
export async function rejection(p: Promise<unknown>): Promise<{ status: number; code: string; message: string; data?: Record<string, string> }> {
  try {
    await p
  } catch (err) {
    return err as { status: number; code: string; message: string; data?: Record<string, string> }
  }
  throw new Error('expected the call to be rejected, but it resolved')
}
