import postgresClient from 'postgres'
import { describe, expect, it } from 'vitest'
import { mapStorageError } from '../../src/storage/postgres-faults.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

describe.runIf(postgresAvailable)('postgres: a statement the server cancels at its statement_timeout', () => {
  it("is `unavailable` (as when the caller's own deadline passes first), not an internal error", async () => {
    const database = await createTestDatabase()
    const client = postgresClient(database.url, { max: 1, onnotice: () => {}, connection: { statement_timeout: 50 } })
    try {
      const err = await client`select pg_sleep(1)`.then(() => null, (e: unknown) => e)
      expect(err).toMatchObject({ code: '57014' })
      expect(mapStorageError(err)).toMatchObject({ code: 'unavailable' })
    } finally {
      await client.end()
      await database.drop()
    }
  })
})
