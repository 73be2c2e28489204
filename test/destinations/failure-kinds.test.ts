import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { amqpBroker } from '../../src/destinations/amqp-broker.js'
import { cloudxKinesis } from '../../src/destinations/cloudx-kinesis.js'
import { cloudxS3 } from '../../src/destinations/cloudx-s3.js'
import { cloudxSqs } from '../../src/destinations/cloudx-sqs.js'
import { cloudyServicebus } from '../../src/destinations/cloudy-servicebus.js'
import { cloudzPubsub } from '../../src/destinations/cloudz-pubsub.js'
import { relay } from '../../src/destinations/relay.js'
import type { DestinationTypeDefinition } from '../../src/destinations/types.js'
import { webhook } from '../../src/destinations/webhook.js'
import { errorKinds, type ErrorKind } from '../../src/model/attempt-result.js'
import { closeHttpClients } from '../../src/net/http-client.js'
import { generateWebhookSecret } from '../../src/net/signing.js'
import { transportKindInText } from '../../src/net/transport-error.js'
import { startFakeSqs, type FakeSqs } from '../fakes/sqs-server.js'
import { closedPort, messageBuilder, publishersFor } from '../support/publishers.js'
import { startReceiver } from '../support/receiver.js'
import { startUntrustedTlsServer } from '../support/tls.js'

// Each kind is produced for real: a name under .invalid (RFC 6761: never resolves, answered without leaving the
// machine here), a loopback port nothing listens on, a TLS server whose self-signed certificate no CA trusts, and
// receivers or wire-level fakes that answer with the status. No network sentinel here: it would stop the .invalid
// connects before their DNS lookup, which is what these tests need to fail.

const unresolvable = 'nowhere.invalid'
const message = messageBuilder({ destination_id: 'des_kinds' })
const aws = { key: 'AKIAKINDSTEST', secret: 'kinds-secret-value' }
const amqpLogin = { username: 'guest', password: 'guest-password' }
const serviceBusKey = 'SharedAccessKeyName=send;SharedAccessKey=a2luZHMtdGVzdC1rZXk='

const webhookSecret = { secret: generateWebhookSecret() }

/** One delivery through a fresh publisher of `type` (private networks allowed: every peer here is on loopback). */
async function kindOf(type: DestinationTypeDefinition, config: Record<string, unknown>, credentials: Record<string, unknown> = webhookSecret) {
  return publishersFor(type).deliver(config, message(), { credentials })
}

