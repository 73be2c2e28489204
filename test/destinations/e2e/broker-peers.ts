import type amqp from 'amqplib'
import { expect } from 'vitest'
import { startRabbitExchange } from '../../support/emulators.js'
import { startFakePubsub } from '../../fakes/pubsub-server.js'
import { startFakeServiceBus } from '../../fakes/servicebus-server.js'
import type { Peer, Received, Sent } from './peer.js'

/**
 * The local RabbitMQ with a fresh topic exchange and a queue bound to it with `#`; every message on
 * the queue is consumed into memory.
 */
export async function startAmqpPeer(): Promise<Peer> {
  const rabbit = await startRabbitExchange()
  const { brokerHostPort, credentials, exchange, channel, queue } = rabbit
  const consumed: amqp.ConsumeMessage[] = []
  await channel.consume(queue, (msg) => msg && consumed.push(msg), { noAck: true })
  return {
    target: { config: { server_url: brokerHostPort, exchange }, credentials },
    async read(sent: Sent): Promise<Received[]> {
      return consumed
        .filter((m) => m.properties.messageId === sent.id)
        .map((m) => {
          expect(m.fields.exchange).toBe(exchange)
          expect(m.fields.routingKey).toBe(sent.topic)
          expect(m.properties).toMatchObject({ contentType: 'application/json', type: sent.topic, deliveryMode: 2 })
          return { data: JSON.parse(m.content.toString('utf8')), metadata: m.properties.headers ?? {} }
        })
    },
    close: () => rabbit.close(),
  }
}

/** The fake Service Bus namespace (AMQP 1.0, SAS tokens verified) with one queue; it records what the real SDK sent. */
export async function startServiceBusPeer(): Promise<Peer> {
  const sb = await startFakeServiceBus({ keyName: 'RootManageSharedAccessKey', key: 'e2eKey0123456789abcdefghijklmnopqrstuvwxyzAB=', entities: ['orders'] })
  return {
    target: { config: { name: 'orders' }, credentials: { connection_string: sb.connectionString() } },
    async read(sent: Sent): Promise<Received[]> {
      return sb.messages
        .filter((m) => m.applicationProperties['event-id'] === sent.id)
        .map((m) => {
          expect(m).toMatchObject({ entity: 'orders', messageId: sent.id, subject: sent.topic, contentType: 'application/json' })
          return { data: m.body, metadata: m.applicationProperties }
        })
    },
    close: () => sb.close(),
  }
}

/** The fake Pub/Sub emulator (gRPC, no auth) with one topic; it records what the real SDK published. */
export async function startPubsubPeer(): Promise<Peer> {
  const project = 'outflow-e2e'
  const topic = `projects/${project}/topics/orders`
  const pubsub = await startFakePubsub({ topics: [topic] })
  return {
    target: { config: { project_id: project, topic: 'orders', endpoint: pubsub.endpoint }, credentials: { service_account_json: '{}' } },
    async read(sent: Sent): Promise<Received[]> {
      return pubsub.messages
        .filter((m) => m.attributes['event-id'] === sent.id)
        .map((m) => {
          expect(m.topic).toBe(topic)
          return { data: JSON.parse(m.data), metadata: m.attributes }
        })
    },
    close: () => pubsub.close(),
  }
}
