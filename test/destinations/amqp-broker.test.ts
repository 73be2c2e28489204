import { randomUUID } from 'node:crypto'
import net from 'node:net'
import amqp from 'amqplib'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { amqpBroker } from '../../src/destinations/amqp-broker.js'
import { closedPort, messageBuilder, publishersFor } from '../support/publishers.js'
import { startRabbitExchange } from '../support/emulators.js'
import { amqpAvailable, amqpUrl } from '../support/services.js'

const broker = new URL(amqpUrl)
const message = messageBuilder({ metadata: { region: 'eu' } })

/** A TCP relay in front of the broker, so the test can count and cut the publisher's connections. */
async function startProxy(): Promise<{ port: number; connections: () => number; open: () => number; cutAll: () => void; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>()
  let count = 0
  const server = net.createServer((client) => {
    count++
    sockets.add(client)
    const upstream = net.connect({ host: broker.hostname, port: Number(broker.port || 5672) })
    client.pipe(upstream).pipe(client)
    const drop = () => (client.destroy(), upstream.destroy(), sockets.delete(client))
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => count,
    open: () => sockets.size,
    cutAll: () => sockets.forEach((s) => s.destroy()),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

describe.runIf(amqpAvailable)('amqp_broker destination (RabbitMQ)', () => {
  let rabbit: Awaited<ReturnType<typeof startRabbitExchange>>
  let brokerHostPort: string
  let credentials: { username: string; password: string }
  let channel: amqp.Channel
  let exchange: string
  let queue: string
  const publishers = publishersFor(amqpBroker, { credentials: () => credentials })

  beforeAll(async () => {
    rabbit = await startRabbitExchange()
    ;({ brokerHostPort, credentials, channel, exchange, queue } = rabbit)
  })

  afterAll(async () => {
    await publishers.closeAll()
    await rabbit?.close()
  })

  /** The next message on `name`; the publisher already awaited the broker confirm, so it is enqueued. */
  async function take(name: string): Promise<amqp.GetMessage> {
    return vi.waitFor(async () => {
      const msg = await channel.get(name, { noAck: true })
      if (!msg) throw new Error(`no message on ${name} yet`)
      return msg
    })
  }

  it('publishes the data as JSON with the metadata as headers, routed by the topic by default', async () => {
    const publisher = await publishers.open({ server_url: brokerHostPort, exchange })
    const m = message()
    try {
      expect(await publisher.publish(m)).toMatchObject({ ok: true })
    } finally {
      await publisher.close()
    }
    const msg = await take(queue)
    expect(JSON.parse(msg.content.toString('utf8'))).toEqual(m.data)
    expect(msg.fields.exchange).toBe(exchange)
    expect(msg.fields.routingKey).toBe('order.created')
    expect(msg.properties.headers).toEqual(m.metadata)
    expect(msg.properties.contentType).toBe('application/json')
    expect(msg.properties.messageId).toBe(m.id)
    expect(msg.properties.type).toBe('order.created')
    expect(msg.properties.timestamp).toBe(m.time.getTime() / 1000)
    expect(msg.properties.deliveryMode).toBe(2)
  })

  it('uses an explicit routing_key and accepts an amqp:// server URL with the default vhost', async () => {
    const publisher = await publishers.open({ server_url: `amqp://${brokerHostPort}/`, exchange, routing_key: 'orders.all' })
    try {
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
    } finally {
      await publisher.close()
    }
    expect((await take(queue)).fields.routingKey).toBe('orders.all')
  })

  it('routes through the default exchange to the queue named by routing_key', async () => {
    const direct = (await channel.assertQueue('', { exclusive: true })).queue
    const publisher = await publishers.open({ server_url: brokerHostPort, exchange: '', routing_key: direct })
    const m = message({ data: { direct: true } })
    try {
      expect(await publisher.publish(m)).toMatchObject({ ok: true })
    } finally {
      await publisher.close()
    }
    const msg = await take(direct)
    expect(msg.fields.exchange).toBe('')
    expect(JSON.parse(msg.content.toString('utf8'))).toEqual({ direct: true })
    expect(msg.properties.headers).toEqual(m.metadata)
  })

  it('reports a wrong password as an authentication failure without revealing the password', async () => {
    const password = 'definitely-not-the-password'
    const publisher = await publishers.open({ server_url: brokerHostPort, exchange }, { credentials: { username: credentials.username, password } })
    try {
      const result = await publisher.publish(message())
      expect(result.ok).toBe(false)
      expect(result.error_kind).toBe('authentication')
      expect(result.error).toMatch(/authentication/i)
      expect(result.error).not.toContain(password)
    } finally {
      await publisher.close()
    }
  })

  it('reports a missing exchange as not_found, and keeps doing so on the next publish', async () => {
    const missing = `outflow-missing-${randomUUID()}`
    const publisher = await publishers.open({ server_url: brokerHostPort, exchange: missing })
    try {
      for (let i = 0; i < 2; i++) {
        const result = await publisher.publish(message())
        expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
        expect(result.error).toContain(missing)
      }
    } finally {
      await publisher.close()
    }
  })

  it('reports an unknown virtual host as not_found', async () => {
    const publisher = await publishers.open({ server_url: `amqp://${brokerHostPort}/outflow-no-such-vhost`, exchange })
    try {
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
      expect(result.error).toContain('outflow-no-such-vhost')
    } finally {
      await publisher.close()
    }
  })

  it('reports a message the broker nacks as rejected', async () => {
    const full = (await channel.assertQueue('', { exclusive: true, arguments: { 'x-max-length': 1, 'x-overflow': 'reject-publish' } })).queue
    const publisher = await publishers.open({ server_url: brokerHostPort, exchange: '', routing_key: full })
    try {
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'rejected' })
    } finally {
      await publisher.close()
    }
  })

  describe('batches (publish all, then wait for each confirm)', () => {
    /** A fresh exclusive queue, reached through the default exchange with routing_key = its name. */
    const freshQueue = async (args: Record<string, unknown> = {}) => (await channel.assertQueue('', { exclusive: true, arguments: args })).queue
    const batch = (count: number) => Array.from({ length: count }, (_, i) => message({ data: { i } }))

    it('delivers every message once, in order, as single publishes would', async () => {
      const target = await freshQueue()
      const publisher = await publishers.open({ server_url: brokerHostPort, exchange: '', routing_key: target })
      const messages = batch(5)
      expect(await publisher.publishBatch(messages)).toEqual(Array(5).fill({ ok: true }))
      const received = []
      for (let i = 0; i < 5; i++) received.push(await take(target))
      expect(received.map((m) => JSON.parse(m.content.toString('utf8')).i)).toEqual([0, 1, 2, 3, 4])
      expect(received.map((m) => m.properties.messageId)).toEqual(messages.map((m) => m.id))
      expect(received[2]!.properties).toMatchObject({ headers: messages[2]!.metadata, contentType: 'application/json', type: 'order.created', deliveryMode: 2 })
      expect(await channel.get(target, { noAck: true })).toBe(false)
    })

    it('gives each message the broker nacks its own rejected result', async () => {
      const full = await freshQueue({ 'x-max-length': 2, 'x-overflow': 'reject-publish' })
      const publisher = await publishers.open({ server_url: brokerHostPort, exchange: '', routing_key: full })
      const results = await publisher.publishBatch(batch(4))
      expect(results.map((r) => [r.ok, r.error_kind])).toEqual([
        [true, undefined],
        [true, undefined],
        [false, 'rejected'],
        [false, 'rejected'],
      ])
      expect(results[2]!.error).toContain('nack')
    })

    it('fails every message with a missing exchange (not_found) or an aborted deadline (timeout)', async () => {
      const missing = `outflow-missing-${randomUUID()}`
      const publisher = await publishers.open({ server_url: brokerHostPort, exchange: missing })
      expect((await publisher.publishBatch(batch(3))).map((r) => r.error_kind)).toEqual(['not_found', 'not_found', 'not_found'])
      const results = await publisher.publishBatch(batch(2), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(results.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  it('reports a broker that refuses the connection as connection_refused', async () => {
    const publisher = await publishers.open({ server_url: `127.0.0.1:${await closedPort()}`, exchange })
    try {
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
    } finally {
      await publisher.close()
    }
  })

  it('reports a broker that does not answer within the deadline as a timeout, and connects afresh for the next attempt', async () => {
    // Accepts connections and never speaks AMQP.
    const sockets: net.Socket[] = []
    let closed = 0
    const silent = net.createServer((socket) => {
      sockets.push(socket)
      socket.resume().on('close', () => closed++)
    })
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
    const publisher = await publishers.open({ server_url: `127.0.0.1:${(silent.address() as net.AddressInfo).port}`, exchange })
    try {
      for (let i = 0; i < 2; i++) {
        expect(await publisher.publish(message(), { signal: AbortSignal.timeout(200) })).toMatchObject({ ok: false, error_kind: 'timeout' })
      }
      expect(sockets).toHaveLength(2)
      // The connect each attempt gave up on was abandoned, its socket closed.
      await vi.waitFor(() => expect(closed).toBe(2))
    } finally {
      await publisher.close()
      sockets.forEach((s) => s.destroy())
      await new Promise<void>((resolve) => silent.close(() => resolve()))
    }
  })

  it('refuses a private broker address unless private networks are allowed', async () => {
    for (const server_url of [brokerHostPort, `localhost:${broker.port || 5672}`]) {
      const publisher = await publishers.open({ server_url, exchange }, { context: { allowPrivateNetworks: false } })
      try {
        expect(await publisher.publish(message()), server_url).toMatchObject({ ok: false, error_kind: 'ssrf' })
      } finally {
        await publisher.close()
      }
    }
  })

  it('reuses one connection across publishes, reconnects after losing it, and releases it on close()', async () => {
    const proxy = await startProxy()
    const publisher = await publishers.open({ server_url: `127.0.0.1:${proxy.port}`, exchange, routing_key: 'reuse' })
    try {
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(proxy.connections()).toBe(1)

      proxy.cutAll()
      // The loss may only be noticed by the first publish after it; a later one must succeed on a new connection.
      await vi.waitFor(async () => expect(await publisher.publish(message())).toMatchObject({ ok: true }))
      expect(proxy.connections()).toBe(2)

      await publisher.close()
      await vi.waitFor(() => expect(proxy.open()).toBe(0))
      expect(await publisher.publish(message())).toMatchObject({ ok: false })
    } finally {
      await publisher.close()
      await proxy.close()
    }
    while (await channel.get(queue, { noAck: true }));
  })
})

describe('amqp_broker schemas', () => {
  const parseConfig = (config: unknown) => v.safeParse(amqpBroker.configSchema, config)
  const parseCredentials = (creds: unknown) => v.safeParse(amqpBroker.credentialsSchema, creds)

  it('accepts host:port and amqp(s) URLs with a vhost', () => {
    for (const server_url of ['rabbit.example.com:5672', '127.0.0.1:5672', '[::1]:5672', 'amqp://rabbit.example.com', 'amqps://rabbit.example.com:5671/prod', 'amqp://h/%2F']) {
      expect(parseConfig({ server_url }).success, server_url).toBe(true)
    }
    expect(parseConfig({ server_url: 'h:5672', exchange: '', routing_key: 'k', tls: true }).success).toBe(true)
  })

  it('rejects other schemes, credentials in the URL, unexpected fields and a missing server_url', () => {
    for (const config of [
      { server_url: 'http://rabbit.example.com' },
      { server_url: 'amqp://guest:guest@rabbit.example.com' },
      { server_url: 'amqp://h/a/b' },
      { server_url: 'h:99999' },
      { server_url: 'h:5672', durable: true },
      { server_url: 'h:5672', tls: 'yes' },
      { exchange: 'x' },
    ]) {
      expect(parseConfig(config).success, JSON.stringify(config)).toBe(false)
    }
  })

  it('requires username and password and nothing else', () => {
    expect(parseCredentials({ username: 'u', password: 'p' }).success).toBe(true)
    expect(parseCredentials({ username: 'u' }).success).toBe(false)
    expect(parseCredentials({ username: 'u', password: 'p', vhost: '/' }).success).toBe(false)
  })

  it('describes every accepted field and marks the password sensitive', () => {
    expect(amqpBroker.config_fields.map((f) => f.key)).toEqual(['server_url', 'exchange', 'routing_key', 'tls'])
    expect(amqpBroker.credential_fields.map((f) => [f.key, f.sensitive])).toEqual([
      ['username', false],
      ['password', true],
    ])
    for (const url of ['rabbit.example.com:5672', 'amqps://rabbit.example.com/prod']) {
      expect(new RegExp(amqpBroker.config_fields[0]!.pattern!).test(url)).toBe(true)
    }
  })

  it('shows exchange/routing_key as the target and a credential-free broker URL', () => {
    expect(amqpBroker.target({ server_url: 'h:5672', exchange: 'orders', routing_key: 'k' })).toBe('orders/k')
    expect(amqpBroker.target({ server_url: 'h:5672', exchange: 'orders' })).toBe('orders')
    expect(amqpBroker.target({ server_url: 'h:5672' })).toBe('h:5672')
    expect(amqpBroker.targetUrl?.({ server_url: 'h:5672', tls: true })).toBe('amqps://h:5672/')
    expect(amqpBroker.targetUrl?.({ server_url: 'amqp://h/prod' })).toBe('amqp://h:5672/prod')
  })
})
