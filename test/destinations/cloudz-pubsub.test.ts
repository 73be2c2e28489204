import dns from 'node:dns'
import net from 'node:net'
import * as grpc from '@grpc/grpc-js'
import * as v from 'valibot'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { cloudzPubsub, pubsubDestinationIssues } from '../../src/destinations/cloudz-pubsub.js'
import { resolvePublicHost } from '../../src/net/endpoint-guard.js'
import type { DeliveryMessage, Publisher, PublisherContext, PublisherDestination } from '../../src/destinations/types.js'
import { OutflowError } from '../../src/errors.js'
import { startFakePubsub, type FakePubsub } from '../fakes/pubsub-server.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'

const context: PublisherContext = { allowPrivateNetworks: true, timeoutMs: 5000, userAgent: 'outflow/test' }
const project = 'outflow-test'
const fullTopic = (topic: string) => `projects/${project}/topics/${topic}`
const serviceAccount = JSON.stringify({
  type: 'service_account',
  project_id: project,
  private_key_id: 'abc',
  private_key: '-----BEGIN PRIVATE KEY-----\nMIIfake\n-----END PRIVATE KEY-----\n',
  client_email: 'outflow@outflow-test.iam.gserviceaccount.com',
})

function message(overrides: Partial<DeliveryMessage> = {}): DeliveryMessage {
  return {
    id: 'evt_1',
    tenant_id: 'acme',
    destination_id: 'des_ps',
    topic: 'order.created',
    time: new Date('2025-01-02T03:04:05Z'),
    data: { order: 42, items: ['a', 'b'], note: 'ünïcødé' },
    metadata: { 'event-id': 'evt_1', topic: 'order.created', timestamp: '1735787045' },
    attempt: 1,
    ...overrides,
  }
}

// Sentinel: a socket connect to anything but loopback is stopped before it reaches the network (no DNS, no packet)
// and fails as ECONNREFUSED. Every stopped host is recorded; a test that does not take them out fails.
const { stopped } = installNetworkSentinel('refuse')
// Registered after the sentinel, so (hooks run as a stack) mocks are restored before its check.
afterEach(() => {
  vi.restoreAllMocks()
})

/**
 * Answer `dns.lookup` from `answers`, which the test may change (a name missing there fails as ENOTFOUND, so no
 * query leaves the machine); `localhost` still resolves. The gRPC resolver's own `dns.promises` lookups always fail.
 * Returns the names looked up, by whom.
 */
