import net from 'node:net'
import type { AddressInfo } from 'node:net'
import { afterAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, engineKinds } from '../support/engines.js'

const admin = { authorization: `Bearer ${apiKey}` }

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`health: ${kind.name}`, () => {
    afterAll(() => kind.cleanup())

    it('reports storage reachable, the due queue, its oldest delivery and a running worker', async () => {
      const outflow = await kind.create()
      expect(await outflow.health()).toEqual({
        status: 'ok',
        storage: { dialect: outflow.storage.dialect, reachable: true },
        queue: { depth: 0, oldest_due_age_seconds: null },
        worker: { enabled: true, running: true },
        loops: expect.arrayContaining([{ name: 'claim', status: 'running', restarts: 0 }, { name: 'results', status: 'running', restarts: 0 }]),
      })
      expect(await outflow.health({ queue: false })).toMatchObject({ status: 'ok', queue: null })
    })

    it('counts what an API-only process leaves due, and says its worker is off', async () => {
      const outflow = await kind.create({ delivery: { worker: false } })
      await outflow.upsertTenant('acme', {})
      await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: 'http://127.0.0.1:9/hook' } })
      await outflow.publishMany([{ tenant_id: 'acme', topic: 'a', data: {} }, { tenant_id: 'acme', topic: 'b', data: {} }])
      const report = await outflow.health()
      expect(report).toMatchObject({ status: 'ok', queue: { depth: 2, oldest_due_age_seconds: expect.any(Number) }, worker: { enabled: false, running: false } })
    })

    it('is unavailable when storage does not answer: 503 on /healthz, the report on details', async () => {
      const outflow = await kind.create({ delivery: { worker: false } })
      await outflow.storage.close()
      const report = await outflow.health()
      expect(report).toMatchObject({ status: 'unavailable', storage: { reachable: false, error: expect.any(String) }, queue: null })
      const plain = await outflow.fetch(new Request('http://host/api/v1/healthz'))
      expect(plain.status).toBe(503)
      expect(await plain.json()).toEqual({ status: 'unavailable' })
      const details = await outflow.fetch(new Request('http://host/api/v1/healthz?details=1', { headers: admin }))
      expect(details.status).toBe(503)
      expect(await details.json()).toMatchObject({ status: 'unavailable', storage: { reachable: false } })
    })
  })
}

describe('health: a database that accepts connections but never answers', () => {
  it('counts as unreachable once the check passes its deadline', async () => {
    const sockets: net.Socket[] = []
    const silent = net.createServer((socket) => void sockets.push(socket))
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const { port } = silent.address() as AddressInfo
    const outflow = await createOutflow({ storage: postgres({ url: `postgres://postgres@127.0.0.1:${port}/none`, max: 1 }), apiKey, encryptionKey, migrate: false, delivery: { worker: false } })
    try {
      const report = await outflow.health()
      expect(report).toMatchObject({ status: 'unavailable', storage: { dialect: 'postgres', reachable: false, error: expect.stringContaining('no answer') } })
    } finally {
      await outflow.close().catch(() => {})
      const closed = new Promise((resolve) => silent.close(resolve))
      for (const s of sockets) s.destroy()
      await closed
    }
  })
})
