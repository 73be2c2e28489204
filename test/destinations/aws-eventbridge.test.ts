import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { awsEventbridge } from '../../src/destinations/aws-eventbridge.js'
import { typeSchema } from '../../src/destinations/registry.js'
import { startFakeEventBridge, type FakeEventBridge } from '../fakes/eventbridge-server.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'
import { closedPort, expectOneConnection, messageBuilder, publishersFor } from '../support/publishers.js'

const key = 'AKIAFAKEOUTFLOWEB001'
const secret = 'fake-eventbridge-secret-0123456789abcdef'
const message = messageBuilder({ destination_id: 'des_eb', time: new Date('2025-01-02T03:04:05Z'), data: { order: 42, note: 'ünïcødé' } })

const { stopped } = installNetworkSentinel('refuse')

describe('aws_eventbridge destination', () => {
  let bus: FakeEventBridge
  const publishers = publishersFor(awsEventbridge, { id: 'des_eb', config: () => ({ event_bus: 'orders', endpoint: bus.endpoint, source: 'com.example.shop' }), credentials: { key, secret } })

  beforeAll(async () => {
    bus = await startFakeEventBridge({ accessKeyId: key, secretAccessKey: secret, buses: ['orders', 'default'] })
  })
  afterAll(async () => {
    await publishers.closeAll()
    await bus.close()
  })

  const eventsOf = (id: string) => bus.events.filter((e) => (JSON.parse(e.detail) as { metadata: Record<string, string> }).metadata['event-id'] === id)

  describe('config', () => {
    it.each([
      [{ event_bus: 'orders', source: 'com.example.shop' }],
      [{ event_bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/orders', source: 'shop', region: 'eu-west-1', endpoint: 'https://events.example.com' }],
    ])('accepts %j', (config) => expect(v.safeParse(awsEventbridge.configSchema, config).success).toBe(true))
    it.each([
      [{ event_bus: 'orders' }, 'source'],
      [{ event_bus: 'orders', source: 'aws.events' }, 'source'],
      [{ event_bus: 'has space', source: 'shop' }, 'event_bus'],
      [{ event_bus: 'orders', source: 'shop', region: 'Europe' }, 'region'],
      [{ event_bus: 'orders', source: 'shop', endpoint: 'ftp://x' }, 'endpoint'],
    ])('rejects %j naming %s', (config, field) => {
      const result = v.safeParse(awsEventbridge.configSchema, config)
      expect(result.success).toBe(false)
      expect(result.issues!.map((i) => v.getDotPath(i))).toContain(field)
    })
    it('names its optional package in the instructions of /destination-types', () => {
      expect(typeSchema(awsEventbridge).instructions).toContain('npm install @aws-sdk/client-eventbridge')
    })
    it('shows the bus name as target and its console page as URL', () => {
      expect(awsEventbridge.target({ event_bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/orders', source: 's' })).toBe('orders')
      expect(awsEventbridge.targetUrl!({ event_bus: 'arn:aws:events:eu-west-1:123456789012:event-bus/orders', source: 's' })).toBe(
        'https://eu-west-1.console.aws.amazon.com/events/home?region=eu-west-1#/eventbus/orders',
      )
    })
  })

  describe('delivery', () => {
    it('puts one entry: the destination source, the topic as detail-type, the event time, detail = { metadata, data }, signed for events', async () => {
      const publisher = await publishers.open()
      const m = message()
      const result = await publisher.publish(m)
      expect(result).toMatchObject({ ok: true, response_status_code: 200 })
      const [event, ...more] = eventsOf(m.id)
      expect(more).toEqual([])
      expect(event).toMatchObject({ bus: 'orders', source: 'com.example.shop', detailType: 'order.created', time: m.time.getTime() / 1000, region: 'us-east-1', service: 'events', accessKeyId: key })
      expect(JSON.parse(event!.detail)).toEqual({ metadata: m.metadata, data: m.data })
      expect(event!.userAgent).toContain('outflow/test')
      expect(JSON.parse(result.response_body!)).toEqual({ event_id: event!.eventId, event_bus: 'orders' })
    })

    it('accepts the bus as an ARN and signs for its region', async () => {
      const publisher = await publishers.open({ event_bus: 'arn:aws:events:eu-central-1:123456789012:event-bus/orders' })
      const m = message()
      expect((await publisher.publish(m)).ok).toBe(true)
      expect(eventsOf(m.id)[0]).toMatchObject({ bus: 'orders', region: 'eu-central-1' })
    })

    it('reuses one client and connection across publishes, and close() releases it', async () => {
      const own = await startFakeEventBridge({ accessKeyId: key, secretAccessKey: secret, buses: ['orders'] })
      try {
        const counted = { messages: own.events, connections: own.connections }
        await expectOneConnection(await publishers.open({ endpoint: own.endpoint }), counted, message)
      } finally {
        await own.close()
      }
    })
  })

  describe('batches (PutEvents with several entries)', () => {
    const batch = (count: number, tag: string, pad = '') => Array.from({ length: count }, (_, i) => message({ data: { tag, i, pad } }))

    it('puts 11 entries in two calls (10 + 1), each once, in order, as single publishes would', async () => {
      const publisher = await publishers.open()
      const [calls, before] = [bus.calls.length, bus.events.length]
      const messages = batch(11, 'eleven')
      const results = await publisher.publishBatch(messages)
      expect(results.every((r) => r.ok && r.response_status_code === 200 && JSON.parse(r.response_body!).event_bus === 'orders')).toBe(true)
      expect(bus.calls.slice(calls)).toEqual([10, 1])
      const sent = bus.events.slice(before)
      expect(sent.map((e) => JSON.parse(e.detail).data.i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      expect(sent[4]).toMatchObject({ bus: 'orders', source: 'com.example.shop', detailType: 'order.created', detail: JSON.stringify({ metadata: messages[4]!.metadata, data: messages[4]!.data }) })
    })

    it('splits at 256 KB per call; an entry over it fails alone before sending', async () => {
      const publisher = await publishers.open()
      const [calls, before] = [bus.calls.length, bus.events.length]
      const messages = [...batch(3, 'split', 'x'.repeat(100 * 1024)), ...batch(1, 'huge', 'x'.repeat(300 * 1024)), ...batch(1, 'tail')]
      const results = await publisher.publishBatch(messages)
      expect(results.map((r) => [r.ok, r.error_kind])).toEqual([[true, undefined], [true, undefined], [true, undefined], [false, 'rejected'], [true, undefined]])
      expect(bus.calls.slice(calls)).toEqual([2, 2])
      expect(bus.events.slice(before).map((e) => JSON.parse(e.detail).data.tag)).toEqual(['split', 'split', 'split', 'tail'])
    })

    it('gives a failed entry its own result; a call refused whole fails every entry; an aborted one times out', async () => {
      const publisher = await publishers.open()
      const before = bus.events.length
      bus.failNextEntry({ code: 'ThrottlingException', message: 'Rate exceeded' })
      const results = await publisher.publishBatch(batch(3, 'entry'))
      expect(results.map((r) => [r.ok, r.error_kind])).toEqual([[false, 'throttled'], [true, undefined], [true, undefined]])
      expect(results[0]!.error).toContain('ThrottlingException: Rate exceeded')
      expect(bus.events.slice(before).map((e) => JSON.parse(e.detail).data.i)).toEqual([1, 2])
      bus.failNext({ status: 500, type: 'InternalException', message: 'internal error' })
      expect((await publisher.publishBatch(batch(2, 'whole'))).map((r) => r.error_kind)).toEqual(['unavailable', 'unavailable'])
      const aborted = await publisher.publishBatch(batch(2, 'abort'), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  describe('failures', () => {
    it('treats a 200 with FailedEntryCount 1 as a failed attempt, kind from the entry error code', async () => {
      const publisher = await publishers.open()
      for (const [code, kind] of [
        ['ThrottlingException', 'throttled'],
        ['InternalFailure', 'unavailable'],
        ['AccessDeniedException', 'authentication'],
        ['InvalidArgument', 'rejected'],
      ] as const) {
        bus.failNextEntry({ code, message: `injected ${code}` })
        const m = message()
        const result = await publisher.publish(m)
        expect(result).toMatchObject({ ok: false, error_kind: kind, response_status_code: 200 })
        expect(result.error).toContain(code)
        expect(JSON.parse(result.response_body!)).toEqual({ failed_entry_count: 1, error_code: code, error_message: `injected ${code}` })
        expect(eventsOf(m.id)).toEqual([])
      }
    })

    it('reports a bus that does not exist as not_found', async () => {
      const publisher = await publishers.open({ event_bus: 'nope' })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
      expect(result.error).toContain('nope')
    })

    it('reports a wrong secret as authentication (the signature does not match), without the secret', async () => {
      const wrong = 'wrong-secret-value-abcdefghijklmnop'
      const publisher = await publishers.open({}, { credentials: { key, secret: wrong } })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).toMatch(/InvalidSignatureException/)
      expect(JSON.stringify(result)).not.toContain(wrong)
    })

    it('reports a request-level throttle and a 5xx by their kinds', async () => {
      const publisher = await publishers.open()
      bus.failNext({ status: 400, type: 'ThrottlingException', message: 'Rate exceeded' })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'throttled' })
      bus.failNext({ status: 500, type: 'InternalException', message: 'internal' })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'unavailable', response_status_code: 500 })
    })

    it('refuses an entry over 256 KB before sending it: rejected', async () => {
      const publisher = await publishers.open()
      const m = message({ data: { blob: 'x'.repeat(256 * 1024) } })
      expect(await publisher.publish(m)).toMatchObject({ ok: false, error_kind: 'rejected' })
      expect(eventsOf(m.id)).toEqual([])
    })

    it('reports a closed port as connection_refused', async () => {
      const publisher = await publishers.open({ endpoint: `http://127.0.0.1:${await closedPort()}` })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
    })

    it('stops at the attempt deadline through the SDK abort signal: timeout, and the next attempt goes through', async () => {
      const publisher = await publishers.open()
      bus.stallNext()
      const m = message()
      const result = await publisher.publish(m, { signal: AbortSignal.timeout(300) })
      expect(result).toMatchObject({ ok: false, error_kind: 'timeout' })
      expect(eventsOf(m.id)).toEqual([])
      expect(await publisher.publish(m)).toMatchObject({ ok: true })
      expect(eventsOf(m.id)).toHaveLength(1)
    })

    it('refuses a private endpoint unless private networks are allowed: ssrf', async () => {
      const literal = await publishers.open({}, { context: { allowPrivateNetworks: false } })
      expect(await literal.publish(message())).toMatchObject({ ok: false, error_kind: 'ssrf' })
      const named = await publishers.open({ endpoint: bus.endpoint.replace('127.0.0.1', 'localhost') }, { context: { allowPrivateNetworks: false } })
      expect(await named.publish(message())).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(stopped).toEqual([])
    })
  })
})
