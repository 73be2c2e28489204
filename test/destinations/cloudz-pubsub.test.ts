import * as grpc from '@grpc/grpc-js'
import * as v from 'valibot'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { cloudzPubsub, pubsubDestinationIssues } from '../../src/destinations/cloudz-pubsub.js'
import { googleCredentialTypes } from '../../src/destinations/google-credentials.js'
import { resolvePublicHost } from '../../src/net/endpoint-guard.js'
import { OutflowError } from '../../src/errors.js'
import { startFakePubsub, type FakePubsub } from '../fakes/pubsub-server.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'
import { closedPort, expectOneConnection, messageBuilder, publishersFor, stubDns, testContext } from '../support/publishers.js'

const project = 'outflow-test'
const fullTopic = (topic: string) => `projects/${project}/topics/${topic}`
const serviceAccount = JSON.stringify({
  type: 'service_account',
  project_id: project,
  private_key_id: 'abc',
  private_key: '-----BEGIN PRIVATE KEY-----\nMIIfake\n-----END PRIVATE KEY-----\n',
  client_email: 'outflow@outflow-test.iam.gserviceaccount.com',
})

/** One credential JSON of each type google-auth-library accepts (and Outflow allows), shaped as Google issues them. */
const googleCredentials = {
  service_account: JSON.parse(serviceAccount) as Record<string, unknown>,
  authorized_user: { type: 'authorized_user', client_id: '1234.apps.googleusercontent.com', client_secret: 'd-FL95Q19q7MQmFpd7hHD0Ty', refresh_token: '1//0gWv-refresh-token-value', quota_project_id: project },
  external_account: {
    type: 'external_account',
    audience: '//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/acme-pool/providers/acme-oidc',
    subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
    token_url: 'https://sts.googleapis.com/v1/token',
    service_account_impersonation_url: 'https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/publisher@outflow-test.iam.gserviceaccount.com:generateAccessToken',
    credential_source: { url: 'https://idp.acme.example/token', headers: { authorization: 'Bearer idp-token-value' }, format: { type: 'json', subject_token_field_name: 'id_token' } },
  },
  external_account_authorized_user: {
    type: 'external_account_authorized_user',
    audience: '//iam.googleapis.com/locations/global/workforcePools/acme-pool/providers/acme-oidc',
    client_id: 'client-id-value',
    client_secret: 'client-secret-value',
    refresh_token: 'refresh-token-value',
    token_url: 'https://sts.googleapis.com/v1/oauthtoken',
    token_info_url: 'https://sts.googleapis.com/v1/introspect',
  },
  impersonated_service_account: {
    type: 'impersonated_service_account',
    service_account_impersonation_url: 'https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/publisher@outflow-test.iam.gserviceaccount.com:generateAccessToken',
    source_credentials: { type: 'authorized_user', client_id: '1234.apps.googleusercontent.com', client_secret: 'source-secret-value', refresh_token: '1//0g-source-refresh' },
    delegates: [],
  },
}

const message = messageBuilder({
  id: 'evt_1',
  destination_id: 'des_ps',
  time: new Date('2025-01-02T03:04:05Z'),
  data: { order: 42, items: ['a', 'b'], note: 'ünïcødé' },
})

// Sentinel: a socket connect to anything but loopback is stopped before it reaches the network (no DNS, no packet)
// and fails as ECONNREFUSED. Every stopped host is recorded; a test that does not take them out fails.
const { stopped } = installNetworkSentinel('refuse')
// Registered after the sentinel, so (hooks run as a stack) mocks are restored before its check.
afterEach(() => {
  vi.restoreAllMocks()
})

