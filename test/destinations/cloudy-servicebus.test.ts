import * as v from 'valibot'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { cloudyServicebus } from '../../src/destinations/cloudy-servicebus.js'
import type { PublisherContext } from '../../src/destinations/types.js'
import { startFakeServiceBus, type FakeServiceBus } from '../fakes/servicebus-server.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'
import { closedPort, expectOneConnection, messageBuilder, publishersFor, stubDns } from '../support/publishers.js'

const keyName = 'RootManageSharedAccessKey'
const key = 'fakeKey0123456789abcdefghijklmnopqrstuvwxyzAB='
const message = messageBuilder({
  id: 'evt_1',
  destination_id: 'des_sb',
  time: new Date('2025-01-02T03:04:05Z'),
  data: { order: 42, items: ['a', 'b'], note: 'ünïcødé' },
  metadata: { region: 'eu' },
})

// Sentinel: a socket connect to anything but loopback is stopped before it reaches the network (no DNS, no packet)
// and fails as ECONNREFUSED. Every stopped host is recorded; a test that does not take them out fails.
const { stopped } = installNetworkSentinel('refuse')
// Registered after the sentinel, so (hooks run as a stack) mocks are restored before its check.
afterEach(() => {
  vi.restoreAllMocks()
})

describe('cloudy_servicebus destination', () => {
  let sb: FakeServiceBus
  const publishers = publishersFor(cloudyServicebus, { id: 'des_sb' })
  const publisherFor = (name: string, connectionString = sb.connectionString(), context?: Partial<PublisherContext>) =>
    publishers.open({ name }, { credentials: { connection_string: connectionString }, context })

  beforeAll(async () => {
    sb = await startFakeServiceBus({ keyName, key, entities: ['orders', 'events-topic'] })
  })
  afterAll(async () => {
    await publishers.closeAll()
    await sb.close()
  })

  describe('delivery', () => {
    it('sends the data as a JSON body with id, subject and metadata as application properties', async () => {
      const publisher = await publisherFor('orders')
      const before = sb.messages.length
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: true })
      const sent = sb.messages[before]!
      expect(sent).toMatchObject({ entity: 'orders', messageId: 'evt_1', subject: 'order.created', contentType: 'application/json' })
      expect(sent.body).toEqual(message().data)
      expect(sent.applicationProperties).toEqual(message().metadata)
      // The link was authorized with a SAS token for exactly this entity.
      expect(sb.tokens).toContainEqual({ audience: `sb://127.0.0.1:${sb.port}/orders`, type: 'servicebus.windows.net:sastoken', status: 202 })
    })

    it('sends to a topic the same way', async () => {
      const publisher = await publisherFor('events-topic')
      const before = sb.messages.length
      expect((await publisher.publish(message({ id: 'evt_topic' }))).ok).toBe(true)
      expect(sb.messages[before]).toMatchObject({ entity: 'events-topic', messageId: 'evt_topic' })
    })

    it('reuses one connection across publishes, and close() ends it', async () => {
      const own = await startFakeServiceBus({ keyName, key, entities: ['orders'] })
      try {
        await expectOneConnection(await publisherFor('orders', own.connectionString()), own, message)
      } finally {
        await own.close()
      }
    })
  })

  describe('failures', () => {
    it('reports an unknown queue or topic as not_found', async () => {
      const publisher = await publisherFor('missing')
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
      expect(result.error).toContain('MessagingEntityNotFound')
      expect(result.error).toContain('missing')
    })

    it('reports a wrong key as authentication, without the key in the text', async () => {
      const wrong = 'wrongKey0123456789abcdefghijklmnopqrstuvwxyz='
      const publisher = await publisherFor('orders', sb.connectionString({ key: wrong }))
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).toContain('UnauthorizedAccess')
      expect(JSON.stringify(result)).not.toContain(wrong)
      expect(sb.tokens.at(-1)).toMatchObject({ status: 401 })
    })

    it('reports a busy server as throttled', async () => {
      const publisher = await publisherFor('orders')
      sb.rejectNext({ condition: 'com.microsoft:server-busy', description: 'The server is busy. Please try again later.' })
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'throttled' })
      expect(result.error).toContain('ServiceBusy')
    })

    it('reports a namespace that refuses the connection as connection_refused', async () => {
      const port = await closedPort()
      const publisher = await publisherFor('orders', `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`)
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'connection_refused' })
      expect(JSON.stringify(result)).not.toContain(key)
    })

    it('reports an EntityPath that names another entity as configuration', async () => {
      const publisher = await publisherFor('orders', `${sb.connectionString()};EntityPath=other`)
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'configuration' })
    })
  })

  describe('batches (message batches of the link size)', () => {
    const batch = (count: number, tag: string, pad = '') => Array.from({ length: count }, (_, i) => message({ id: `evt_${tag}_${i}`, data: { tag, i, pad } }))
    const sentSince = (transfers: number, messages: number) => ({ transfers: sb.batches.slice(transfers), messages: sb.messages.slice(messages) })

    it('sends a batch as one message batch, each message as a single send would, in order', async () => {
      const publisher = await publisherFor('orders')
      const [transfers, before] = [sb.batches.length, sb.messages.length]
      const messages = batch(5, 'five')
      const results = await publisher.publishBatch(messages)
      expect(results).toEqual(messages.map((m) => ({ ok: true, response_status_code: null, response_body: JSON.stringify({ message_id: m.id }) })))
      const sent = sentSince(transfers, before)
      expect(sent.transfers).toEqual([5])
      expect(sent.messages.map((m) => m.messageId)).toEqual(messages.map((m) => m.id))
      expect(sent.messages[2]).toMatchObject({ entity: 'orders', subject: 'order.created', contentType: 'application/json', body: messages[2]!.data, applicationProperties: messages[2]!.metadata })
    })

    it('starts a new batch when a message does not fit the link size (256 KiB here); one too large for any goes alone and fails alone', async () => {
      const publisher = await publisherFor('orders')
      const [transfers, before] = [sb.batches.length, sb.messages.length]
      const messages = [...batch(3, 'split', 'x'.repeat(100 * 1024)), ...batch(1, 'huge', 'x'.repeat(300 * 1024)), ...batch(1, 'tail')]
      const results = await publisher.publishBatch(messages)
      expect(results.map((r) => r.ok)).toEqual([true, true, true, false, true])
      expect(results[3]).toMatchObject({ error_kind: 'rejected' })
      expect(results[3]!.error).toContain('MessageSizeExceeded')
      const sent = sentSince(transfers, before)
      expect(sent.transfers).toEqual([2, 1, 1])
      expect(sent.messages.map((m) => m.messageId)).toEqual(['evt_split_0', 'evt_split_1', 'evt_split_2', 'evt_tail_0'])
    })

    it('fails every message of a batch the service refuses, of a missing entity, and of an aborted deadline', async () => {
      const publisher = await publisherFor('orders')
      sb.rejectNext({ condition: 'com.microsoft:server-busy', description: 'The server is busy. Please try again later.' })
      expect((await publisher.publishBatch(batch(3, 'busy'))).map((r) => r.error_kind)).toEqual(['throttled', 'throttled', 'throttled'])
      const missing = await publisherFor('missing')
      expect((await missing.publishBatch(batch(2, 'missing'))).map((r) => r.error_kind)).toEqual(['not_found', 'not_found'])
      const aborted = await publisher.publishBatch(batch(2, 'abort'), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  describe('private networks', () => {
    const emulatorString = (endpoint: string) => `Endpoint=${endpoint};SharedAccessKeyName=${keyName};SharedAccessKey=${key};UseDevelopmentEmulator=true`
    const guardedPublisher = (connectionString: string) => publisherFor('orders', connectionString, { allowPrivateNetworks: false })

    it('refuses the local emulator by IP literal or by name, without a connection or the key in the text', async () => {
      const before = { messages: sb.messages.length, connections: sb.connections.opened }
      const literal = await (await guardedPublisher(sb.connectionString())).publish(message())
      expect(literal).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(literal.error).toContain('127.0.0.1')
      const named = await (await guardedPublisher(emulatorString(`sb://localhost:${sb.port}`))).publish(message())
      expect(named).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(named.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/)
      expect(JSON.stringify([literal, named])).not.toContain(key)
      expect({ messages: sb.messages.length, connections: sb.connections.opened }).toEqual(before)
    })

    it.each([
      ['a 10.x emulator', emulatorString('sb://10.0.0.1:5672')],
      ['the metadata address', `Endpoint=sb://169.254.169.254/;SharedAccessKeyName=${keyName};SharedAccessKey=${key}`],
      ['an IPv6 unique-local namespace', `Endpoint=sb://[fd00:ec2::254]/;SharedAccessKeyName=${keyName};SharedAccessKey=${key}`],
    ])('refuses %s without attempting a connection', async (_name, connectionString) => {
      expect(await (await guardedPublisher(connectionString)).publish(message())).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(stopped).toEqual([])
    })

    it('checks a namespace name before every publish: refused once it resolves to a private address', async () => {
      const answers: Record<string, string> = { 'acme.servicebus.windows.net': '93.184.216.34' }
      const asked = stubDns(answers)
      const publisher = await guardedPublisher(`Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=${keyName};SharedAccessKey=${key}`)
      // Public: the SDK goes on to connect, by name (TLS checks the certificate against it), and the sentinel stops it.
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
      expect(new Set(stopped.splice(0))).toEqual(new Set(['acme.servicebus.windows.net']))
      answers['acme.servicebus.windows.net'] = '10.1.2.3'
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(result.error).toContain('acme.servicebus.windows.net resolves to 10.1.2.3')
      expect(stopped).toEqual([])
      expect(asked.guard).toEqual(['acme.servicebus.windows.net', 'acme.servicebus.windows.net'])
    })

    it('pins an emulator named by DNS to the address it checked, so the SDK never resolves the name itself', async () => {
      stubDns({ 'sb-emulator.example': '93.184.216.34' })
      const publisher = await guardedPublisher(emulatorString('sb://sb-emulator.example:5672'))
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
      expect(new Set(stopped.splice(0))).toEqual(new Set(['93.184.216.34']))
    })
  })

  describe('schemas', () => {
    const config = (input: unknown) => v.safeParse(cloudyServicebus.configSchema, input)
    const credentials = (input: unknown) => v.safeParse(cloudyServicebus.credentialsSchema, input)
    const azure = 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=abc123+/def='

    it('accepts a queue or topic name and nothing else', () => {
      expect(config({ name: 'orders' }).success).toBe(true)
      expect(config({ name: 'apps/orders.v1' }).success).toBe(true)
      expect(config({}).success).toBe(false)
      expect(config({ name: '' }).success).toBe(false)
      expect(config({ name: 'has space' }).success).toBe(false)
      expect(config({ name: 'orders', queue: 'x' }).success).toBe(false)
    })

    it('accepts Azure, SAS-token and emulator connection strings', () => {
      expect(credentials({ connection_string: azure }).success).toBe(true)
      expect(credentials({ connection_string: `${azure};EntityPath=orders` }).success).toBe(true)
      expect(credentials({ connection_string: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessSignature=SharedAccessSignature sr=x&sig=y&se=1&skn=send' }).success).toBe(true)
      expect(credentials({ connection_string: 'Endpoint=sb://localhost;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=SAS_KEY_VALUE;UseDevelopmentEmulator=true;' }).success).toBe(
        true,
      )
    })

    it('rejects a missing or malformed connection string and unexpected fields, without echoing the key', () => {
      expect(credentials({}).success).toBe(false)
      expect(credentials({ connection_string: 'https://acme.servicebus.windows.net' }).success).toBe(false)
      expect(credentials({ connection_string: 'Endpoint=https://acme.servicebus.windows.net/;SharedAccessKeyName=a;SharedAccessKey=b' }).success).toBe(false)
      expect(credentials({ connection_string: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send' }).success).toBe(false)
      expect(credentials({ connection_string: `${azure};UseDevelopmentEmulator=yes` }).success).toBe(false)
      expect(credentials({ connection_string: azure, name: 'orders' }).success).toBe(false)
      const typo = credentials({ connection_string: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccesKey=TOPSECRETKEY' })
      expect(typo.success).toBe(false)
      expect(JSON.stringify(typo.issues?.map((i) => i.message))).not.toContain('TOPSECRETKEY')
    })

    it('describes every accepted field, marking the connection string sensitive', () => {
      expect(cloudyServicebus.config_fields.map((f) => [f.key, f.required])).toEqual([['name', true]])
      expect(cloudyServicebus.credential_fields.map((f) => [f.key, f.sensitive, f.required])).toEqual([['connection_string', true, true]])
      expect(cloudyServicebus.icon).toMatch(/^<svg[\s\S]*<\/svg>$/)
      expect(cloudyServicebus.target({ name: 'orders' })).toBe('orders')
    })
  })
})