function stubDns(answers: Record<string, string>): { guard: string[]; sdk: string[] } {
  const asked = { guard: [] as string[], sdk: [] as string[] }
  const real = dns.lookup
  vi.spyOn(dns, 'lookup').mockImplementation(((hostname: string, options: dns.LookupAllOptions, callback: (err: Error | null, addresses: dns.LookupAddress[]) => void) => {
    if (hostname === 'localhost') return (real as (...a: unknown[]) => void)(hostname, options, callback)
    asked.guard.push(hostname)
    const address = answers[hostname]
    if (address === undefined) return process.nextTick(() => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []))
    process.nextTick(() => callback(null, [{ address, family: net.isIP(address) }]))
  }) as never)
  const refuse = async (hostname: string) => {
    asked.sdk.push(hostname)
    throw Object.assign(new Error(`queryA ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
  }
  vi.spyOn(dns.promises, 'lookup').mockImplementation(refuse as never)
  vi.spyOn(dns.promises, 'resolveTxt').mockImplementation(refuse as never)
  return asked
}

function destination(config: Record<string, unknown>, credentials: Record<string, unknown> = { service_account_json: '{}' }): PublisherDestination {
  return { id: 'des_ps', tenant_id: 'acme', type: 'cloudz_pubsub', config, credentials }
}

describe('cloudz_pubsub destination', () => {
  let pubsub: FakePubsub
  const publishers: Publisher[] = []

  async function publisherFor(topic: string, endpoint = pubsub.endpoint): Promise<Publisher> {
    const publisher = await cloudzPubsub.createPublisher(destination({ project_id: project, topic, endpoint }), context)
    publishers.push(publisher)
    return publisher
  }

  beforeAll(async () => {
    pubsub = await startFakePubsub({ topics: [fullTopic('orders'), fullTopic('audit')], forbidden: [fullTopic('secret-topic')] })
  })
  afterAll(async () => {
    await Promise.all(publishers.map((p) => p.close()))
    await pubsub.close()
  })

  describe('delivery', () => {
    it('publishes the data as JSON with the metadata as attributes, one message per call', async () => {
      const publisher = await publisherFor('orders')
      const before = pubsub.messages.length
      const result = await publisher.publish(message())
      expect(result.ok).toBe(true)
      expect(JSON.parse(result.response_body!).message_id).toMatch(/^\d+$/)
      const sent = pubsub.messages[before]!
      expect(sent).toMatchObject({ topic: fullTopic('orders'), orderingKey: '', batchSize: 1 })
      expect(JSON.parse(sent.data)).toEqual(message().data)
      expect(sent.attributes).toEqual(message().metadata)
      expect(sent.userAgent).toContain('outflow/test')
    })

    it('publishes concurrent deliveries as separate calls', async () => {
      const publisher = await publisherFor('audit')
      const before = pubsub.messages.length
      const results = await Promise.all([1, 2, 3].map((n) => publisher.publish(message({ id: `evt_c${n}`, data: { n } }))))
      expect(results.every((r) => r.ok)).toBe(true)
      const sent = pubsub.messages.slice(before)
      expect(sent.map((m) => m.batchSize)).toEqual([1, 1, 1])
      expect(sent.map((m) => JSON.parse(m.data).n).sort()).toEqual([1, 2, 3])
    })

    it('skips attributes Pub/Sub reserves or rejects', async () => {
      const publisher = await publisherFor('orders')
      const before = pubsub.messages.length
      const metadata = { 'event-id': 'evt_a', 'goog-reserved': 'x', long: 'v'.repeat(1025), ok: 'yes' }
      expect((await publisher.publish(message({ metadata }))).ok).toBe(true)
      expect(pubsub.messages[before]!.attributes).toEqual({ 'event-id': 'evt_a', ok: 'yes' })
    })

    it('reuses one client and connection across publishes, and close() releases it', async () => {
      const own = await startFakePubsub({ topics: [fullTopic('orders')] })
      try {
        const publisher = await cloudzPubsub.createPublisher(destination({ project_id: project, topic: 'orders', endpoint: own.endpoint }), context)
        expect((await publisher.publish(message())).ok).toBe(true)
        expect((await publisher.publish(message({ id: 'evt_2' }))).ok).toBe(true)
        expect(own.messages.map((m) => m.connection)).toEqual([0, 0])
        expect(own.connections.opened).toBe(1)
        await publisher.close()
        await vi.waitFor(() => expect(own.connections.closed).toBe(1))
        expect(await publisher.publish(message())).toMatchObject({ ok: false })
      } finally {
        await own.close()
      }
    })
  })

  describe('failures', () => {
    it('reports an unknown topic as not_found', async () => {
      const publisher = await publisherFor('missing-topic')
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
      expect(result.error).toContain('NOT_FOUND')
      expect(result.error).toContain('missing-topic')
    })

    it('reports a denied topic as authentication', async () => {
      const publisher = await publisherFor('secret-topic')
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).toContain('PERMISSION_DENIED')
    })

    it('maps gRPC statuses: UNAUTHENTICATED, RESOURCE_EXHAUSTED, INVALID_ARGUMENT, UNAVAILABLE', async () => {
      const publisher = await publisherFor('orders')
      const cases: [grpc.status, string][] = [
        [grpc.status.UNAUTHENTICATED, 'authentication'],
        [grpc.status.RESOURCE_EXHAUSTED, 'throttled'],
        [grpc.status.INVALID_ARGUMENT, 'rejected'],
        [grpc.status.UNAVAILABLE, 'network'],
      ]
      for (const [code, kind] of cases) {
        pubsub.failNext(code, `injected ${grpc.status[code]}`)
        const result = await publisher.publish(message())
        expect(result).toMatchObject({ ok: false, error_kind: kind })
        expect(result.error).toContain(`injected ${grpc.status[code]}`)
      }
    })

    it('reports an unreachable emulator as network', async () => {
      const server = net.createServer()
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      const { port } = server.address() as net.AddressInfo
      await new Promise((resolve) => server.close(resolve))
      const publisher = await publisherFor('orders', `127.0.0.1:${port}`)
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'network' })
    })

    it('refuses to create a publisher for Google without a complete service-account key', async () => {
      const create = cloudzPubsub.createPublisher(destination({ project_id: project, topic: 'orders' }, { service_account_json: '{"type":"service_account"}' }), context)
      await expect(create).rejects.toBeInstanceOf(OutflowError)
    })
  })

  describe('private networks', () => {
    const guarded: PublisherContext = { ...context, allowPrivateNetworks: false }

    async function guardedPublisher(endpoint: string, credentials?: Record<string, unknown>): Promise<Publisher> {
      const publisher = await cloudzPubsub.createPublisher(destination({ project_id: project, topic: 'orders', endpoint }, credentials), guarded)
      publishers.push(publisher)
      return publisher
    }

    it('refuses the local emulator by IP literal or by name, without a connection', async () => {
      const before = { messages: pubsub.messages.length, connections: pubsub.connections.opened }
      const literal = await (await guardedPublisher(pubsub.endpoint)).publish(message())
      expect(literal).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(literal.error).toContain('127.0.0.1')
      const named = await (await guardedPublisher(pubsub.endpoint.replace('127.0.0.1', 'localhost'))).publish(message())
      expect(named).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(named.error).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/)
      expect({ messages: pubsub.messages.length, connections: pubsub.connections.opened }).toEqual(before)
    })

    it.each(['10.0.0.1:8085', 'http://169.254.169.254', 'https://192.168.1.10:8443/'])('refuses %s without attempting a connection', async (endpoint) => {
      expect(await (await guardedPublisher(endpoint)).publish(message())).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(stopped).toEqual([])
    })

    it('checks a Google endpoint name after DNS, without the key in the text', async () => {
      const asked = stubDns({ 'europe-west1-pubsub.googleapis.com': '10.1.2.3' })
      const result = await (await guardedPublisher('europe-west1-pubsub.googleapis.com:443', { service_account_json: serviceAccount })).publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(result.error).toContain('europe-west1-pubsub.googleapis.com resolves to 10.1.2.3')
      expect(JSON.stringify(result)).not.toContain('MIIfake')
      expect(asked).toEqual({ guard: ['europe-west1-pubsub.googleapis.com'], sdk: [] })
      expect(stopped).toEqual([])
    })

    it('lets public names through the check', async () => {
      stubDns({ 'pubsub.googleapis.com': '142.250.74.10' })
      expect(await resolvePublicHost('pubsub.googleapis.com', guarded)).toEqual([{ address: '142.250.74.10', family: 4 }])
    })

    it('pins an emulator named by DNS to the address it checked, and checks the name again before every publish', async () => {
      const answers: Record<string, string> = { 'pubsub-emulator.example': '93.184.216.34' }
      const asked = stubDns(answers)
      const publisher = await cloudzPubsub.createPublisher(destination({ project_id: project, topic: 'orders', endpoint: 'pubsub-emulator.example:8085' }), {
        ...guarded,
        timeoutMs: 2000,
      })
      publishers.push(publisher)
      // Public: the SDK connects to the checked address, never resolving the name itself; the sentinel stops it.
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'network' })
      expect(new Set(stopped.splice(0))).toEqual(new Set(['93.184.216.34']))
      answers['pubsub-emulator.example'] = '10.1.2.3'
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(asked).toEqual({ guard: ['pubsub-emulator.example', 'pubsub-emulator.example'], sdk: [] })
    })
  })

  describe('schemas', () => {
    const config = (input: unknown) => v.safeParse(cloudzPubsub.configSchema, input)
    const credentials = (input: unknown) => v.safeParse(cloudzPubsub.credentialsSchema, input)

    it('accepts a project, a topic id and an optional emulator or Google endpoint', () => {
      expect(config({ project_id: project, topic: 'orders' }).success).toBe(true)
      expect(config({ project_id: project, topic: 'orders', endpoint: 'localhost:8085' }).success).toBe(true)
      expect(config({ project_id: project, topic: 'orders', endpoint: 'http://127.0.0.1:8085' }).success).toBe(true)
      expect(config({ project_id: project, topic: 'orders', endpoint: 'europe-west1-pubsub.googleapis.com:443' }).success).toBe(true)
    })

    it('rejects missing fields, unexpected fields, full topic names and bad endpoints', () => {
      expect(config({ topic: 'orders' }).success).toBe(false)
      expect(config({ project_id: project }).success).toBe(false)
      expect(config({ project_id: project, topic: 'orders', subscription: 'x' }).success).toBe(false)
      expect(config({ project_id: project, topic: fullTopic('orders') }).success).toBe(false)
      expect(config({ project_id: project, topic: 'goog-orders' }).success).toBe(false)
      expect(config({ project_id: 'Bad Project', topic: 'orders' }).success).toBe(false)
      expect(config({ project_id: project, topic: 'orders', endpoint: 'localhost' }).success).toBe(false)
      expect(config({ project_id: project, topic: 'orders', endpoint: 'ftp://localhost:8085' }).success).toBe(false)
    })

    it('requires the key as a JSON object string and nothing else', () => {
      expect(credentials({ service_account_json: serviceAccount }).success).toBe(true)
      expect(credentials({ service_account_json: '{}' }).success).toBe(true)
      expect(credentials({}).success).toBe(false)
      expect(credentials({ service_account_json: 'not json' }).success).toBe(false)
      expect(credentials({ service_account_json: '[1]' }).success).toBe(false)
      expect(credentials({ service_account_json: serviceAccount, key: 'x' }).success).toBe(false)
    })

    it('needs a complete service-account key unless the endpoint is an emulator', () => {
      expect(pubsubDestinationIssues({ project_id: project, topic: 'orders' }, { service_account_json: serviceAccount })).toBeUndefined()
      expect(pubsubDestinationIssues({ project_id: project, topic: 'orders', endpoint: 'localhost:8085' }, { service_account_json: '{}' })).toBeUndefined()
      expect(pubsubDestinationIssues({ project_id: project, topic: 'orders' }, { service_account_json: '{}' })).toEqual({
        'credentials.service_account_json': 'must be a service account key: missing type, project_id, private_key, client_email',
      })
      expect(pubsubDestinationIssues({ project_id: project, topic: 'orders', endpoint: 'pubsub.googleapis.com:443' }, { service_account_json: '{}' })).toBeDefined()
    })

    it('describes every accepted field and names the topic as target', () => {
      expect(cloudzPubsub.config_fields.map((f) => [f.key, f.required])).toEqual([
        ['project_id', true],
        ['topic', true],
        ['endpoint', false],
      ])
      expect(cloudzPubsub.credential_fields.map((f) => [f.key, f.sensitive, f.required])).toEqual([['service_account_json', true, true]])
      expect(cloudzPubsub.icon).toMatch(/^<svg[\s\S]*<\/svg>$/)
      expect(cloudzPubsub.target({ project_id: project, topic: 'orders' })).toBe(`${project}/orders`)
      expect(cloudzPubsub.targetUrl?.({ project_id: project, topic: 'orders' })).toBe(`https://console.cloud.google.com/cloudpubsub/topic/detail/orders?project=${project}`)
      expect(cloudzPubsub.targetUrl?.({ project_id: project, topic: 'orders', endpoint: 'localhost:8085' })).toBeUndefined()
    })
  })
})
