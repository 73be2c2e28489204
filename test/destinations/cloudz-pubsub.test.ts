import net from 'node:net'
import * as grpc from '@grpc/grpc-js'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { cloudzPubsub, pubsubDestinationIssues } from '../../src/destinations/cloudz-pubsub.js'
import type { DeliveryMessage, Publisher, PublisherContext, PublisherDestination } from '../../src/destinations/types.js'
import { OutflowError } from '../../src/errors.js'
import { startFakePubsub, type FakePubsub } from '../fakes/pubsub-server.js'

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
