import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { kafka } from '../../src/destinations/kafka.js'
import { typeSchema } from '../../src/destinations/registry.js'
import { crc32c, errorCodes, recordBatchProblem } from '../fakes/kafka-codec.js'
import { startFakeKafka, type FakeKafka } from '../fakes/kafka-server.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'
import { messageBuilder, publishersFor } from '../support/publishers.js'
import { selfSignedCertificate, startUntrustedTlsServer } from '../support/tls.js'

const execFileAsync = promisify(execFile)

const message = messageBuilder({ destination_id: 'des_kafka', time: new Date('2025-01-02T03:04:05.678Z'), data: { order: 42, note: 'ünïcødé' } })

const { stopped } = installNetworkSentinel('refuse')

describe('the fake broker codec', () => {
  it('computes CRC-32C (the check value of "123456789" is e3069283)', () => {
    expect(crc32c(Buffer.from('123456789')).toString(16)).toBe('e3069283')
  })

  it('refuses a batch whose CRC does not match its bytes', () => {
    const batch = Buffer.alloc(61)
    batch.writeInt32BE(49, 8)
    batch.writeInt8(2, 16)
    batch.writeUInt32BE(crc32c(batch.subarray(21)), 17)
    expect(recordBatchProblem(batch)).toBeNull()
    batch[40] = 1
    expect(recordBatchProblem(batch)).toMatch(/CRC32C mismatch/)
  })
})

