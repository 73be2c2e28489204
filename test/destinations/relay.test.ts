import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import * as v from 'valibot'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { relay } from '../../src/destinations/relay.js'
import type { AttemptResult } from '../../src/model/attempt-result.js'
import type { PublisherContext } from '../../src/destinations/types.js'
import { messageBuilder, publishersFor } from '../support/publishers.js'

interface Received {
  path: string
  headers: http.IncomingHttpHeaders
  body: string
}

const token = 'rly_tok_3f9c2a7d1e'

const message = messageBuilder({
  destination_id: 'des_relay',
  topic: 'user.signed_up',
  data: { user: 'u_1', email: 'a@example.com' },
  metadata: { tier: 'gold' },
})

describe('relay destination (local relay sink)', () => {
  let server: http.Server
  let base: string
  let received: Received[] = []

  // The sink answers by path: /unauthorized -> 401, /gone -> 410, anything else -> 202.
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        received.push({ path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') })
        const status = req.url === '/unauthorized' ? 401 : req.url === '/gone' ? 410 : 202
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify({ accepted: status === 202 }))
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  beforeEach(() => {
    received = []
  })

  const publishers = publishersFor(relay, { id: 'des_relay', credentials: { token } })

  function context(relayUrl?: string, allowPrivateNetworks = true): Partial<PublisherContext> {
    return { allowPrivateNetworks, ...(relayUrl ? { relayUrl } : {}) }
  }

  function deliver(config: Record<string, unknown>, ctx: Partial<PublisherContext>, m = message()): Promise<AttemptResult> {
    return publishers.deliver(config, m, { context: ctx })
  }

  it('posts the signed envelope with the bearer token to the engine relay URL', async () => {
    const m = message()
    const result = await deliver({}, context(`${base}/ingest`), m)
    expect(result).toMatchObject({ ok: true, response_status_code: 202 })
    expect(received).toHaveLength(1)
    const [request] = received as [Received]
    expect(request.path).toBe('/ingest')
    expect(request.headers.authorization).toBe(`Bearer ${token}`)
    expect(request.headers['content-type']).toBe('application/json')
    expect(request.headers['user-agent']).toBe('outflow/test')
    expect(request.headers['webhook-id']).toBe(m.id)
    expect(JSON.parse(request.body)).toEqual({
      id: m.id,
      tenant_id: 'acme',
      destination_id: 'des_relay',
      topic: 'user.signed_up',
      time: '2025-03-01T12:00:00.000Z',
      metadata: m.metadata,
      data: m.data,
    })
    // Standard Webhooks verification, keyed with the raw UTF-8 bytes of the token.
    const verifier = new Webhook(new Uint8Array(Buffer.from(token, 'utf8')), { format: 'raw' })
    const headers = {
      'webhook-id': String(request.headers['webhook-id']),
      'webhook-timestamp': String(request.headers['webhook-timestamp']),
      'webhook-signature': String(request.headers['webhook-signature']),
    }
    expect(verifier.verify(request.body, headers)).toEqual(JSON.parse(request.body))
    expect(() => verifier.verify(request.body.replace('gold', 'lead'), headers)).toThrow()
    expect(() => new Webhook(new Uint8Array(Buffer.from('other-token', 'utf8')), { format: 'raw' }).verify(request.body, headers)).toThrow()
  })

  it('prefers config.url over the engine relay URL', async () => {
    expect(await deliver({ url: `${base}/override`, region: 'eu' }, context(`${base}/engine`))).toMatchObject({ ok: true })
    expect(received.map((r) => r.path)).toEqual(['/override'])
  })

  it('reports a 401 from the relay as an authentication failure with the response recorded', async () => {
    const result = await deliver({ url: `${base}/unauthorized` }, context())
    expect(result).toMatchObject({ ok: false, error_kind: 'authentication', response_status_code: 401 })
    expect(result.response_body).toBe('{"accepted":false}')
  })

  it('asks to disable the destination on 410 Gone', async () => {
    expect(await deliver({}, context(`${base}/gone`))).toMatchObject({ ok: false, response_status_code: 410, disable: true })
  })

  it('fails with configuration when no relay URL is configured anywhere', async () => {
    const result = await deliver({}, context())
    expect(result).toMatchObject({ ok: false, error_kind: 'configuration' })
    expect(received).toHaveLength(0)
  })

  it('guards a tenant-supplied loopback URL unless private networks are allowed', async () => {
    expect(await deliver({ url: `${base}/x` }, context(undefined, false))).toMatchObject({ ok: false, error_kind: 'ssrf' })
    // The engine's own relay URL is the operator's choice and is not guarded.
    expect(await deliver({}, context(`${base}/operator`, false))).toMatchObject({ ok: true })
    expect(received.map((r) => r.path)).toEqual(['/operator'])
  })
})

describe('relay schemas', () => {
  const parseConfig = (config: unknown) => v.safeParse(relay.configSchema, config)

  it('accepts any config object, checking only url', () => {
    expect(parseConfig({}).success).toBe(true)
    expect(parseConfig({ url: 'https://relay.example.com/in', anything: { nested: true } }).success).toBe(true)
    const bad = parseConfig({ url: 'ftp://relay.example.com' })
    expect(bad.success).toBe(false)
    expect(bad.issues?.[0]?.path?.map((p) => p.key)).toEqual(['url'])
    expect(parseConfig({ url: 42 }).success).toBe(false)
    expect(parseConfig('https://relay.example.com').success).toBe(false)
  })

  it('requires a token and nothing else', () => {
    const parse = (c: unknown) => v.safeParse(relay.credentialsSchema, c).success
    expect(parse({ token: 't' })).toBe(true)
    expect(parse({})).toBe(false)
    expect(parse({ token: '' })).toBe(false)
    expect(parse({ token: 't', secret: 's' })).toBe(false)
    expect(relay.configRequired).toBe(false)
    expect(relay.credential_fields).toEqual([expect.objectContaining({ key: 'token', required: true, sensitive: true })])
  })

  it('shows the relay host as target', () => {
    expect(relay.target({ url: 'https://relay.example.com/in' })).toBe('relay.example.com')
    expect(relay.targetUrl?.({ url: 'https://relay.example.com/in' })).toBe('https://relay.example.com/in')
    expect(relay.target({})).toBe('relay')
  })
})
