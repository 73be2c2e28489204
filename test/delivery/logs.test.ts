import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import Database from 'better-sqlite3'
import postgresJs from 'postgres'
import { pino } from 'pino'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'

/** A real pino logger at debug writing JSON lines into memory. */
function capturingLogger() {
  const lines: string[] = []
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(...chunk.toString('utf8').split('\n').filter(Boolean))
      done()
    },
  })
  const logger = pino({ level: 'debug' }, stream)
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown> & { level: number; msg: string }) }
}

const secrets = {
  apiKey: 'log-test-admin-key-SECRET-0001',
  jwtSecret: 'log-test-jwt-secret-SECRET-0002',
  encryptionKey: 'log-test-encryption-key-SECRET-0003',
  webhookSecret: 'whsec_bG9nLXRlc3Qtd2ViaG9vay1zZWNyZXQtU0VDUkVUIQ==',
  headerToken: 'custom-header-token-SECRET-0004',
  relayToken: 'relay-token-SECRET-0005',
  brokerPassword: 'broker-password-SECRET-0006',
  payload: 'payload-body-SECRET-0007',
  responseBody: 'response-body-SECRET-0008',
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`logs: ${kind.name}`, () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      receiver = await startReceiver((r) => {
        if (r.path === '/fails') return { status: 500, body: secrets.responseBody }
        if (r.path === '/gone') return { status: 410, body: secrets.responseBody }
        return {}
      })
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('logs start, stop and every attempt with ids, status and error kind, and never a secret, credential or body', async () => {
      const { logger, lines, records } = capturingLogger()
      const outflow: Outflow = await kind.create({
        logger,
        apiKey: secrets.apiKey,
        jwtSecret: secrets.jwtSecret,
        encryptionKey: secrets.encryptionKey,
        // A generous attempt timeout: on a loaded machine a 2 s one turned the 410 into a timeout that is retried.
        delivery: { pollIntervalMs: 50, retry: { schedule: [50], jitter: 0 }, timeoutMs: 15_000 },
        alerts: { consecutiveFailures: 2 },
      })
      await outflow.upsertTenant('acme', { metadata: { plan: 'pro' } })
      const ok = await outflow.createDestination('acme', {
        type: 'webhook',
        topics: '*',
        config: { url: `${receiver.url}/ok`, custom_headers: { authorization: `Bearer ${secrets.headerToken}` } },
        credentials: { secret: secrets.webhookSecret },
      })
      const relay = await outflow.createDestination('acme', { type: 'relay', topics: '*', config: { url: `${receiver.url}/fails` }, credentials: { token: secrets.relayToken } })
      const broker = await outflow.createDestination('acme', {
        type: 'amqp_broker',
        topics: '*',
        config: { server_url: '127.0.0.1:1', exchange: '' },
        credentials: { username: 'outflow', password: secrets.brokerPassword },
      })
      const gone = await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/gone` } })
      const { id } = await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { note: secrets.payload }, metadata: { source: 'log-test' } })
      // webhook ok: 1 attempt; relay and broker: 2 attempts each (schedule [50]); gone: 1 attempt.
      // Generous: beside the suite at load 10-15 on 2 cores the six took more than 15 s.
      await waitFor(async () => (await outflow.listDeliveries('acme', id).catch(() => [])).length === 6, 60_000, 'six attempts')
      await waitFor(() => records().some((r) => r.msg.startsWith('destination disabled after consecutive failures')), 10_000, 'the disable line')
      await outflow.close()

      for (const line of lines) for (const [name, secret] of Object.entries(secrets)) expect(line, `${name} leaked into a log line`).not.toContain(secret)
      const all = records()
      const attemptLines = all.filter((r) => r.event_id === id)
      expect(all[0]).toMatchObject({ level: 30, msg: 'outflow started', storage: outflow.storage.dialect })
      expect(all.at(-1)).toMatchObject({ level: 30, msg: 'outflow stopped' })
      expect(attemptLines.find((r) => r.destination_id === ok.id)).toMatchObject({
        level: 20, msg: 'delivery attempt succeeded', tenant_id: 'acme', destination_type: 'webhook', attempt_number: 1, status: 'success', status_code: 200, duration_ms: expect.any(Number),
      })
      const relayLines = attemptLines.filter((r) => r.destination_id === relay.id)
      expect(relayLines.map((r) => [r.level, r.msg, r.attempt_number])).toEqual([
        [30, 'delivery attempt failed; retry scheduled', 1],
        [40, 'delivery failed; no attempts left', 2],
      ])
      expect(relayLines[0]).toMatchObject({ status: 'failed', status_code: 500, error_kind: 'http_5xx', destination_type: 'relay', next_attempt_at: expect.any(String) })
      expect(attemptLines.filter((r) => r.destination_id === broker.id)).toEqual([
        expect.objectContaining({ level: 30, error_kind: 'connection_refused', destination_type: 'amqp_broker' }),
        expect.objectContaining({ level: 40, error_kind: 'connection_refused' }),
      ])
      expect(attemptLines.find((r) => r.destination_id === gone.id)).toMatchObject({ level: 40, status_code: 410, error_kind: 'http_4xx' })
      expect(all).toContainEqual(expect.objectContaining({ level: 40, msg: 'destination disabled: the receiver answered 410 Gone', destination_id: gone.id }))
      expect(all).toContainEqual(expect.objectContaining({ level: 40, msg: 'destination disabled after consecutive failures', tenant_id: 'acme' }))
    }, 90_000)
  })
}

/** A storage to run an engine on, and a second connection that drops the attempts table under it. */
const droppable = [
  {
    name: 'sqlite file',
    available: true,
    code: 'SQLITE_ERROR',
    message: 'no such table: attempts',
    async open() {
      const dir = mkdtempSync(join(tmpdir(), 'outflow-logs-'))
      const path = join(dir, 'outflow.db')
      return {
        storage: sqlite({ path }),
        dropAttempts: async () => {
          const side = new Database(path)
          side.exec('drop table attempts')
          side.close()
        },
        cleanup: async () => rmSync(dir, { recursive: true, force: true }),
      }
    },
  },
  {
    name: 'postgres',
    available: postgresAvailable,
    code: '42P01',
    message: 'relation "public.attempts" does not exist',
    async open() {
      const db = await createTestDatabase()
      return {
        storage: postgres({ url: db.url, max: 4 }),
        dropAttempts: async () => {
          const side = postgresJs(db.url, { max: 1, onnotice: () => {} })
          await side.unsafe('drop table attempts')
          await side.end()
        },
        cleanup: () => db.drop(),
      }
    },
  },
]

for (const kind of droppable) {
  describe.runIf(kind.available)(`logs: a failing storage batch on ${kind.name}`, () => {
    it('logs a short message and the error code, not the statement and its parameters', async () => {
      const { storage, dropAttempts, cleanup } = await kind.open()
      const receiver = await startReceiver()
      const { logger, records } = capturingLogger()
      const outflow = await createOutflow({ storage, apiKey: secrets.apiKey, encryptionKey: secrets.encryptionKey, allowPrivateNetworks: true, logger })
      try {
        await outflow.upsertTenant('acme', {})
        await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/ok` } })
        // One delivery first, so the drivers have prepared their statements against the table.
        const first = await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: {} })
        await waitFor(async () => (await outflow.listDeliveries('acme', first.id).catch(() => [])).length === 1)
        await dropAttempts()
        const published = await outflow.publishMany(Array.from({ length: 300 }, (_, i) => ({ tenant_id: 'acme', topic: 'order.created', data: { i, note: secrets.payload } })))
        const failure = await waitFor(() => records().find((r) => r.msg === 'recording attempts failed'), 15_000, 'the storage error line')
        expect(failure).toMatchObject({ level: 50, error: { message: kind.message, code: kind.code } })
        const line = JSON.stringify(failure)
        expect(line.length).toBeLessThan(400)
        for (const p of published.slice(0, 10)) expect(line).not.toContain(p.id)
        expect(line).not.toContain(secrets.payload)
      } finally {
        await outflow.close()
        await receiver.close()
        await cleanup()
      }
    })
  })
}
