import { randomUUID } from 'node:crypto'
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds } from '../support/engines.js'
import { waitFor } from '../support/receiver.js'
import { natsAvailable, natsUrl, redisAvailable, redisUrl } from '../support/services.js'

// Through the engine, on both storages: credentials are stored encrypted and answered masked; an attempt the server
// refuses is a failed attempt of the documented kind, a retry once the server is fixed succeeds, and a retry after
// that success stores nothing twice.

const topic = 'order.created'

for (const kind of engineKinds()) {
  describe.runIf(kind.available && natsAvailable && redisAvailable)(`nats_jetstream and redis_streams fail, retry and deduplicate through the engine: ${kind.name}`, () => {
    let outflow: Outflow
    let redis: Redis
    let nc: NatsConnection
    let jsm: JetStreamManager
    const prefix = `outflow-t-retries:${randomUUID()}`
    const streams: string[] = []

    beforeAll(async () => {
      outflow = await kind.create({ delivery: { pollIntervalMs: 50 } })
      redis = new Redis(redisUrl)
      const server = new URL(natsUrl)
      nc = await connect({ servers: `${server.hostname}:${server.port || 4222}` })
      jsm = await jetstreamManager(nc)
    })

    afterAll(async () => {
      await kind.cleanup()
      const keys = await redis.keys(`${prefix}*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
      for (const stream of streams) await jsm.streams.delete(stream).catch(() => {})
      await nc.close()
    })

    /** The attempts of an event once it has `count`, newest first. */
    const attempts = (tenantId: string, eventId: string, count: number) =>
      waitFor(async () => {
        const found = await outflow.listDeliveries(tenantId, eventId).catch(() => [])
        return found.length === count && found
      }, 15_000, `${count} attempts of ${eventId}`)

    it('stores the credentials of both types encrypted and answers them masked', async () => {
      const tenantId = `creds.${kind.name.replace(/\W/g, '')}`
      await outflow.upsertTenant(tenantId, {})
      const secrets = { nats_jetstream: { token: 'nats-token-secret-value' }, redis_streams: { username: 'outflow', password: 'redis-secret-value' } }
      const configs = { nats_jetstream: { servers: 'nats.example.com:4222', subject: 'events' }, redis_streams: { url: 'redis://cache.example.com', stream_key: 'events' } }
      for (const type of ['nats_jetstream', 'redis_streams'] as const) {
        const secret = Object.values(secrets[type]).at(-1)!
        const created = await outflow.createDestination(tenantId, { type, topics: '*', config: configs[type], credentials: secrets[type] })
        expect(JSON.stringify(created)).not.toContain(secret)
        expect(Object.values(created.credentials)).toContain(`${secret.slice(0, 4)}****`)
        const stored = (await outflow.storage.getDestination(tenantId, created.id))!.credentials as unknown as string
        expect(stored).toMatch(/^enc:v2:/)
        expect(stored).not.toContain(secret)
      }
    })

    it('redis_streams: WRONGTYPE is a rejected attempt; the retry after the key is freed adds the entry, a second retry adds none', async () => {
      const tenantId = `redis.${kind.name.replace(/\W/g, '')}`
      const stream = `${prefix}:orders`
      await redis.set(stream, 'not a stream')
      await outflow.upsertTenant(tenantId, {})
      const destination = await outflow.createDestination(tenantId, { type: 'redis_streams', topics: '*', config: { url: redisUrl, stream_key: stream } })
      const { id } = await outflow.publish({ tenant_id: tenantId, topic, data: { n: 1 }, eligible_for_retry: false })
      const [failed] = await attempts(tenantId, id, 1)
      expect(failed).toMatchObject({ status: 'failed', error_kind: 'rejected' })
      expect(failed!.error).toContain('WRONGTYPE')

      await redis.del(stream)
      await outflow.retryDelivery(tenantId, destination.id, id)
      const [retried] = await attempts(tenantId, id, 2)
      expect(retried).toMatchObject({ status: 'success', error_kind: null })
      const [[entryId]] = (await redis.xrange(stream, '-', '+')) as [[string, string[]]]
      expect(JSON.parse(retried!.response_body!)).toEqual({ stream, entry_id: entryId, duplicate: false })

      await outflow.retryDelivery(tenantId, destination.id, id)
      const [again] = await attempts(tenantId, id, 3)
      expect(again).toMatchObject({ status: 'success' })
      expect(JSON.parse(again!.response_body!)).toEqual({ stream, entry_id: entryId, duplicate: true })
      expect(await redis.xlen(stream)).toBe(1)
    })

    it('nats_jetstream: a subject no stream captures is a not_found attempt; the retry once a stream captures it is stored, a second retry is dropped as a duplicate', async () => {
      const tenantId = `nats.${kind.name.replace(/\W/g, '')}`
      const suffix = randomUUID().replaceAll('-', '')
      const subject = `outflow-t-retries-${suffix}.orders`
      await outflow.upsertTenant(tenantId, {})
      const destination = await outflow.createDestination(tenantId, { type: 'nats_jetstream', topics: '*', config: { servers: new URL(natsUrl).host, subject } })
      const { id } = await outflow.publish({ tenant_id: tenantId, topic, data: { n: 1 }, eligible_for_retry: false })
      const [failed] = await attempts(tenantId, id, 1)
      expect(failed).toMatchObject({ status: 'failed', error_kind: 'not_found' })

      const stream = `OUTFLOW_T_RETRIES_${suffix}`
      streams.push(stream)
      await jsm.streams.add({ name: stream, subjects: [subject] })
      await outflow.retryDelivery(tenantId, destination.id, id)
      const [retried] = await attempts(tenantId, id, 2)
      expect(retried).toMatchObject({ status: 'success', error_kind: null })
      expect(JSON.parse(retried!.response_body!)).toEqual({ stream, seq: 1, duplicate: false, subject })

      await outflow.retryDelivery(tenantId, destination.id, id)
      const [again] = await attempts(tenantId, id, 3)
      expect(JSON.parse(again!.response_body!)).toEqual({ stream, seq: 1, duplicate: true, subject })
      expect((await jsm.streams.info(stream)).state.messages).toBe(1)
    })
  })
}