describe('kafka destination', () => {
  let broker: FakeKafka
  const publishers = publishersFor(kafka, { id: 'des_kafka', config: () => ({ brokers: broker.broker, topic: 'orders' }) })

  beforeAll(async () => {
    broker = await startFakeKafka({ topics: { orders: 3, audit: 1, flaky: 1, degraded: 1 } })
  })
  afterAll(async () => {
    await publishers.closeAll()
    await broker.close()
  })

  const recordsOf = (id: string) => broker.log.filter((r) => r.headers['event-id'] === id)

  describe('config', () => {
    const valid = (config: unknown) => v.safeParse(kafka.configSchema, config).success
    it('takes comma-separated host:port brokers, a topic, an optional key template, TLS and SASL mechanism', () => {
      expect(valid({ brokers: 'a.example.com:9092, b.example.com:9093', topic: 'orders', key_template: 'data.customer', tls: true, sasl_mechanism: 'scram-sha-512' })).toBe(true)
      expect(valid({ brokers: '[::1]:9092', topic: 'orders' })).toBe(true)
    })
    it.each([
      [{ brokers: 'kafka.example.com', topic: 'orders' }, 'brokers'],
      [{ brokers: 'kafka://kafka.example.com:9092', topic: 'orders' }, 'brokers'],
      [{ brokers: 'kafka.example.com:99999', topic: 'orders' }, 'brokers'],
      [{ brokers: 'kafka.example.com:9092', topic: 'has space' }, 'topic'],
      [{ brokers: 'kafka.example.com:9092', topic: 'orders', key_template: 'data.[' }, 'key_template'],
      [{ brokers: 'kafka.example.com:9092', topic: 'orders', sasl_mechanism: 'gssapi' }, 'sasl_mechanism'],
      [{ brokers: 'kafka.example.com:9092', topic: 'orders', extra: 1 }, 'extra'],
    ])('rejects %j naming %s', (config, field) => {
      const result = v.safeParse(kafka.configSchema, config)
      expect(result.success).toBe(false)
      expect(result.issues!.map((i) => v.getDotPath(i))).toContain(field)
    })
    it('needs a username and password with a SASL mechanism, and a mechanism with them', () => {
      expect(kafka.validate!({ brokers: 'k:9092', topic: 't', sasl_mechanism: 'plain' }, {})).toEqual({
        'credentials.username': 'required with sasl_mechanism plain',
        'credentials.password': 'required with sasl_mechanism plain',
      })
      expect(kafka.validate!({ brokers: 'k:9092', topic: 't' }, { username: 'u', password: 'p' })).toEqual({ 'config.sasl_mechanism': 'required when a username or password is given' })
      expect(kafka.validate!({ brokers: 'k:9092', topic: 't' }, {})).toBeUndefined()
    })
    it('names its optional package in the instructions of /destination-types', () => {
      expect(typeSchema(kafka).instructions).toContain('npm install kafkajs')
    })
    it('shows the topic as target and a kafka:// URL of the first broker', () => {
      expect(kafka.target({ brokers: 'a:9092,b:9092', topic: 'orders' })).toBe('orders')
      expect(kafka.targetUrl!({ brokers: 'a:9092,b:9092', topic: 'orders' })).toBe('kafka://a:9092/orders')
    })
  })

  describe('delivery', () => {
    it('produces one message: value = data JSON, headers = metadata, key = event id, timestamp = event time, acks=all from an idempotent producer', async () => {
      const publisher = await publishers.open()
      const m = message()
      const result = await publisher.publish(m)
      expect(result.ok).toBe(true)
      const [record, ...more] = recordsOf(m.id)
      expect(more).toEqual([])
      expect(record).toMatchObject({ topic: 'orders', key: m.id, headers: m.metadata, timestamp: m.time.getTime(), acks: -1 })
      expect(JSON.parse(record!.value!)).toEqual(m.data)
      // Idempotence: a producer id from InitProducerId and a sequence number on the batch.
      expect(record!.producerId).toBeGreaterThanOrEqual(1000n)
      expect(record!.sequence).toBe(0)
      expect(broker.requests).toEqual(expect.arrayContaining(['ApiVersions', 'Metadata', 'InitProducerId', 'Produce']))
      expect(JSON.parse(result.response_body!)).toEqual({ topic: 'orders', partition: record!.partition, offset: String(record!.offset), key: m.id })
    })

    it('keys messages by the key template', async () => {
      const publisher = await publishers.open({ key_template: "join(':', [topic, data.customer])" })
      const m = message({ data: { customer: 'cus_7' } })
      expect((await publisher.publish(m)).ok).toBe(true)
      expect(recordsOf(m.id)[0]!.key).toBe('order.created:cus_7')
    })

    it('keys an ordered destination by its FIFO ordering key (the destination id for a destination-wide sequence), so a sequence stays in one partition', async () => {
      const publisher = await publishers.open()
      const sequence = [message({ ordering_key: 'cus_9' }), message({ ordering_key: 'cus_9' }), message({ ordering_key: 'cus_9' })]
      for (const m of sequence) expect((await publisher.publish(m)).ok).toBe(true)
      const records = sequence.map((m) => recordsOf(m.id)[0]!)
      expect(records.map((r) => r.key)).toEqual(['cus_9', 'cus_9', 'cus_9'])
      expect(new Set(records.map((r) => r.partition)).size).toBe(1)
      expect(records.map((r) => r.offset)).toEqual([...records.map((r) => r.offset)].sort((a, b) => a - b))
      const whole = message({ ordering_key: '' })
      expect((await publisher.publish(whole)).ok).toBe(true)
      expect(recordsOf(whole.id)[0]!.key).toBe('des_kafka')
    })

    it('reports a key template that fails on an event as configuration, sending nothing', async () => {
      const publisher = await publishers.open({ key_template: 'data.missing' })
      const m = message()
      expect(await publisher.publish(m)).toMatchObject({ ok: false, error_kind: 'configuration', error: expect.stringContaining('key_template') })
      expect(recordsOf(m.id)).toEqual([])
    })

    it('reuses its connections across publishes, and close() closes them', async () => {
      const own = await startFakeKafka({ topics: ['orders'] })
      try {
        const publisher = await publishers.open({ brokers: own.broker })
        expect((await publisher.publish(message())).ok).toBe(true)
        const opened = own.connections.opened
        expect((await publisher.publish(message())).ok).toBe(true)
        expect((await publisher.publish(message())).ok).toBe(true)
        expect(own.connections.opened).toBe(opened)
        expect(own.log.map((r) => r.sequence)).toEqual([0, 1, 2])
        expect(new Set(own.log.map((r) => r.producerId)).size).toBe(1)
        expect(own.requests.filter((r) => r === 'InitProducerId')).toHaveLength(1)
        await publisher.close()
        await vi.waitFor(() => expect(own.connections.closed).toBe(own.connections.opened))
        expect(await publisher.publish(message())).toMatchObject({ ok: false })
      } finally {
        await own.close()
      }
    })

    it('writes a batch once when its acknowledgement is lost and the producer re-sends it (idempotent sequence numbers)', async () => {
      const own = await startFakeKafka({ topics: ['orders'] })
      try {
        const publisher = await publishers.open({ brokers: own.broker })
        expect((await publisher.publish(message())).ok).toBe(true)
        own.dropAfterAppend('orders')
        const m = message()
        expect(await publisher.publish(m)).toMatchObject({ ok: true })
        expect(own.requests.filter((r) => r === 'Produce')).toHaveLength(3)
        expect(own.log.filter((r) => r.headers['event-id'] === m.id)).toHaveLength(1)
        expect(own.log.map((r) => r.sequence)).toEqual([0, 1])
      } finally {
        await own.close()
      }
    })

    it.each(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const)('authenticates with SASL %s', async (mechanism) => {
      const secured = await startFakeKafka({ topics: ['orders'], sasl: { mechanism, username: 'outflow', password: 'kafka-password-1' } })
      try {
        const publisher = await publishers.open({ brokers: secured.broker, sasl_mechanism: mechanism.toLowerCase() }, { credentials: { username: 'outflow', password: 'kafka-password-1' } })
        const m = message()
        expect(await publisher.publish(m)).toMatchObject({ ok: true })
        expect(secured.log.map((r) => r.headers['event-id'])).toEqual([m.id])
        expect(secured.requests.slice(0, 3)).toEqual(['ApiVersions', 'SaslHandshake', 'SaslAuthenticate'])
      } finally {
        await secured.close()
      }
    })
  })

  describe('batches (one send of several messages)', () => {
    const batch = (count: number, extra: Record<string, unknown> = {}) => Array.from({ length: count }, (_, i) => message({ data: { i, ...extra } }))
    const produces = () => broker.requests.filter((r) => r === 'Produce').length

    it('produces a batch in one Produce request, each message as a single publish makes it, in order on its partition', async () => {
      const publisher = await publishers.open({ topic: 'audit' })
      const before = produces()
      const messages = batch(5)
      const results = await publisher.publishBatch(messages)
      expect(results.every((r) => r.ok)).toBe(true)
      expect(produces() - before).toBe(1)
      const records = messages.map((m) => recordsOf(m.id))
      expect(records.every((r) => r.length === 1)).toBe(true)
      const logged = records.map((r) => r[0]!)
      expect(logged.map((r) => r.offset)).toEqual(logged.map((_, i) => logged[0]!.offset + i))
      expect(logged[2]).toMatchObject({ topic: 'audit', key: messages[2]!.id, headers: messages[2]!.metadata, timestamp: messages[2]!.time.getTime(), acks: -1 })
      expect(JSON.parse(logged[2]!.value!)).toEqual(messages[2]!.data)
      expect(JSON.parse(results[2]!.response_body!)).toEqual({ topic: 'audit', partition: logged[2]!.partition, offset: String(logged[2]!.offset), key: messages[2]!.id })
    })

    it('splits at 1,000 messages per send; a message whose key template fails fails alone', async () => {
      const publisher = await publishers.open({ topic: 'audit' })
      const before = produces()
      expect((await publisher.publishBatch(batch(1001))).every((r) => r.ok)).toBe(true)
      expect(produces() - before).toBe(2)
      const keyed = await publishers.open({ topic: 'audit', key_template: 'data.customer' })
      const messages = batch(3).map((m, i) => (i === 1 ? m : { ...m, data: { customer: `cus_${i}` } }))
      expect((await keyed.publishBatch(messages)).map((r) => [r.ok, r.error_kind])).toEqual([
        [true, undefined],
        [false, 'configuration'],
        [true, undefined],
      ])
      expect(recordsOf(messages[1]!.id)).toEqual([])
    })

    it('fails every message of a send the broker refuses, and of an aborted deadline', async () => {
      const publisher = await publishers.open({ topic: 'audit' })
      broker.failProduce('audit', errorCodes.MESSAGE_TOO_LARGE, 1)
      const messages = batch(3)
      expect((await publisher.publishBatch(messages)).map((r) => r.error_kind)).toEqual(['rejected', 'rejected', 'rejected'])
      expect(messages.flatMap((m) => recordsOf(m.id))).toEqual([])
      const aborted = await publisher.publishBatch(batch(2), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  describe('failures', () => {
    it('rides out a leader election: LEADER_NOT_AVAILABLE is retried within the attempt, and the message is written once', async () => {
      const publisher = await publishers.open({ topic: 'flaky' })
      await publisher.publish(message()) // connected, metadata cached
      broker.failProduce('flaky', errorCodes.LEADER_NOT_AVAILABLE, 1)
      broker.failMetadata('flaky', errorCodes.LEADER_NOT_AVAILABLE, 1)
      const m = message()
      expect(await publisher.publish(m)).toMatchObject({ ok: true })
      expect(recordsOf(m.id)).toHaveLength(1)
    })

    it('reports NOT_ENOUGH_REPLICAS that outlasts the retries as unavailable, with nothing written', async () => {
      const publisher = await publishers.open({ topic: 'degraded' })
      broker.failProduce('degraded', errorCodes.NOT_ENOUGH_REPLICAS, 100)
      const m = message()
      const result = await publisher.publish(m)
      broker.failProduce('degraded', errorCodes.NOT_ENOUGH_REPLICAS, 0)
      expect(result).toMatchObject({ ok: false, error_kind: 'unavailable' })
      expect(result.error).toMatch(/NOT_ENOUGH_REPLICAS|replicas/i)
      expect(recordsOf(m.id)).toEqual([])
      // The broker came back: the same publisher delivers the next attempt.
      expect(await publisher.publish(m)).toMatchObject({ ok: true })
    })

    it('reports a wrong SASL password as authentication, without the password', async () => {
      const secured = await startFakeKafka({ topics: ['orders'], sasl: { mechanism: 'SCRAM-SHA-256', username: 'outflow', password: 'right-password-1' } })
      try {
        const password = 'wrong-password-7f3a'
        const publisher = await publishers.open({ brokers: secured.broker, sasl_mechanism: 'scram-sha-256' }, { credentials: { username: 'outflow', password } })
        const result = await publisher.publish(message())
        expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
        expect(JSON.stringify(result)).not.toContain(password)
        expect(secured.log).toEqual([])
        expect(secured.requests).not.toContain('Produce')
      } finally {
        await secured.close()
      }
    })

    it('reports a topic that does not exist as not_found', async () => {
      const publisher = await publishers.open({ topic: 'missing-topic' })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
      expect(result.error).toContain('missing-topic')
    })

    it('reports a message the broker refuses (MESSAGE_TOO_LARGE) as rejected, not retried within the attempt', async () => {
      const publisher = await publishers.open({ topic: 'audit' })
      broker.failProduce('audit', errorCodes.MESSAGE_TOO_LARGE, 1)
      const m = message()
      const produced = broker.requests.filter((r) => r === 'Produce').length
      const result = await publisher.publish(m)
      expect(result).toMatchObject({ ok: false, error_kind: 'rejected' })
      expect(result.error).toMatch(/MESSAGE_TOO_LARGE|larger than/i)
      expect(broker.requests.filter((r) => r === 'Produce').length).toBe(produced + 1)
      expect(recordsOf(m.id)).toEqual([])
    })

    it('reports a broker that drops the connection as network', async () => {
      const dropping = net.createServer((socket) => socket.destroy())
      await new Promise<void>((resolve) => dropping.listen(0, '127.0.0.1', resolve))
      try {
        const publisher = await publishers.open({ brokers: `127.0.0.1:${(dropping.address() as net.AddressInfo).port}` })
        expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'network' })
        await publisher.close()
      } finally {
        await new Promise<void>((resolve) => dropping.close(() => resolve()))
      }
    })

    it('reports a closed port as connection_refused', async () => {
      const port = await new Promise<number>((resolve) => {
        const server = net.createServer().listen(0, '127.0.0.1', () => {
          const { port } = server.address() as net.AddressInfo
          server.close(() => resolve(port))
        })
      })
      const publisher = await publishers.open({ brokers: `127.0.0.1:${port}` })
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
    })

    it('stops at the attempt deadline of a broker that never answers: timeout', async () => {
      const sockets = new Set<net.Socket>()
      const silent = net.createServer((socket) => {
        sockets.add(socket)
        socket.on('error', () => {})
      })
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
      try {
        const publisher = await publishers.open({ brokers: `127.0.0.1:${(silent.address() as net.AddressInfo).port}` })
        const result = await publisher.publish(message(), { signal: AbortSignal.timeout(300) })
        expect(result).toMatchObject({ ok: false, error_kind: 'timeout' })
        await publisher.close()
      } finally {
        for (const socket of sockets) socket.destroy()
        await new Promise<void>((resolve) => silent.close(() => resolve()))
      }
    })

    it('delivers over TLS to a broker whose certificate the process trusts', async () => {
      // A trusted certificate cannot be added inside this process: a child started with NODE_EXTRA_CA_CERTS delivers.
      const dir = mkdtempSync(join(tmpdir(), 'outflow-kafka-tls-'))
      try {
        const { key, cert } = selfSignedCertificate()
        writeFileSync(join(dir, 'key.pem'), key)
        writeFileSync(join(dir, 'cert.pem'), cert)
        const fixture = join(import.meta.dirname, '../fixtures/kafka-tls-delivery.ts')
        const { stdout } = await execFileAsync(process.execPath, ['--import', 'tsx', fixture, join(dir, 'key.pem'), join(dir, 'cert.pem')], {
          env: { ...process.env, NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') },
          timeout: 60_000,
        })
        const out = JSON.parse(stdout.trim().split('\n').pop()!) as { result: { ok: boolean }; logged: { value: string; id: string }[] }
        expect(out.result).toMatchObject({ ok: true })
        expect(out.logged).toEqual([{ id: 'evt_tls', value: JSON.stringify({ order: 7 }) }])
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }, 90_000)

    it('reports a TLS listener with an untrusted certificate as tls', async () => {
      const tlsServer = await startUntrustedTlsServer()
      try {
        const publisher = await publishers.open({ brokers: `127.0.0.1:${tlsServer.port}`, tls: true })
        expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'tls' })
        expect(tlsServer.connections()).toBeGreaterThan(0)
      } finally {
        await tlsServer.close()
      }
    })

    it('refuses private broker addresses unless private networks are allowed: ssrf, nothing sent', async () => {
      const literal = await publishers.open({ brokers: broker.broker }, { context: { allowPrivateNetworks: false } })
      const before = broker.connections.opened
      expect(await literal.publish(message())).toMatchObject({ ok: false, error_kind: 'ssrf' })
      const named = await publishers.open({ brokers: `localhost:${broker.port}` }, { context: { allowPrivateNetworks: false } })
      const result = await named.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(result.error).toContain('localhost')
      expect(broker.connections.opened).toBe(before)
      expect(stopped).toEqual([])
    })
  })
})
