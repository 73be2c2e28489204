import net from 'node:net'
import type amqp from 'amqplib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { engineKinds } from '../support/engines.js'
import { startRabbitExchange } from '../support/emulators.js'
import { waitFor } from '../support/receiver.js'
import { amqpAvailable, amqpUrl } from '../support/services.js'

// The broker goes away during amqp_broker deliveries. The shared RabbitMQ is never restarted: the engine
// reaches it through a TCP relay the test cuts (every connection reset, new ones refused) and restores.
const EVENTS = 200
const broker = new URL(amqpUrl)

async function startCuttableRelay() {
  let up = true
  const pairs = new Set<{ client: net.Socket; upstream: net.Socket }>()
  const server = net.createServer((client) => {
    if (!up) return void client.destroy()
    const upstream = net.connect({ host: broker.hostname, port: Number(broker.port || 5672) })
    const pair = { client, upstream }
    pairs.add(pair)
    client.pipe(upstream).pipe(client)
    const drop = () => (client.destroy(), upstream.destroy(), pairs.delete(pair))
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    cut() {
      up = false
      for (const { client, upstream } of pairs) (client.resetAndDestroy(), upstream.destroy())
    },
    restore: () => void (up = true),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

for (const kind of engineKinds()) {
  describe.runIf(amqpAvailable && kind.available)(`broker faults: ${kind.name}`, () => {
    let rabbit: Awaited<ReturnType<typeof startRabbitExchange>>
    let relay: Awaited<ReturnType<typeof startCuttableRelay>>
    beforeAll(async () => {
      rabbit = await startRabbitExchange()
      relay = await startCuttableRelay()
    })
    afterAll(async () => {
      await kind.cleanup()
      await relay?.close()
      await rabbit?.close()
    })

    /** Every message on the test queue, by message id. */
    async function drain(channel: amqp.Channel, queue: string, into: Map<string, number>) {
      for (let msg = await channel.get(queue, { noAck: true }); msg; msg = await channel.get(queue, { noAck: true })) {
        const id = String(msg.properties.messageId)
        into.set(id, (into.get(id) ?? 0) + 1)
      }
    }

    it('the broker cut off mid-run: the publisher reconnects, every event reaches the queue, nothing is recorded the broker did not confirm', async () => {
      const errors: string[] = []
      const logger = { debug() {}, info() {}, warn() {}, error: (_: unknown, message: string) => void errors.push(message) }
      // Auto-disable off: 100 deliveries failing during even a 2 s outage are 100 consecutive failures,
      // which disables the destination by default (see docs/delivery.md, Retries, alerts and auto-disable).
      const outflow = await kind.create({ logger, alerts: { autoDisable: false }, delivery: { timeoutMs: 1_000, pollIntervalMs: 50, retry: { schedule: Array.from({ length: 40 }, () => 250), jitter: 0 } } })
      await outflow.upsertTenant('acme', {})
      const destination = await outflow.createDestination('acme', {
        type: 'amqp_broker',
        topics: '*',
        config: { server_url: `127.0.0.1:${relay.port}`, exchange: rabbit.exchange },
        credentials: rabbit.credentials,
      })
      const received = new Map<string, number>()
      const published: string[] = []
      const publish = async (count: number) => {
        for (let i = 0; i < count; i += 20) {
          const batch = await outflow.publishMany(Array.from({ length: 20 }, (_, j) => ({ tenant_id: 'acme', topic: 'order.created', data: { n: i + j } })))
          published.push(...batch.map((p) => p.id))
        }
      }
      // Half the events go through one open connection; then the broker goes away (the connection is
      // reset, new ones are refused) while the other half is published, and comes back 2 s later.
      await publish(EVENTS / 2)
      await waitFor(async () => (await drain(rabbit.channel, rabbit.queue, received), received.size === EVENTS / 2), 30_000, 'the first half confirmed')
      relay.cut()
      await publish(EVENTS / 2)
      await new Promise((r) => setTimeout(r, 2_000))
      relay.restore()
      await waitFor(async () => {
        let n = 0
        for (let next: string | null | undefined; ; ) {
          const page = await outflow.listEvents('acme', { destination_id: destination.id, status: 'success', limit: 100, ...(next ? { next } : {}) })
          n += page.models.length
          next = page.pagination.next
          if (!next) break
        }
        return n === EVENTS
      }, 30_000, 'every delivery recorded as a success')
      await drain(rabbit.channel, rabbit.queue, received)
      // Every event recorded as delivered is in the queue: a success is only recorded on the broker's confirm.
      expect(published.filter((id) => !received.has(id))).toEqual([])
      // Attempts failed during the cut, and were retried on a new connection.
      const attempts = (await Promise.all(published.map((id) => outflow.listDeliveries('acme', id)))).flat()
      expect(attempts.some((a) => a.status === 'failed')).toBe(true)
      expect(errors).toEqual([])
    }, 120_000)
  })
}
