import { randomUUID } from 'node:crypto'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { Redis } from 'ioredis'
import { expect } from 'vitest'
import { natsUrl, redisUrl } from '../../support/services.js'
import type { Peer, Received, Sent } from './peer.js'

/** The local nats-server with a fresh stream capturing `<prefix>.>`; messages are read back with an ordered consumer. */
export async function startNatsPeer(): Promise<Peer> {
  const id = randomUUID().replaceAll('-', '')
  const stream = `OUTFLOW_E2E_${id}`
  const subject = `outflow-e2e-${id}.orders`
  const server = new URL(natsUrl)
  const servers = `${server.hostname}:${server.port || 4222}`
  const nc = await connect({ servers })
  const jsm = await jetstreamManager(nc)
  await jsm.streams.add({ name: stream, subjects: [`outflow-e2e-${id}.>`] })
  return {
    target: { config: { servers, subject, stream } },
    async read(sent: Sent): Promise<Received[]> {
      const consumer = await jetstream(nc).consumers.get(stream)
      const count = (await consumer.info()).num_pending
      const found: Received[] = []
      if (count === 0) return found
      let seen = 0
      for await (const m of await consumer.fetch({ max_messages: count, expires: 2000 })) {
        seen++
        if (m.headers?.get('Nats-Msg-Id') === sent.id) {
          expect(m.subject).toBe(subject)
          expect(m.headers.get('Content-Type')).toBe('application/json')
          // The stream check travels as Nats-Expected-Stream; Nats-* and Content-Type are the client's, the rest is metadata.
          expect(m.headers.get('Nats-Expected-Stream')).toBe(stream)
          const metadata = Object.fromEntries(m.headers.keys().filter((k) => !k.startsWith('Nats-') && k !== 'Content-Type').map((k) => [k, m.headers!.get(k)]))
          found.push({ data: m.json(), metadata })
        }
        if (seen === count) break
      }
      return found
    },
    async close() {
      await jsm.streams.delete(stream).catch(() => {})
      await nc.close()
    },
  }
}

/** The local Redis with a stream key of its own; entries are read back with XRANGE, and the key deleted at close. */
export async function startRedisPeer(): Promise<Peer> {
  const stream = `outflow-e2e:${randomUUID()}:orders`
  const redis = new Redis(redisUrl)
  return {
    target: { config: { url: redisUrl, stream_key: stream } },
    async read(sent: Sent): Promise<Received[]> {
      const rows = await redis.xrange(stream, '-', '+')
      return rows.flatMap(([, flat]) => {
        const fields = Object.fromEntries(flat.flatMap((_, i) => (i % 2 === 0 ? [[flat[i]!, flat[i + 1]!]] : [])))
        if (fields.id !== sent.id) return []
        expect(Object.keys(fields)).toEqual(['id', 'topic', 'data', 'metadata'])
        expect(fields.topic).toBe(sent.topic)
        return [{ data: JSON.parse(fields.data!), metadata: JSON.parse(fields.metadata!) }]
      })
    },
    async close() {
      const keys = await redis.keys(`${stream}*`)
      if (keys.length) await redis.del(...keys)
      redis.disconnect()
    },
  }
}
