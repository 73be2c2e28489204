import { randomUUID } from 'node:crypto'
import amqp from 'amqplib'
import { expect } from 'vitest'
import { amqpUrl } from '../../support/services.js'
import { startFakePubsub } from '../../fakes/pubsub-server.js'
import { startFakeServiceBus } from '../../fakes/servicebus-server.js'
import type { Peer, Received, Sent } from './peer.js'

/**
 * The local RabbitMQ with a fresh topic exchange and a queue bound to it with `#`; every message on
 * the queue is consumed into memory. `brokerHostPort` and `exchange` let a test build a destination
 * with other credentials.
 */
export async function startAmqpPeer(): Promise<Peer & { brokerHostPort: string; exchange: string }> {
  const broker = new URL(amqpUrl)
  const brokerHostPort = `${broker.hostname}:${broker.port || 5672}`
  const credentials = { username: decodeURIComponent(broker.username || 'guest'), password: decodeURIComponent(broker.password || 'guest') }
  const exchange = `outflow-e2e-${randomUUID()}`
  const connection = await amqp.connect(amqpUrl)
  const channel = await connection.createChannel()
  await channel.assertExchange(exchange, 'topic', { durable: false, autoDelete: false })
  const { queue } = await channel.assertQueue('', { exclusive: true })
  await channel.bindQueue(queue, exchange, '#')
  const consumed: amqp.ConsumeMessage[] = []
  await channel.consume(queue, (msg) => msg && consumed.push(msg), { noAck: true })
  return {
    brokerHostPort,
    exchange,
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
    async close() {
      await channel.deleteExchange(exchange).catch(() => {})
      await connection.close()
    },
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
