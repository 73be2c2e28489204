import { randomUUID } from 'node:crypto'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect as natsConnect } from '@nats-io/transport-node'
import amqp from 'amqplib'
import { Redis } from 'ioredis'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import type { OperatorEvent } from '../../src/model/operator-event.js'
import { resolveOptions } from '../../src/options.js'
import { encryptionKey, engineKinds, rejection } from '../support/engines.js'
import { startReceiver, waitFor, type Received } from '../support/receiver.js'
import { amqpAvailable, amqpUrl, natsAvailable, natsUrl, redisAvailable, redisUrl } from '../support/services.js'

const sinkSecret = `whsec_${Buffer.from('operator-sink-secret-for-tests-000').toString('base64')}`
const payloadMarker = 'tenant-payload-not-for-operators'
const quick = { pollIntervalMs: 50, retry: { schedule: [50], jitter: 0 }, timeoutMs: 2_000 }

/** Operator events the sink accepted (2xx), each verified against the sink's secret, one per webhook-id. */
function delivered(requests: Received[], secret: string, accepted: Set<Received>): OperatorEvent[] {
  const byId = new Map<string, OperatorEvent>()
  for (const r of requests) {
    if (accepted.has(r)) byId.set(String(r.headers['webhook-id']), new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as OperatorEvent)
  }
  return [...byId.values()]
}

