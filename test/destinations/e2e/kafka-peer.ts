import { expect } from 'vitest'
import { startFakeKafka, type FakeKafka } from '../../fakes/kafka-server.js'
import type { Peer, Received, Sent } from './peer.js'

/** The fake Kafka broker with a three-partition topic; records are read back from its log (batches CRC-checked). */
export async function startKafkaPeer(): Promise<Peer & { broker: FakeKafka }> {
  const broker = await startFakeKafka({ topics: { orders: 3 } })
  return {
    broker,
    target: { config: { brokers: broker.broker, topic: 'orders' } },
    async read(sent: Sent): Promise<Received[]> {
      return broker.log
        .filter((record) => record.headers['event-id'] === sent.id)
        .map((record) => {
          // Produced idempotently with acks=all; without a key template or ordering, the event id is the key.
          expect(record).toMatchObject({ topic: 'orders', acks: -1, timestamp: Date.parse(sent.time) })
          expect(record.producerId).toBeGreaterThanOrEqual(0n)
          if (!sent.destination.delivery?.ordering) expect(record.key).toBe(sent.id)
          return { data: JSON.parse(record.value!), metadata: record.headers }
        })
    },
    close: () => broker.close(),
  }
}