describe('cloudz_pubsub destination', () => {
  let pubsub: FakePubsub
  const publishers = publishersFor(cloudzPubsub, { id: 'des_ps', credentials: { service_account_json: '{}' } })
  const publisherFor = (topic: string, endpoint = pubsub.endpoint) => publishers.open({ project_id: project, topic, endpoint })

  beforeAll(async () => {
    pubsub = await startFakePubsub({ topics: [fullTopic('orders'), fullTopic('audit')], forbidden: [fullTopic('secret-topic')] })
  })
  afterAll(async () => {
    await publishers.closeAll()
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
        await expectOneConnection(await publisherFor('orders', own.endpoint), own, message)
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

    it('reports an emulator that refuses the connection as connection_refused', async () => {
      const publisher = await publisherFor('orders', `127.0.0.1:${await closedPort()}`)
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
    })

    it.each(Object.keys(googleCredentials))('creates a publisher for Google with a %s credential (nothing is sent until a publish)', async (type) => {
      const key = googleCredentials[type as keyof typeof googleCredentials]
      const publisher = await publishers.open({ project_id: project, topic: 'orders' }, { credentials: { service_account_json: JSON.stringify(key) } })
      await publisher.close()
    })

    it('refuses to create a publisher for Google without a complete service-account key', async () => {
      const create = publishers.open({ project_id: project, topic: 'orders' }, { credentials: { service_account_json: '{"type":"service_account"}' } })
      await expect(create).rejects.toBeInstanceOf(OutflowError)
    })
  })

  describe('batches (several messages per Publish call)', () => {
    const batch = (count: number, tag: string) => Array.from({ length: count }, (_, i) => message({ id: `evt_${tag}_${i}`, data: { tag, i } }))

    it('publishes a batch in one call, in order, each message as a single publish sends it', async () => {
      const publisher = await publisherFor('orders')
      const before = pubsub.messages.length
      const messages = batch(5, 'five')
      const results = await publisher.publishBatch(messages)
      expect(results.every((r) => r.ok && /^\d+$/.test(JSON.parse(r.response_body!).message_id))).toBe(true)
      const sent = pubsub.messages.slice(before)
      expect(sent.map((m) => [m.batchSize, JSON.parse(m.data).i])).toEqual([0, 1, 2, 3, 4].map((i) => [5, i]))
      expect(sent[2]).toMatchObject({ topic: fullTopic('orders'), orderingKey: '', attributes: messages[2]!.metadata })
    })

    it('splits at 1,000 messages per call, the calls one after the other', async () => {
      const publisher = await publisherFor('audit')
      const before = pubsub.messages.length
      expect((await publisher.publishBatch(batch(1001, 'many'))).every((r) => r.ok)).toBe(true)
      const sent = pubsub.messages.slice(before)
      expect([sent.length, sent[0]!.batchSize, sent[1000]!.batchSize]).toEqual([1001, 1000, 1])
      expect(sent.every((m, i) => JSON.parse(m.data).i === i)).toBe(true)
    })

    it('on an ordered destination, does not send the calls after a failed one', async () => {
      const publisher = await publisherFor('audit')
      const before = pubsub.messages.length
      pubsub.failNext(grpc.status.UNAVAILABLE, 'injected outage')
      const results = await publisher.publishBatch(batch(1001, 'ordered').map((m) => ({ ...m, ordering_key: '' })))
      expect(results[0]!.error).toContain('injected outage')
      expect(results[1000]!.error).toContain('not sent')
      expect(pubsub.messages.length).toBe(before)
    })

    it('fails every message of a refused call with its kind: RESOURCE_EXHAUSTED, NOT_FOUND, an aborted deadline', async () => {
      const publisher = await publisherFor('orders')
      pubsub.failNext(grpc.status.RESOURCE_EXHAUSTED, 'injected quota')
      const results = await publisher.publishBatch(batch(3, 'quota'))
      expect(results.map((r) => r.error_kind)).toEqual(['throttled', 'throttled', 'throttled'])
      expect(results[0]!.error).toContain('injected quota')
      expect((await (await publisherFor('missing-topic')).publishBatch(batch(2, 'nf'))).map((r) => r.error_kind)).toEqual(['not_found', 'not_found'])
      const aborted = await publisher.publishBatch(batch(2, 'abort'), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  describe('private networks', () => {
    const guarded = { ...testContext, allowPrivateNetworks: false }
    const guardedPublisher = (endpoint: string, credentials?: Record<string, unknown>) =>
      publishers.open({ project_id: project, topic: 'orders', endpoint }, { credentials, context: guarded })

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
      const publisher = await guardedPublisher('pubsub-emulator.example:8085')
      // Public: the SDK connects to the checked address, never resolving the name itself; the sentinel stops it.
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
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

    it('needs a credential JSON only when the endpoint is not an emulator', async () => {
      expect(await pubsubDestinationIssues({ project_id: project, topic: 'orders' }, { service_account_json: serviceAccount })).toBeUndefined()
      expect(await pubsubDestinationIssues({ project_id: project, topic: 'orders', endpoint: 'localhost:8085' }, { service_account_json: '{}' })).toBeUndefined()
      expect(await pubsubDestinationIssues({ project_id: project, topic: 'orders' }, { service_account_json: '{}' })).toEqual({
        'credentials.service_account_json': `type must be one of ${googleCredentialTypes.join(', ')}`,
      })
      expect(await pubsubDestinationIssues({ project_id: project, topic: 'orders', endpoint: 'pubsub.googleapis.com:443' }, { service_account_json: '{}' })).toBeDefined()
    })

    const issue = async (key: unknown) => (await pubsubDestinationIssues({ project_id: project, topic: 'orders' }, { service_account_json: JSON.stringify(key) }))?.['credentials.service_account_json']

    it.each(Object.entries(googleCredentials))('accepts what google-auth-library accepts: %s', async (_name, key) => {
      expect(await issue(key)).toBeUndefined()
    })

    it.each([
      ['a service account without its key', { ...JSON.parse(serviceAccount), private_key: undefined }, 'is not a credential Google accepts: The incoming JSON object does not contain a private_key field'],
      ['an authorized user without a refresh token', { ...googleCredentials.authorized_user, refresh_token: undefined }, 'is not a credential Google accepts: The incoming JSON object does not contain a refresh_token field'],
      ['workload identity without a credential source', { ...googleCredentials.external_account, credential_source: undefined }, 'is not a credential Google accepts: A credential source or subject token supplier must be specified'],
      ['impersonation without a source', { ...googleCredentials.impersonated_service_account, source_credentials: undefined }, 'source_credentials must be a JSON object'],
      ['an unknown type', { ...googleCredentials.authorized_user, type: 'gdch_service_account' }, `type must be one of ${googleCredentialTypes.join(', ')}`],
    ])('refuses %s, in the words of the library where it decides', async (_name, key, message) => {
      expect(await issue(key)).toContain(message)
    })

    it.each([
      ['a credential_source file of the host', { file: '/var/run/secrets/kubernetes.io/serviceaccount/token' }, 'credential_source.file is not accepted: it reads a file of the Outflow host'],
      ['a program on the host', { executable: { command: '/bin/cat /etc/passwd' } }, 'credential_source.executable is not accepted'],
      ["the host's AWS identity", { environment_id: 'aws1', region_url: 'http://169.254.169.254/latest/meta-data/placement/availability-zone' }, 'credential_source.environment_id is not accepted'],
      ['certificates of the host', { certificate: { use_default_certificate_config: true } }, 'credential_source.certificate is not accepted'],
      ['the metadata server', { url: 'http://169.254.169.254/metadata/identity/oauth2/token' }, 'credential_source.url must be an https:// URL of a public host'],
      ['a private address over https', { url: 'https://10.0.0.5/token' }, 'credential_source.url must be an https:// URL of a public host'],
    ])('refuses workload identity that reads %s (a tenant must not use the host)', async (_name, source, message) => {
      expect(await issue({ ...googleCredentials.external_account, credential_source: source })).toMatch(new RegExp(`^${message.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`))
    })

    it.each([
      ['token_url', { ...googleCredentials.external_account, token_url: 'https://collector.example/token' }, 'token_url must be an https:// URL of googleapis.com'],
      ['service_account_impersonation_url', { ...googleCredentials.impersonated_service_account, service_account_impersonation_url: 'https://collector.example/x:generateAccessToken' }, 'service_account_impersonation_url must be an https:// URL of googleapis.com'],
      ['universe_domain', { ...googleCredentials.authorized_user, universe_domain: 'collector.example' }, 'universe_domain must be googleapis.com'],
      [
        'a source credential reading a file',
        { ...googleCredentials.impersonated_service_account, source_credentials: { ...googleCredentials.external_account, credential_source: { file: '/etc/passwd' } } },
        'source_credentials.credential_source.file is not accepted: it reads a file of the Outflow host; use credential_source.url',
      ],
    ])('refuses endpoints outside googleapis.com: %s', async (_name, key, message) => {
      expect(await issue(key)).toBe(message)
    })

    it('never quotes a secret of the credential in its answer', async () => {
      const leaky = { ...googleCredentials.impersonated_service_account, service_account_impersonation_url: `https://iamcredentials.googleapis.com/${'x'.repeat(300)}` }
      const key = { ...leaky, source_credentials: { ...googleCredentials.authorized_user, client_secret: 'client-secret-value' } }
      const message = await issue(key)
      expect(message).toBeDefined()
      expect(message).not.toContain('client-secret-value')
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