const count = (topics: string[]) => topics.reduce<Record<string, number>>((n, t) => ((n[t] = (n[t] ?? 0) + 1), n), {})

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`operator events: ${kind.name}`, () => {
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    /** The sink requests answered 2xx. */
    const sinkOk = new Set<Received>()
    beforeAll(async () => {
      receiver = await startReceiver((r, n) => {
        if (r.path === '/ops') {
          // The sink fails its first request: operator events are retried like any delivery.
          if (n === 0) return { status: 500 }
          sinkOk.add(r)
          return {}
        }
        if (r.path === '/always-500') return { status: 500, body: 'nope' }
        if (r.path === '/gone') return { status: 410 }
        return {}
      })
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('sends alerts and opted-in attempt events to a signed sink with retries and a log, and emits every topic in-process', async () => {
      const outflow: Outflow = await kind.create({
        delivery: quick,
        alerts: { consecutiveFailures: 4 },
        operatorEvents: {
          destination: { type: 'webhook', config: { url: `${receiver.url}/ops` }, credentials: { secret: sinkSecret } },
          topics: ['alert.destination.consecutive_failure', 'alert.destination.disabled', 'alert.attempt.exhausted_retries', 'attempt.failed'],
        },
      })
      const inProcess: OperatorEvent[] = []
      for (const topic of ['alert.destination.consecutive_failure', 'alert.destination.disabled', 'alert.attempt.exhausted_retries', 'attempt.success', 'attempt.failed'] as const)
        outflow.on(topic, (e: OperatorEvent) => inProcess.push(e))
      await outflow.upsertTenant('acme', {})
      const bad = await outflow.createDestination('acme', { type: 'webhook', topics: ['order.created'], config: { url: `${receiver.url}/always-500` } })
      const good = await outflow.createDestination('acme', { type: 'webhook', topics: ['order.paid'], config: { url: `${receiver.url}/ok` } })
      const gone = await outflow.createDestination('acme', { type: 'webhook', topics: ['order.gone'], config: { url: `${receiver.url}/gone` } })

      await outflow.publish({ tenant_id: 'acme', topic: 'order.paid', data: { note: payloadMarker } })
      const retried = await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { note: payloadMarker } })
      await waitFor(() => receiver.on('/always-500').length === 2, 10_000, 'both attempts of the retried event')
      for (let i = 0; i < 2; i++) {
        await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { i }, eligible_for_retry: false })
        await waitFor(() => receiver.on('/always-500').length === 3 + i)
      }
      await outflow.publish({ tenant_id: 'acme', topic: 'order.gone', data: {} })

      // 4 streak levels, 2 disables (threshold and 410), 1 exhausted delivery, 5 failed attempts.
      const expected = { 'alert.destination.consecutive_failure': 4, 'alert.destination.disabled': 2, 'alert.attempt.exhausted_retries': 1, 'attempt.failed': 5 }
      const atSink = await waitFor(() => {
        const events = delivered(receiver.on('/ops'), sinkSecret, sinkOk)
        return events.length === 12 && events
      }, 15_000, 'twelve operator events at the sink')
      expect(count(atSink.map((e) => e.topic))).toEqual(expected)
      for (const e of atSink) {
        expect(e).toMatchObject({ id: expect.stringMatching(/^opv_/), tenant_id: 'acme', time: expect.any(String), data: { tenant_id: 'acme' } })
        expect(e.data.event).not.toHaveProperty('data')
        expect(JSON.stringify(e)).not.toContain(payloadMarker)
      }
      const request = receiver.on('/ops').find((r) => r.headers['webhook-id'] === atSink[0]!.id)!
      expect(request.headers['x-outflow-topic']).toBe(atSink[0]!.topic)

      const levels = atSink.flatMap((e) => (e.topic === 'alert.destination.consecutive_failure' ? [e.data.consecutive_failures] : []))
      expect(levels.map((l) => l.threshold).sort((a, b) => a - b)).toEqual([50, 70, 90, 100])
      expect(levels.every((l) => l.max === 4)).toBe(true)
      const disables = atSink.flatMap((e) => (e.topic === 'alert.destination.disabled' ? [e.data] : []))
      expect(disables.map((d) => [d.destination.id, d.reason]).sort()).toEqual([[bad.id, 'consecutive_failure'], [gone.id, 'gone']].sort())
      expect(disables.every((d) => d.disabled_at && d.destination.disabled_at)).toBe(true)
      const exhausted = atSink.find((e) => e.topic === 'alert.attempt.exhausted_retries')!
      expect(exhausted.data).toMatchObject({
        event: { id: retried.id, topic: 'order.created' },
        attempt: { attempt_number: 2, status: 'failed', response_status_code: 500, error_kind: 'http_5xx' },
        destination: { id: bad.id, type: 'webhook', target: expect.any(String), topics: ['order.created'] },
      })
      expect(exhausted.data.destination).not.toHaveProperty('credentials')
      expect(exhausted.data.attempt).not.toHaveProperty('response_body')

      // In-process: every topic, the sink's ones with the same ids; attempt.success only here.
      await waitFor(() => inProcess.length === 13, 5_000, 'thirteen in-process events')
      expect(count(inProcess.map((e) => e.topic))).toEqual({ ...expected, 'attempt.success': 1 })
      expect(new Set(inProcess.filter((e) => e.topic !== 'attempt.success').map((e) => e.id))).toEqual(new Set(atSink.map((e) => e.id)))
      expect(inProcess.find((e) => e.topic === 'attempt.success')!.data.destination.id).toBe(good.id)

      // The same log: the sink's deliveries are events of the operator tenant, the first one retried.
      const log = await waitFor(async () => {
        const page = await outflow.listEvents('outflow-operator', { limit: 100 })
        return page.models.length === 12 && page.models.every((m) => m.status === 'success') && page.models
      })
      const first = receiver.on('/ops')[0]!.headers['webhook-id'] as string
      expect(log.map((m) => m.destination_id)).toEqual(Array(12).fill('sink'))
      expect((await outflow.listDeliveries('outflow-operator', first)).map((a) => a.status)).toEqual(['success', 'failed'])
      await outflow.close()
    })

    it('keeps a destination enabled at 100 % when autoDisable is off', async () => {
      const outflow = await kind.create({ delivery: quick, alerts: { consecutiveFailures: 2, autoDisable: false } })
      const levels: number[] = []
      let disabled = 0
      outflow.on('alert.destination.consecutive_failure', (e) => levels.push(e.data.consecutive_failures.threshold))
      outflow.on('alert.destination.disabled', () => disabled++)
      await outflow.upsertTenant('acme', {})
      const d = await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/always-500` } })
      for (let i = 0; i < 3; i++) await outflow.publish({ tenant_id: 'acme', topic: 'x', data: {}, eligible_for_retry: false })
      await waitFor(async () => (await outflow.listEvents('acme', { limit: 10 })).models.length === 3)
      await waitFor(() => levels.length === 4)
      expect(levels).toEqual([50, 70, 90, 100])
      expect(disabled).toBe(0)
      expect((await outflow.getDestination('acme', d.id)).disabled_at).toBeNull()
    })

    it('brings the sink up to date at start, keeping its generated secret', async () => {
      const storage = await kind.openStorage()
      // Two engines on one storage: the same key, so the second reads what the first stored.
      const shared = { ...storage, close: async () => {} }
      const first = await kind.create({ storage: shared, encryptionKey, operatorEvents: { destination: { type: 'webhook', config: { url: `${receiver.url}/first` } } } })
      const before = await first.getDestination('outflow-operator', 'sink')
      await first.close()
      const second = await kind.create({ storage: shared, encryptionKey, operatorEvents: { destination: { type: 'webhook', config: { url: `${receiver.url}/second`, custom_headers: { 'x-env': 'test' } } } } })
      const after = await second.getDestination('outflow-operator', 'sink')
      expect(after.config).toEqual({ url: `${receiver.url}/second`, custom_headers: { 'x-env': 'test' } })
      expect(after.credentials.secret).toBe(before.credentials.secret)
      expect(after.topics).toEqual(['*'])
      await second.close()
      const third = await kind.create({ storage: shared, encryptionKey, operatorEvents: { destination: { type: 'webhook', config: { url: `${receiver.url}/third` } } } })
      expect((await third.getDestination('outflow-operator', 'sink')).config).toEqual({ url: `${receiver.url}/third` })
    })

    it('refuses to start with an invalid sink, naming the option', async () => {
      const error = await rejection(kind.create({ operatorEvents: { destination: { type: 'webhook', config: {} } } }))
      expect(error).toMatchObject({ status: 422, data: { 'operatorEvents.destination.config.url': expect.any(String) } })
    })

    it.runIf(amqpAvailable)('delivers operator events to a queue sink (amqp_broker) just as well', async () => {
      const connection = await amqp.connect(amqpUrl)
      const channel = await connection.createChannel()
      const queue = `outflow-operator-${randomUUID()}`
      await channel.assertQueue(queue, { autoDelete: true })
      try {
        const broker = new URL(amqpUrl)
        const outflow = await kind.create({
          delivery: quick,
          alerts: { consecutiveFailures: 2 },
          operatorEvents: {
            destination: {
              type: 'amqp_broker',
              config: { server_url: `${broker.hostname}:${broker.port || 5672}`, exchange: '', routing_key: queue },
              credentials: { username: decodeURIComponent(broker.username || 'guest'), password: decodeURIComponent(broker.password || 'guest') },
            },
          },
        })
        await outflow.upsertTenant('acme', {})
        await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/always-500` } })
        for (let i = 0; i < 2; i++) await outflow.publish({ tenant_id: 'acme', topic: 'x', data: {}, eligible_for_retry: false })
        const topics: string[] = []
        await waitFor(async () => {
          for (let m = await channel.get(queue, { noAck: true }); m; m = await channel.get(queue, { noAck: true })) topics.push((JSON.parse(m.content.toString()) as OperatorEvent).topic)
          return topics.length === 5
        }, 10_000, 'five operator events on the queue')
        expect(count(topics)).toEqual({ 'alert.destination.consecutive_failure': 4, 'alert.destination.disabled': 1 })
      } finally {
        await connection.close()
      }
    })

    /** Two failures in a row of a tenant's webhook with `consecutiveFailures: 2`: four levels and the disable. */
    async function failTwice(outflow: Outflow): Promise<void> {
      await outflow.upsertTenant('acme', {})
      await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/always-500` } })
      for (let i = 0; i < 2; i++) await outflow.publish({ tenant_id: 'acme', topic: 'x', data: {}, eligible_for_retry: false })
    }

    it.runIf(redisAvailable)('delivers operator events to a Redis stream sink (redis_streams)', async () => {
      const redis = new Redis(redisUrl)
      const stream = `outflow-t-operator:${randomUUID()}`
      try {
        const outflow = await kind.create({ delivery: quick, alerts: { consecutiveFailures: 2 }, operatorEvents: { destination: { type: 'redis_streams', config: { url: redisUrl, stream_key: stream } } } })
        await failTwice(outflow)
        const topics = await waitFor(async () => {
          const rows = await redis.xrange(stream, '-', '+')
          return rows.length === 5 && rows.map(([, fields]) => (JSON.parse(fields[fields.indexOf('data') + 1]!) as OperatorEvent).topic)
        }, 10_000, 'five operator events in the stream')
        expect(count(topics)).toEqual({ 'alert.destination.consecutive_failure': 4, 'alert.destination.disabled': 1 })
      } finally {
        const keys = await redis.keys(`${stream}*`)
        if (keys.length) await redis.del(...keys)
        redis.disconnect()
      }
    })

    it.runIf(natsAvailable)('delivers operator events to a JetStream sink (nats_jetstream)', async () => {
      const server = new URL(natsUrl)
      const servers = `${server.hostname}:${server.port || 4222}`
      const nc = await natsConnect({ servers })
      const jsm = await jetstreamManager(nc)
      const id = randomUUID().replaceAll('-', '')
      await jsm.streams.add({ name: `OUTFLOW_OPS_${id}`, subjects: [`outflow-ops-${id}`] })
      try {
        const outflow = await kind.create({ delivery: quick, alerts: { consecutiveFailures: 2 }, operatorEvents: { destination: { type: 'nats_jetstream', config: { servers, subject: `outflow-ops-${id}` } } } })
        await failTwice(outflow)
        await waitFor(async () => (await jsm.streams.info(`OUTFLOW_OPS_${id}`)).state.messages === 5, 10_000, 'five operator events in the stream')
        const topics: string[] = []
        for await (const m of await (await jetstream(nc).consumers.get(`OUTFLOW_OPS_${id}`)).fetch({ max_messages: 5, expires: 2000 })) {
          topics.push(m.json<OperatorEvent>().topic)
          if (topics.length === 5) break
        }
        expect(count(topics)).toEqual({ 'alert.destination.consecutive_failure': 4, 'alert.destination.disabled': 1 })
      } finally {
        await jsm.streams.delete(`OUTFLOW_OPS_${id}`).catch(() => {})
        await nc.close()
      }
    })

    it('turns the deprecated alerts.callbackUrl into a webhook sink for the alerts', async () => {
      const outflow = await kind.create({ delivery: quick, alerts: { consecutiveFailures: 2, callbackUrl: `${receiver.url}/legacy` } })
      await outflow.upsertTenant('acme', {})
      await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/always-500` } })
      for (let i = 0; i < 2; i++) await outflow.publish({ tenant_id: 'acme', topic: 'x', data: {}, eligible_for_retry: false })
      const { secret } = (await outflow.getDestination('outflow-operator', 'sink')).credentials as { secret: string }
      const events = await waitFor(() => {
        const all = receiver.on('/legacy').map((r) => new Webhook(secret).verify(r.body, r.headers as Record<string, string>) as OperatorEvent)
        return all.length === 5 && all
      }, 10_000, 'four levels and the disable at the legacy URL')
      expect(count(events.map((e) => e.topic))).toEqual({ 'alert.destination.consecutive_failure': 4, 'alert.destination.disabled': 1 })
    })
  })
}

describe('alert defaults', () => {
  it('disable after 100 consecutive failures, with no operator sink unless configured', () => {
    const options = resolveOptions({ storage: {} as never })
    expect(options.alerts).toEqual({ consecutiveFailures: 100, autoDisable: true })
    expect(options.operatorEvents).toBeUndefined()
  })
})
