import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { OutflowClient, OutflowError, type OutflowClientOptions } from '../../src/client/index.js'
import { startServe, type ServedOutflow } from '../support/outflow-serve.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// A real `outflow serve` per storage for the client suites, with the catalog below as its OUTFLOW_TOPICS_FILE.

export const apiKey = 'client-test-admin-key-0123456789'

/** The catalog `outflow serve` runs with, and the client's type parameter. */
export const catalog = {
  'order.created': {
    description: 'An order was placed',
    schema: { type: 'object', required: ['id', 'total'], properties: { id: { type: 'string' }, total: { type: 'number' } }, additionalProperties: false },
  },
  'user.signed_up': { description: 'A user signed up' },
} as const

/** Each storage a suite runs `outflow serve` on: the environment that selects it, and how to clean it up. */
export const servedStorages = [
  { name: 'sqlite', available: true, create: async (dir: string) => ({ env: { OUTFLOW_SQLITE_PATH: join(dir, 'outflow.db') }, drop: async () => {} }) },
  {
    name: 'postgres',
    available: postgresAvailable,
    create: async () => {
      const db = await createTestDatabase()
      return { env: { DATABASE_URL: db.url, OUTFLOW_ENCRYPTION_KEY: 'client-test-encryption-key-0123456789', OUTFLOW_POSTGRES_REQUEST_TIMEOUT_MS: '10000' }, drop: db.drop }
    },
  },
]

/** A running `outflow serve` with the catalog, and clients of it. */
export interface Served {
  api: string
  server: ServedOutflow
  /** An admin client of the server with the catalog's types. */
  admin: OutflowClient<typeof catalog>
  /** A client of the server as `options` say (the admin key unless a token is given). */
  client: (options?: Partial<OutflowClientOptions>) => OutflowClient
  stop: () => Promise<void>
}

/**
 * Start `outflow serve` on `storage` (webhooks to loopback allowed, so a test receiver gets deliveries).
 *
 * @example
 * const served = await serveOutflow(servedStorages[0]); …; await served.stop()
 */
export async function serveOutflow(storage: (typeof servedStorages)[number], options: { fetch?: typeof fetch; env?: Record<string, string> } = {}): Promise<Served> {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-client-'))
  const topicsFile = join(dir, 'topics.json')
  writeFileSync(topicsFile, JSON.stringify(catalog))
  const db = await storage.create(dir)
  const server = await startServe(
    { ...db.env, OUTFLOW_API_KEY: apiKey, OUTFLOW_TOPICS_FILE: topicsFile, OUTFLOW_ALLOW_PRIVATE_NETWORKS: 'true', PORT: '0', OUTFLOW_PUBLIC_URL: 'http://outflow.test/api/v1', ...options.env },
    dir,
  )
  const base = { baseUrl: server.api, ...(options.fetch ? { fetch: options.fetch } : {}) }
  return {
    api: server.api,
    server,
    admin: new OutflowClient({ ...base, apiKey, topics: catalog }),
    client: (extra = {}) => new OutflowClient({ ...base, ...(extra.token === undefined ? { apiKey } : {}), ...extra }),
    async stop() {
      await server.kill()
      await db.drop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

/** The thrown OutflowError of a call that must fail. */
export async function failure(call: Promise<unknown>): Promise<OutflowError> {
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(error).toBeInstanceOf(OutflowError)
  return error as OutflowError
}
