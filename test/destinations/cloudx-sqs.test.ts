import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cloudxSqs, regionFromQueueUrl } from '../../src/destinations/cloudx-sqs.js'
import { startFakeSqs, type FakeSqs } from '../fakes/sqs-server.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'
import { closedPort, expectOneConnection, messageBuilder, publishersFor } from '../support/publishers.js'

const key = 'AKIAFAKEOUTFLOW00001'
const secret = 'fake-secret-0123456789abcdefghijklmnopqrs'
const message = messageBuilder({
  id: 'evt_1',
  destination_id: 'des_sqs',
  time: new Date('2025-01-02T03:04:05Z'),
  data: { order: 42, items: ['a', 'b'], note: 'ünïcødé' },
})

// Sentinel: a socket connect to anything but loopback is stopped before it reaches the network (no DNS, no packet)
// and fails as ECONNREFUSED. Every stopped host is recorded; a test that does not take them out fails.
const { stopped } = installNetworkSentinel('refuse')

describe('cloudx_sqs destination', () => {
  let sqs: FakeSqs
  const publishers = publishersFor(cloudxSqs, { id: 'des_sqs', credentials: { key, secret } })
  const publisherFor = (config: Record<string, unknown>, credentials?: Record<string, unknown>) => publishers.open(config, { credentials })

  beforeAll(async () => {
    sqs = await startFakeSqs({ accessKeyId: key, secretAccessKey: secret, queues: ['orders', 'orders.fifo'] })
  })
  afterAll(async () => {
    await publishers.closeAll()
    await sqs.close()
  })

  describe('delivery', () => {
    it('sends the data as the JSON body and the metadata as String attributes to the queue', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const before = sqs.messages.length
      const result = await publisher.publish(message())
      expect(result.ok).toBe(true)
      expect(result.response_status_code).toBe(200)
      expect(JSON.parse(result.response_body!).message_id).toMatch(/^[0-9a-f-]{36}$/)
      const sent = sqs.messages[before]!
      expect(sent.queueUrl).toBe(sqs.queueUrl('orders'))
      expect(JSON.parse(sent.body)).toEqual(message().data)
      expect(sent.attributes).toEqual({
        'event-id': { DataType: 'String', StringValue: 'evt_1' },
        topic: { DataType: 'String', StringValue: 'order.created' },
        timestamp: { DataType: 'String', StringValue: '1735787045' },
      })
      expect(sent.accessKeyId).toBe(key)
      expect(sent.userAgent).toContain('outflow/test')
      expect(sent.groupId).toBeUndefined()
    })

    it('keeps the first 10 valid attributes in the given order and skips names SQS rejects', async () => {
      const metadata: Record<string, string> = { 'event-id': 'evt_2', topic: 'order.created', timestamp: '1' }
      Object.assign(metadata, { 'AWS.reserved': 'x', 'has space': 'x', 'a..b': 'x', '.lead': 'x', empty: '' })
      for (let i = 1; i <= 10; i++) metadata[`k${i}`] = `v${i}`
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const before = sqs.messages.length
      expect((await publisher.publish(message({ id: 'evt_2', metadata }))).ok).toBe(true)
      expect(Object.keys(sqs.messages[before]!.attributes)).toEqual(['event-id', 'topic', 'timestamp', 'k1', 'k2', 'k3', 'k4', 'k5', 'k6', 'k7'])
    })

    it('sends FIFO messages in one group per destination, deduplicated by event id', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders.fifo'), endpoint: sqs.endpoint })
      const before = sqs.messages.length
      const result = await publisher.publish(message({ id: 'evt_fifo' }))
      expect(result.ok).toBe(true)
      expect(JSON.parse(result.response_body!).sequence_number).toMatch(/^\d{20}$/)
      expect(sqs.messages[before]).toMatchObject({ queueName: 'orders.fifo', groupId: 'des_sqs', deduplicationId: 'evt_fifo' })
    })

    it('signs with the region parsed from an AWS queue URL, else us-east-1, unless one is configured', async () => {
      const aws = await publisherFor({ queue_url: 'https://sqs.eu-west-2.amazonaws.com/123456789012/orders', endpoint: sqs.endpoint })
      const plain = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const explicit = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint, region: 'ap-south-1' })
      const before = sqs.messages.length
      for (const p of [aws, plain, explicit]) expect((await p.publish(message())).ok).toBe(true)
      expect(sqs.messages.slice(before).map((m) => m.region)).toEqual(['eu-west-2', 'us-east-1', 'ap-south-1'])
    })

    it('uses the queue URL host when no endpoint is configured', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders') })
      const before = sqs.messages.length
      expect((await publisher.publish(message())).ok).toBe(true)
      expect(sqs.messages.length).toBe(before + 1)
    })

    it('sends the session token of temporary credentials', async () => {
      const withToken = await startFakeSqs({ accessKeyId: key, secretAccessKey: secret, queues: ['orders'], sessionToken: 'session-token-xyz' })
      try {
        const ok = await publisherFor({ queue_url: withToken.queueUrl('orders') }, { key, secret, session: 'session-token-xyz' })
        const missing = await publisherFor({ queue_url: withToken.queueUrl('orders') })
        expect((await ok.publish(message())).ok).toBe(true)
        expect(withToken.messages[0]!.sessionToken).toBe('session-token-xyz')
        expect(await missing.publish(message())).toMatchObject({ ok: false, error_kind: 'authentication' })
        await Promise.all([ok.close(), missing.close()])
      } finally {
        await withToken.close()
      }
    })

    it('reuses one client and connection across publishes, and close() releases it', async () => {
      const own = await startFakeSqs({ accessKeyId: key, secretAccessKey: secret, queues: ['orders'] })
      try {
        await expectOneConnection(await publisherFor({ queue_url: own.queueUrl('orders'), endpoint: own.endpoint }), own, message)
      } finally {
        await own.close()
      }
    })
  })

  describe('failures', () => {
    it('reports a missing queue as not_found', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('missing'), endpoint: sqs.endpoint })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found', response_status_code: 400 })
      expect(result.error).toMatch(/QueueDoesNotExist|NonExistentQueue/)
      expect(result.error).toContain('does not exist')
    })

    it('reports an unknown access key as authentication, without the secret in the text', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, { key: 'AKIAUNKNOWNKEY000000', secret })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).toMatch(/InvalidClientTokenId|UnrecognizedClient/)
      expect(JSON.stringify(result)).not.toContain(secret)
    })

    it('reports a wrong secret (signature mismatch) as authentication, without the secret in the text', async () => {
      const wrong = 'wrong-secret-zyxwvutsrqponmlkjihgfedcba'
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, { key, secret: wrong })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).toContain('SignatureDoesNotMatch')
      expect(JSON.stringify(result)).not.toContain(wrong)
    })

    it('reports throttling as throttled and an oversized message as rejected', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      sqs.failNext({ status: 400, type: 'com.amazonaws.sqs#RequestThrottled', queryError: 'RequestThrottled;Sender', message: 'Rate exceeded' })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'throttled' })
      sqs.failNext({
        status: 400,
        type: 'com.amazonaws.sqs#InvalidParameterValue',
        queryError: 'InvalidParameterValue;Sender',
        message: 'One or more parameters are invalid. Reason: Message must be shorter than 1048576 bytes.',
      })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'rejected' })
    })

    it('reports an endpoint that refuses the connection as connection_refused', async () => {
      const port = await closedPort()
      const publisher = await publisherFor({ queue_url: `http://127.0.0.1:${port}/000000000000/orders` })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'connection_refused' })
      expect(result.error).toContain('ECONNREFUSED')
    })
  })

  describe('batches (SendMessageBatch)', () => {
    const throttled = { status: 400, type: 'com.amazonaws.sqs#RequestThrottled', queryError: 'RequestThrottled;Sender', message: 'Rate exceeded' }
    const batch = (count: number, tag: string) => Array.from({ length: count }, (_, i) => message({ id: `evt_${tag}_${i}`, data: { tag, i } }))
    const since = (calls: number, messages: number) => ({ calls: sqs.calls.slice(calls), messages: sqs.messages.slice(messages) })

    it('sends 11 messages in two calls (10 + 1), each once, in order, exactly as single sends would', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const [calls, before] = [sqs.calls.length, sqs.messages.length]
      const messages = batch(11, 'eleven')
      const results = await publisher.publishBatch(messages)
      expect(results.map((r) => r.ok)).toEqual(Array(11).fill(true))
      expect(JSON.parse(results[0]!.response_body!).message_id).toMatch(/^[0-9a-f-]{36}$/)
      const sent = since(calls, before)
      expect(sent.calls).toEqual([
        { action: 'SendMessageBatch', entries: 10 },
        { action: 'SendMessageBatch', entries: 1 },
      ])
      expect(sent.messages.map((m) => JSON.parse(m.body).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      expect(sent.messages[3]!.attributes).toEqual({
        'event-id': { DataType: 'String', StringValue: 'evt_eleven_3' },
        topic: { DataType: 'String', StringValue: 'order.created' },
        timestamp: { DataType: 'String', StringValue: '1735787045' },
      })
      expect(await publisher.publish(messages[3]!)).toMatchObject({ ok: true })
      expect(sqs.messages.at(-1)!.body).toBe(sent.messages[3]!.body)
    })

    it('splits by bytes: three 100 KiB messages go in two calls under 256 KiB; one over 256 KiB alone is refused alone', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const [calls, before] = [sqs.calls.length, sqs.messages.length]
      const big = (i: number, kib: number) => message({ id: `evt_big_${i}`, data: { i, pad: 'x'.repeat(kib * 1024) } })
      const results = await publisher.publishBatch([big(0, 100), big(1, 100), big(2, 300), big(3, 100)])
      expect(results.map((r) => r.ok)).toEqual([true, true, false, true])
      expect(results[2]).toMatchObject({ error_kind: 'rejected', response_status_code: 400 })
      expect(results[2]!.error).toContain('BatchRequestTooLong')
      expect(since(calls, before).calls.map((c) => c.entries)).toEqual([2, 1, 1])
      expect(since(calls, before).messages.map((m) => JSON.parse(m.body).i)).toEqual([0, 1, 3])
    })

    it('keeps the FIFO group and deduplication id of single sends', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders.fifo'), endpoint: sqs.endpoint })
      const before = sqs.messages.length
      const results = await publisher.publishBatch(batch(3, 'fifo'))
      expect(results.every((r) => r.ok && /^\d{20}$/.test(JSON.parse(r.response_body!).sequence_number))).toBe(true)
      expect(sqs.messages.slice(before).map((m) => [m.groupId, m.deduplicationId])).toEqual([
        ['des_sqs', 'evt_fifo_0'],
        ['des_sqs', 'evt_fifo_1'],
        ['des_sqs', 'evt_fifo_2'],
      ])
    })

    it('gives a Failed entry its own result and kind; the others are sent', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const before = sqs.messages.length
      sqs.failEntry('"i":1}', throttled)
      sqs.failEntry('"i":2}', { status: 500, type: 'com.amazonaws.sqs#InternalError', queryError: 'InternalError;Receiver', message: 'We encountered an internal error.' })
      const results = await publisher.publishBatch(batch(4, 'entry'))
      expect(results.map((r) => [r.ok, r.error_kind])).toEqual([
        [true, undefined],
        [false, 'throttled'],
        [false, 'http_5xx'],
        [true, undefined],
      ])
      expect(results[1]).toMatchObject({ response_status_code: 200, error: 'RequestThrottled: Rate exceeded' })
      expect(sqs.messages.slice(before).map((m) => JSON.parse(m.body).i)).toEqual([0, 3])
    })

    it('on a FIFO queue, does not send the calls after a failed entry: nothing overtakes it', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders.fifo'), endpoint: sqs.endpoint })
      const [calls, before] = [sqs.calls.length, sqs.messages.length]
      sqs.failEntry('"i":9}', throttled)
      const results = await publisher.publishBatch(batch(12, 'stop'))
      expect(results.map((r) => r.ok)).toEqual([...Array(9).fill(true), false, false, false])
      expect(results[11]).toMatchObject({ error_kind: 'throttled' })
      expect(results[11]!.error).toContain('not sent')
      expect(sqs.calls.length - calls).toBe(1)
      expect(sqs.messages.length - before).toBe(9)
    })

    it('fails every entry of a call the service refuses whole, and of an unknown key, with that kind', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      sqs.failNext(throttled)
      expect((await publisher.publishBatch(batch(3, 'whole'))).map((r) => r.error_kind)).toEqual(['throttled', 'throttled', 'throttled'])
      const wrongKey = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, { key: 'AKIAUNKNOWNKEY000000', secret })
      const results = await wrongKey.publishBatch(batch(2, 'auth'))
      expect(results.map((r) => r.error_kind)).toEqual(['authentication', 'authentication'])
      expect(JSON.stringify(results)).not.toContain(secret)
      expect(await publisherFor({ queue_url: sqs.queueUrl('missing'), endpoint: sqs.endpoint }).then((p) => p.publishBatch(batch(2, 'nf')))).toMatchObject([{ error_kind: 'not_found' }, { error_kind: 'not_found' }])
    })

    it('reports every message of an aborted batch as a timeout, and refuses a private endpoint without a request', async () => {
      const publisher = await publisherFor({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint })
      const results = await publisher.publishBatch(batch(2, 'abort'), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(results.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
      const guarded = await publishers.open({ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, { context: { allowPrivateNetworks: false } })
      const calls = sqs.calls.length
      expect((await guarded.publishBatch(batch(2, 'ssrf'))).map((r) => r.error_kind)).toEqual(['ssrf', 'ssrf'])
      expect(sqs.calls.length).toBe(calls)
    })
  })

  describe('private networks', () => {
    async function guardedPublish(config: Record<string, unknown>) {
      const publisher = await publishers.open(config, { context: { allowPrivateNetworks: false } })
      return publisher.publish(message())
    }

    it('refuses the local fake by IP literal, in the endpoint or the queue URL, without a request', async () => {
      const before = { messages: sqs.messages.length, connections: sqs.connections.opened }
      for (const config of [{ queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, { queue_url: sqs.queueUrl('orders') }]) {
        const result = await guardedPublish(config)
        expect(result, JSON.stringify(config)).toMatchObject({ ok: false, error_kind: 'ssrf' })
        expect(result.error).toContain('127.0.0.1')
      }
      expect({ messages: sqs.messages.length, connections: sqs.connections.opened }).toEqual(before)
    })

    it('refuses the local fake by name after DNS, at connect time, without a request or the secret in the text', async () => {
      const local = sqs.endpoint.replace('127.0.0.1', 'localhost')
      const before = { messages: sqs.messages.length, connections: sqs.connections.opened }
      for (const config of [{ queue_url: `${local}/000000000000/orders`, endpoint: local }, { queue_url: `${local}/000000000000/orders` }]) {
        const result = await guardedPublish(config)
        expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
        expect(result.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/)
        expect(JSON.stringify(result)).not.toContain(secret)
      }
      expect({ messages: sqs.messages.length, connections: sqs.connections.opened }).toEqual(before)
    })

    it.each([
      ['a 10.x endpoint', { queue_url: 'http://10.0.0.1:4566/000000000000/orders', endpoint: 'http://10.0.0.1:4566' }],
      ['a metadata-address queue URL', { queue_url: 'http://169.254.169.254/000000000000/orders' }],
      ['an IPv6 metadata endpoint', { queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders', endpoint: 'http://[fd00:ec2::254]' }],
      ['a private queue URL next to a public endpoint', { queue_url: 'http://192.168.1.10/000000000000/orders', endpoint: 'https://sqs.us-east-1.amazonaws.com' }],
    ])('refuses %s without attempting a connection', async (_name, config) => {
      expect(await guardedPublish(config)).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(stopped).toEqual([])
    })

    it('does not refuse a public AWS queue URL: the attempt goes on to the socket (stopped here by the sentinel)', async () => {
      const result = await guardedPublish({ queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' })
      expect(result).toMatchObject({ ok: false, error_kind: 'connection_refused' })
      expect(stopped.splice(0)).toEqual(['sqs.us-east-1.amazonaws.com'])
    })
  })

  describe('schemas', () => {
    const config = (input: unknown) => v.safeParse(cloudxSqs.configSchema, input)
    const credentials = (input: unknown) => v.safeParse(cloudxSqs.credentialsSchema, input)

    it('accepts a queue URL with an optional region and endpoint', () => {
      expect(config({ queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' }).success).toBe(true)
      expect(config({ queue_url: 'http://localhost:4566/000000000000/jobs.fifo', region: 'eu-central-1', endpoint: 'http://localhost:4566' }).success).toBe(true)
    })

    it('rejects a missing queue_url, an unexpected field, a bad URL, region or endpoint', () => {
      expect(config({}).success).toBe(false)
      expect(config({ queue_url: 'https://sqs.us-east-1.amazonaws.com/1/orders', queue: 'x' }).success).toBe(false)
      expect(config({ queue_url: 'not a url' }).success).toBe(false)
      expect(config({ queue_url: 'ftp://sqs.us-east-1.amazonaws.com/1/orders' }).success).toBe(false)
      expect(config({ queue_url: 'https://sqs.us-east-1.amazonaws.com/' }).success).toBe(false)
      expect(config({ queue_url: 'https://AKIA:secret@sqs.us-east-1.amazonaws.com/1/orders' }).success).toBe(false)
      expect(config({ queue_url: 'https://sqs.us-east-1.amazonaws.com/1/orders', region: 'US East' }).success).toBe(false)
      expect(config({ queue_url: 'https://sqs.us-east-1.amazonaws.com/1/orders', endpoint: 'localhost:4566' }).success).toBe(false)
    })

    it('requires key and secret, allows a session token and nothing else', () => {
      expect(credentials({ key, secret }).success).toBe(true)
      expect(credentials({ key, secret, session: 'tok' }).success).toBe(true)
      expect(credentials({ key }).success).toBe(false)
      expect(credentials({ secret }).success).toBe(false)
      expect(credentials({ key, secret, region: 'us-east-1' }).success).toBe(false)
      expect(credentials({ key: '', secret }).success).toBe(false)
    })

    it('describes every accepted field, marking the secret and session token sensitive', () => {
      expect(cloudxSqs.config_fields.map((f) => f.key)).toEqual(['queue_url', 'region', 'endpoint'])
      expect(cloudxSqs.credential_fields.map((f) => [f.key, f.sensitive, f.required])).toEqual([
        ['key', false, true],
        ['secret', true, true],
        ['session', true, false],
      ])
      expect(cloudxSqs.icon).toMatch(/^<svg[\s\S]*<\/svg>$/)
      expect(cloudxSqs.instructions).toContain('SendMessage')
    })

    it('names the queue as target and the queue URL as target URL', () => {
      const queueUrl = 'https://sqs.us-east-1.amazonaws.com/123456789012/orders'
      expect(cloudxSqs.target({ queue_url: queueUrl })).toBe('orders')
      expect(cloudxSqs.targetUrl?.({ queue_url: queueUrl })).toBe(queueUrl)
    })

    it('parses the region of AWS queue hosts only', () => {
      expect(regionFromQueueUrl('https://sqs.eu-west-1.amazonaws.com/1/q')).toBe('eu-west-1')
      expect(regionFromQueueUrl('https://ap-northeast-2.queue.amazonaws.com/1/q')).toBe('ap-northeast-2')
      expect(regionFromQueueUrl('https://sqs.cn-north-1.amazonaws.com.cn/1/q')).toBe('cn-north-1')
      expect(regionFromQueueUrl('http://localhost:4566/000000000000/q')).toBeUndefined()
    })
  })
})