/** Serves one fixed HTTP answer to every request: an AWS-style service failing on its side. */
async function startFailingService(status: number, contentType: string, body: string) {
  const server = http.createServer((req, res) => {
    req.resume().on('end', () => res.writeHead(status, { 'content-type': contentType }).end(body))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

let tlsServer: Awaited<ReturnType<typeof startUntrustedTlsServer>>
let refusedPort: number
beforeAll(async () => {
  tlsServer = await startUntrustedTlsServer()
  refusedPort = await closedPort()
})
afterAll(async () => {
  await closeHttpClients()
  await tlsServer.close()
})

describe('failure kinds of HTTP receivers (webhook, relay)', () => {
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  beforeAll(async () => {
    // The path names the status to answer with: /status/404 -> 404.
    receiver = await startReceiver((r) => {
      const status = Number(/^\/status\/(\d+)/.exec(r.path)?.[1] ?? 200)
      const headers: Record<string, string> = status >= 300 && status < 400 ? { location: '/elsewhere' } : {}
      return { status, headers }
    })
  })
  afterAll(() => receiver.close())

  it.each([
    [400, 'http_4xx'],
    [401, 'authentication'],
    [403, 'authentication'],
    [404, 'not_found'],
    [405, 'http_4xx'],
    [307, 'redirect'],
    [429, 'throttled'],
    [500, 'http_5xx'],
    [502, 'http_5xx'],
    [503, 'http_5xx'],
  ] as const)('a webhook receiver answering %i is %s', async (status, kind) => {
    const result = await kindOf(webhook, { url: `${receiver.url}/status/${status}` })
    expect(result).toMatchObject({ ok: false, error_kind: kind, response_status_code: status })
  })

  it('a relay answering 502 is http_5xx, and 404 not_found', async () => {
    expect(await kindOf(relay, { url: `${receiver.url}/status/502` }, { token: 'relay-token' })).toMatchObject({ error_kind: 'http_5xx', response_status_code: 502 })
    expect(await kindOf(relay, { url: `${receiver.url}/status/404` }, { token: 'relay-token' })).toMatchObject({ error_kind: 'not_found', response_status_code: 404 })
  })

  it('a webhook host that does not resolve is dns, with or without the private-network guard', async () => {
    const url = `http://${unresolvable}/hook`
    const open = await kindOf(webhook, { url })
    expect(open).toMatchObject({ ok: false, error_kind: 'dns', response_status_code: null })
    expect(open.error).toContain('ENOTFOUND')
    const guarded = await publishersFor(webhook).deliver({ url }, message(), { credentials: webhookSecret, context: { allowPrivateNetworks: false } })
    expect(guarded).toMatchObject({ ok: false, error_kind: 'dns' })
  })

  it('a webhook port nothing listens on is connection_refused', async () => {
    expect(await kindOf(webhook, { url: `http://127.0.0.1:${refusedPort}/hook` })).toMatchObject({ ok: false, error_kind: 'connection_refused' })
  })

  it('a webhook served with an untrusted certificate is tls', async () => {
    const result = await kindOf(webhook, { url: `https://127.0.0.1:${tlsServer.port}/hook` })
    expect(result).toMatchObject({ ok: false, error_kind: 'tls', response_status_code: null })
    expect(result.error).toMatch(/self[- ]signed certificate/i)
  })

  it('a relay host that does not resolve is dns', async () => {
    expect(await kindOf(relay, { url: `http://${unresolvable}/relay` }, { token: 'relay-token' })).toMatchObject({ ok: false, error_kind: 'dns' })
  })
})

describe('failure kinds of amqp_broker', () => {
  it('a broker host that does not resolve is dns', async () => {
    expect(await kindOf(amqpBroker, { server_url: `${unresolvable}:5672` }, amqpLogin)).toMatchObject({ ok: false, error_kind: 'dns' })
  })

  it('a broker port nothing listens on is connection_refused', async () => {
    expect(await kindOf(amqpBroker, { server_url: `127.0.0.1:${refusedPort}` }, amqpLogin)).toMatchObject({ ok: false, error_kind: 'connection_refused' })
  })

  it('a TLS broker with an untrusted certificate is tls', async () => {
    const result = await kindOf(amqpBroker, { server_url: `amqps://127.0.0.1:${tlsServer.port}` }, amqpLogin)
    expect(result).toMatchObject({ ok: false, error_kind: 'tls' })
    expect(result.error).not.toContain(amqpLogin.password)
  })
})

describe('failure kinds of the AWS types (cloudx_sqs, cloudx_kinesis, cloudx_s3)', () => {
  let sqs: FakeSqs
  beforeAll(async () => {
    sqs = await startFakeSqs({ accessKeyId: aws.key, secretAccessKey: aws.secret, queues: ['orders'] })
  })
  afterAll(() => sqs.close())

  const awsTypes = [
    ['cloudx_sqs', cloudxSqs, (endpoint: string) => ({ queue_url: `${endpoint}/000000000000/orders`, region: 'us-east-1' })],
    ['cloudx_kinesis', cloudxKinesis, (endpoint: string) => ({ stream_name: 'orders', region: 'us-east-1', endpoint })],
    ['cloudx_s3', cloudxS3, (endpoint: string) => ({ bucket: 'orders', region: 'us-east-1', endpoint })],
  ] as const

  it.each(awsTypes)('%s: an endpoint host that does not resolve is dns', async (_name, type, config) => {
    const result = await kindOf(type, config(`http://${unresolvable}:4566`), aws)
    expect(result).toMatchObject({ ok: false, error_kind: 'dns' })
    expect(result.error).not.toContain(aws.secret)
  })

  it.each(awsTypes)('%s: an endpoint port nothing listens on is connection_refused', async (_name, type, config) => {
    expect(await kindOf(type, config(`http://127.0.0.1:${refusedPort}`), aws)).toMatchObject({ ok: false, error_kind: 'connection_refused' })
  })

  it.each(awsTypes)('%s: an endpoint with an untrusted certificate is tls', async (_name, type, config) => {
    expect(await kindOf(type, config(`https://127.0.0.1:${tlsServer.port}`), aws)).toMatchObject({ ok: false, error_kind: 'tls' })
  })

  it('cloudx_sqs: the service failing on its side (500 InternalFailure) is http_5xx', async () => {
    sqs.failNext({ status: 500, type: 'InternalFailure', queryError: 'InternalFailure', message: 'We encountered an internal error.' })
    const result = await kindOf(cloudxSqs, { queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, aws)
    expect(result).toMatchObject({ ok: false, error_kind: 'http_5xx', response_status_code: 500 })
    expect(result.error).toContain('InternalFailure')
  })

  it('cloudx_kinesis: the service failing on its side (500 InternalFailure) is http_5xx', async () => {
    const service = await startFailingService(500, 'application/x-amz-json-1.1', JSON.stringify({ __type: 'InternalFailure', message: 'internal error' }))
    try {
      expect(await kindOf(cloudxKinesis, { stream_name: 'orders', region: 'us-east-1', endpoint: service.endpoint }, aws)).toMatchObject({
        ok: false,
        error_kind: 'http_5xx',
        response_status_code: 500,
      })
    } finally {
      await service.close()
    }
  })

  it('cloudx_s3: the service failing on its side (500 InternalError) is http_5xx', async () => {
    const xml = '<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error.</Message></Error>'
    const service = await startFailingService(500, 'application/xml', xml)
    try {
      expect(await kindOf(cloudxS3, { bucket: 'orders', region: 'us-east-1', endpoint: service.endpoint }, aws)).toMatchObject({
        ok: false,
        error_kind: 'http_5xx',
        response_status_code: 500,
      })
    } finally {
      await service.close()
    }
  })
})

describe('failure kinds of cloudy_servicebus', () => {
  it('a namespace host that does not resolve is dns', async () => {
    const connection_string = `Endpoint=sb://${unresolvable}/;${serviceBusKey};UseDevelopmentEmulator=true`
    expect(await kindOf(cloudyServicebus, { name: 'orders' }, { connection_string })).toMatchObject({ ok: false, error_kind: 'dns' })
  })

  it('a namespace with an untrusted certificate is tls', async () => {
    const connection_string = `Endpoint=sb://127.0.0.1:${tlsServer.port}/;${serviceBusKey}`
    const result = await kindOf(cloudyServicebus, { name: 'orders' }, { connection_string })
    expect(result, JSON.stringify(result)).toMatchObject({ ok: false, error_kind: 'tls' })
    expect(result.error).not.toContain('a2luZHMtdGVzdC1rZXk=')
  })
})

describe('failure kinds of cloudz_pubsub', () => {
  it('an emulator host that does not resolve is dns', async () => {
    expect(await kindOf(cloudzPubsub, { project_id: 'kinds-project', topic: 'orders', endpoint: `${unresolvable}:8085` }, { service_account_json: '{}' })).toMatchObject({
      ok: false,
      error_kind: 'dns',
    })
  })

  // Only *.googleapis.com endpoints use TLS, and none is reachable here: the gRPC status text is what decides.
  it.each([
    ['14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:8085', 'connection_refused'],
    ['14 UNAVAILABLE: Name resolution failed for target dns:nowhere.invalid:8085', 'dns'],
    ['14 UNAVAILABLE: No connection established. Last error: self-signed certificate', 'tls'],
    ['14 UNAVAILABLE: Connection dropped', undefined],
  ] as const)('reads the socket failure in a gRPC status text: %s', (text, kind) => {
    expect(transportKindInText(text)).toBe(kind)
  })
})

describe('the kinds themselves', () => {
  it('keeps every kind stored by earlier releases', () => {
    const earlier: ErrorKind[] = ['authentication', 'not_found', 'throttled', 'network', 'timeout', 'rejected', 'ssrf', 'configuration', 'unknown']
    expect(Object.keys(errorKinds)).toEqual(expect.arrayContaining(earlier))
  })
})
