import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { Webhook } from 'standardwebhooks'
import * as v from 'valibot'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { closeHttpClients, RESPONSE_BODY_LIMIT } from '../../src/net/http-client.js'
import { generateWebhookSecret } from '../../src/net/signing.js'
import type { PublisherContext } from '../../src/destinations/types.js'
import { webhook } from '../../src/destinations/webhook.js'
import { installNetworkSentinel } from '../support/network-sentinel.js'
import { messageBuilder, publishersFor, type TestPublisher } from '../support/publishers.js'

// Sentinel: every socket connect in this file is recorded; one to a non-loopback host throws and fails the test,
// so a broken SSRF guard can never put traffic on the network.
const { connectAttempts } = installNetworkSentinel('throw')
afterAll(async () => {
  await closeHttpClients()
})

// ---------------------------------------------------------------------------------------------
// A real receiver on 127.0.0.1.
// ---------------------------------------------------------------------------------------------
interface Received {
  method: string
  url: string
  headers: Record<string, string>
  body: string
}
type Respond = (req: http.IncomingMessage, res: http.ServerResponse) => void

interface Receiver {
  url: string
  port: number
  received: Received[]
  connections: number
  respond: Respond
  close(): Promise<void>
}

async function startReceiver(): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    port: 0,
    received: [],
    connections: 0,
    respond: (_req, res) => res.end('ok'),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, val]) => [k, Array.isArray(val) ? val.join(', ') : String(val)]))
      receiver.received.push({ method: req.method ?? '', url: req.url ?? '', headers, body: Buffer.concat(chunks).toString('utf8') })
      receiver.respond(req, res)
    })
  })
  server.on('connection', () => receiver.connections++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  receiver.port = (server.address() as AddressInfo).port
  receiver.url = `http://127.0.0.1:${receiver.port}`
  return receiver
}

const data = { id: 'ord_1', amount: 250, items: [{ sku: 'A-1', qty: 2 }], note: 'café ✓' }
const message = messageBuilder({ id: 'evt_123', data })

const publishers = publishersFor(webhook, { id: 'des_1' })
afterAll(() => publishers.closeAll())

/** A webhook publisher of `url`; without credentials, a destination created without a secret (one is generated). */
function publisherFor(
  url: string,
  { credentials, customHeaders, context }: { credentials?: Record<string, unknown>; customHeaders?: Record<string, string>; context?: Partial<PublisherContext> } = {},
): Promise<TestPublisher> {
  const config: Record<string, unknown> = customHeaders ? { url, custom_headers: customHeaders } : { url }
  return publishers.open(config, { credentials: credentials ?? webhook.prepareCredentials!({ credentials: {}, now: new Date() }), context })
}

function verify(secret: string, got: Received): unknown {
  return new Webhook(secret).verify(got.body, got.headers)
}

describe('webhook publisher against a local receiver (allowPrivateNetworks: true)', () => {
  let receiver: Receiver
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => receiver.close())
  beforeEach(() => {
    receiver.received.length = 0
    receiver.respond = (_req, res) => res.end('ok')
  })

  it('POSTs the data as JSON with Standard Webhooks headers that verify with the standardwebhooks package', async () => {
    const secret = generateWebhookSecret()
    const publisher = await publisherFor(`${receiver.url}/hook?x=1`, { credentials: { secret } })
    const result = await publisher.publish(message())
    expect(result.ok).toBe(true)
    const [got] = receiver.received
    expect(got?.method).toBe('POST')
    expect(got?.url).toBe('/hook?x=1')
    expect(JSON.parse(got!.body)).toEqual(data)
    expect(got?.body).toBe(JSON.stringify(data))
    expect(got?.headers['content-type']).toBe('application/json')
    expect(got?.headers['user-agent']).toBe('outflow/test')
    expect(got?.headers['webhook-id']).toBe('evt_123')
    expect(got?.headers['webhook-timestamp']).toMatch(/^\d{10}$/)
    expect(got?.headers['webhook-signature']?.split(' ')).toHaveLength(1)
    expect(verify(secret, got!)).toEqual(data)
    expect(() => verify(generateWebhookSecret(), got!)).toThrow()
  })

  it('signs with the current and the previous secret during rotation, and verifies with either', async () => {
    const previous = generateWebhookSecret()
    const credentials = webhook.prepareCredentials!({ credentials: { secret: previous, rotate_secret: true }, previous: { secret: previous }, now: new Date() })
    expect(credentials.previous_secret).toBe(previous)
    const publisher = await publisherFor(receiver.url, { credentials })
    expect((await publisher.publish(message())).ok).toBe(true)
    const [got] = receiver.received
    expect(got?.headers['webhook-signature']?.split(' ')).toHaveLength(2)
    expect(verify(String(credentials.secret), got!)).toEqual(data)
    expect(verify(previous, got!)).toEqual(data)
  })

  it('stops signing with the previous secret after previous_secret_invalid_at', async () => {
    const current = generateWebhookSecret()
    const previous = generateWebhookSecret()
    const credentials = { secret: current, previous_secret: previous, previous_secret_invalid_at: new Date(Date.now() - 60_000).toISOString() }
    const publisher = await publisherFor(receiver.url, { credentials })
    expect((await publisher.publish(message())).ok).toBe(true)
    const [got] = receiver.received
    expect(got?.headers['webhook-signature']?.split(' ')).toHaveLength(1)
    expect(verify(current, got!)).toEqual(data)
    expect(() => verify(previous, got!)).toThrow()
  })

  it('sends custom headers and each metadata key as x-outflow-<key>, skipping keys HTTP cannot carry', async () => {
    const publisher = await publisherFor(receiver.url, { customHeaders: { Authorization: 'Bearer abc', 'X-Team': 'payments' } })
    const metadata = { 'event-id': 'evt_123', topic: 'order.created', Region: 'eu-west', 'bad key': 'x', multi: 'a\r\nb' }
    expect((await publisher.publish(message({ metadata }))).ok).toBe(true)
    const headers = receiver.received[0]!.headers
    expect(headers.authorization).toBe('Bearer abc')
    expect(headers['x-team']).toBe('payments')
    expect(headers['x-outflow-event-id']).toBe('evt_123')
    expect(headers['x-outflow-topic']).toBe('order.created')
    expect(headers['x-outflow-region']).toBe('eu-west')
    expect(Object.keys(headers).filter((k) => k.startsWith('x-outflow-')).sort()).toEqual(['x-outflow-event-id', 'x-outflow-region', 'x-outflow-topic'])
  })

  it('records status, headers and body of a 2xx response as a success', async () => {
    receiver.respond = (_req, res) => res.writeHead(201, { 'x-receipt': 'r-9', 'content-type': 'text/plain' }).end('accepted')
    const result = await (await publisherFor(receiver.url)).publish(message())
    expect(result).toMatchObject({ ok: true, response_status_code: 201, response_body: 'accepted' })
    expect(result.response_headers?.['x-receipt']).toBe('r-9')
    expect(result.error_kind).toBeUndefined()
  })

  it('records a 500 as a failed attempt with its status and body', async () => {
    receiver.respond = (_req, res) => res.writeHead(500).end('boom')
    const result = await (await publisherFor(receiver.url)).publish(message())
    expect(result).toMatchObject({ ok: false, response_status_code: 500, response_body: 'boom', error_kind: 'http_5xx', error: 'HTTP 500' })
    expect(result.disable).toBeUndefined()
  })

  it('truncates the recorded response body to 16 KiB', async () => {
    receiver.respond = (_req, res) => res.writeHead(200).end('a'.repeat(40 * 1024))
    const result = await (await publisherFor(receiver.url)).publish(message())
    expect(result.ok).toBe(true)
    expect(result.response_body).toBe('a'.repeat(RESPONSE_BODY_LIMIT))
  })

  it('records the first 16 KiB of a huge body and closes that connection rather than reading it all', async () => {
    const fresh = await startReceiver()
    try {
      // 4 MiB, written as the socket takes it: far more than the client drains for reuse.
      let closed: Promise<unknown> | undefined
      fresh.respond = (req, res) => {
        closed = new Promise((resolve) => req.socket.once('close', resolve))
        res.writeHead(200, { 'content-length': String(4 * 1024 * 1024) })
        const chunk = 'b'.repeat(64 * 1024)
        let sent = 0
        const more = () => {
          while (sent < 64) {
            sent++
            if (!res.write(chunk)) return void res.once('drain', more)
          }
          res.end()
        }
        more()
      }
      const publisher = await publisherFor(fresh.url)
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: true, response_status_code: 200, response_body: 'b'.repeat(RESPONSE_BODY_LIMIT) })
      // The client closed that connection (the rest of the body was never read), and delivers on another.
      await closed
      fresh.respond = (_req, res) => res.end('ok')
      expect(await publisher.publish(message({ id: 'evt_after' }))).toMatchObject({ ok: true, response_body: 'ok' })
    } finally {
      await fresh.close()
    }
  })

  it('times out a response whose body stops coming', async () => {
    receiver.respond = (_req, res) => {
      res.writeHead(200, { 'content-length': '100' })
      res.write('partial')
    }
    const result = await (await publisherFor(receiver.url)).publish(message(), { signal: AbortSignal.timeout(200) })
    expect(result).toMatchObject({ ok: false, error_kind: 'timeout', response_status_code: null })
  })

  it('asks to disable the destination on 410 Gone', async () => {
    receiver.respond = (_req, res) => res.writeHead(410).end()
    const result = await (await publisherFor(receiver.url)).publish(message())
    expect(result).toMatchObject({ ok: false, response_status_code: 410, disable: true, error_kind: 'http_4xx' })
  })

  it('turns 429 with Retry-After in seconds into retry_after_ms', async () => {
    receiver.respond = (_req, res) => res.writeHead(429, { 'retry-after': '120' }).end()
    const result = await (await publisherFor(receiver.url)).publish(message())
    expect(result).toMatchObject({ ok: false, response_status_code: 429, error_kind: 'throttled', retry_after_ms: 120_000 })
  })

  it('turns 503 with Retry-After as an HTTP-date into retry_after_ms', async () => {
    const at = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3_600_000)
    receiver.respond = (_req, res) => res.writeHead(503, { 'retry-after': at.toUTCString() }).end()
    const result = await (await publisherFor(receiver.url)).publish(message())
    expect(result).toMatchObject({ ok: false, response_status_code: 503, error_kind: 'http_5xx' })
    // The header has one-second precision; an hour ahead leaves ample room for the request's own duration.
    expect(result.retry_after_ms).toBeGreaterThan(3_000_000)
    expect(result.retry_after_ms).toBeLessThanOrEqual(3_601_000)
  })

  it('does not follow a 302 and records it as a failure', async () => {
    receiver.respond = (req, res) => (req.url === '/hook' ? res.writeHead(302, { location: '/elsewhere' }).end() : res.end('moved here'))
    const result = await (await publisherFor(`${receiver.url}/hook`)).publish(message())
    expect(result).toMatchObject({ ok: false, response_status_code: 302, error_kind: 'redirect' })
    expect(result.error).toMatch(/^HTTP 302/)
    expect(receiver.received.map((r) => r.url)).toEqual(['/hook'])
  })

  it('times out against a receiver that never answers', async () => {
    receiver.respond = () => undefined
    const result = await (await publisherFor(receiver.url)).publish(message(), { signal: AbortSignal.timeout(200) })
    expect(result).toMatchObject({ ok: false, error_kind: 'timeout', response_status_code: null })
    expect(receiver.received).toHaveLength(1)
  })

  it('reuses pooled keep-alive connections across deliveries instead of one socket per delivery', async () => {
    const fresh = await startReceiver()
    try {
      const publisher = await publisherFor(fresh.url)
      for (let i = 0; i < 10; i++) expect((await publisher.publish(message({ id: `evt_${i}` }))).ok).toBe(true)
      expect(fresh.received).toHaveLength(10)
      // undici may open a second socket while the first is still being released after a response.
      expect(fresh.connections).toBeLessThanOrEqual(2)
    } finally {
      await fresh.close()
    }
  })
})

describe('webhook publisher network failures', () => {
  it('reports a refused connection as connection_refused', async () => {
    const closed = await startReceiver()
    const url = closed.url
    await closed.close()
    const result = await (await publisherFor(url)).publish(message())
    expect(result).toMatchObject({ ok: false, error_kind: 'connection_refused', response_status_code: null })
    expect(result.error).toMatch(/ECONNREFUSED/)
  })
})

describe('webhook publisher SSRF protection (allowPrivateNetworks: false)', () => {
  let receiver: Receiver
  beforeAll(async () => {
    receiver = await startReceiver()
  })
  afterAll(() => receiver.close())
  beforeEach(() => {
    receiver.received.length = 0
  })
  const guarded = { allowPrivateNetworks: false }

  it.each([
    ['127.0.0.1', (port: number) => `http://127.0.0.1:${port}/`],
    ['[::1]', (port: number) => `http://[::1]:${port}/`],
    ['decimal 2130706433', (port: number) => `http://2130706433:${port}/`],
    ['hex 0x7f.1', (port: number) => `http://0x7f.1:${port}/`],
    ['[::ffff:127.0.0.1]', (port: number) => `http://[::ffff:127.0.0.1]:${port}/`],
  ])('refuses the IP literal %s before any socket is opened', async (_name, urlFor) => {
    const result = await (await publisherFor(urlFor(receiver.port), { context: guarded })).publish(message())
    expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
    expect(connectAttempts).toEqual([])
    expect(receiver.received).toEqual([])
  })

  it('refuses localhost at connect time, after DNS', async () => {
    const result = await (await publisherFor(`http://localhost:${receiver.port}/`, { context: guarded })).publish(message())
    expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
    expect(result.error).toMatch(/localhost resolves to/)
    expect(receiver.received).toEqual([])
    expect(receiver.connections).toBe(0)
  })

  it.each(['http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data', 'http://[fd00:ec2::254]/', 'http://0xa9fea9fe/'])(
    'refuses %s without attempting a connection',
    async (url) => {
      const result = await (await publisherFor(url, { context: guarded })).publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(connectAttempts).toEqual([])
    },
  )

  it('delivers to the same local receiver once private networks are allowed', async () => {
    const result = await (await publisherFor(`http://localhost:${receiver.port}/`, { context: { allowPrivateNetworks: true } })).publish(message())
    expect(result.ok).toBe(true)
    expect(receiver.received).toHaveLength(1)
  })
})

/** valibot issues as `path -> message`, the way the API reports them. */
function problems(schema: v.GenericSchema, input: unknown): Record<string, string> | null {
  const result = v.safeParse(schema, input)
  if (result.success) return null
  return Object.fromEntries(result.issues.map((issue) => [(issue.path ?? []).map((p) => String(p.key)).join('.'), issue.message]))
}

describe('webhook config and credentials schemas', () => {
  it('accepts an https URL with custom headers and derives target and target_url', () => {
    const config = { url: 'https://hooks.example.com:8443/in?k=1', custom_headers: { Authorization: 'Bearer x' } }
    expect(problems(webhook.configSchema, config)).toBeNull()
    expect(webhook.target(config)).toBe('hooks.example.com:8443')
    expect(webhook.targetUrl?.(config)).toBe('https://hooks.example.com:8443/in?k=1')
  })

  it.each([
    ['a missing url', {}, { url: expect.any(String) }],
    ['a malformed URL', { url: 'not a url' }, { url: 'must be a valid URL' }],
    ['an ftp: URL', { url: 'ftp://files.example.com/in' }, { url: 'must be an http or https URL' }],
    ['a URL longer than 2048 characters', { url: `https://example.com/${'a'.repeat(2048)}` }, { url: 'must be at most 2048 characters' }],
    ['a URL with a password', { url: 'https://user:pw@example.com/' }, { url: 'must not contain a user name or password: use custom_headers' }],
    ['an unexpected field', { url: 'https://example.com', method: 'PUT' }, { method: 'unexpected field' }],
    ['a reserved custom header', { url: 'https://example.com', custom_headers: { 'Webhook-Signature': 'v1,forged' } }, { 'custom_headers.Webhook-Signature': 'is set by Outflow and cannot be overridden' }],
    ['a host override', { url: 'https://example.com', custom_headers: { host: 'internal' } }, { 'custom_headers.host': 'is set by Outflow and cannot be overridden' }],
    ['an invalid header name', { url: 'https://example.com', custom_headers: { 'x bad': '1' } }, { 'custom_headers.x bad': 'is not a valid header name' }],
    ['a header value with a line break', { url: 'https://example.com', custom_headers: { 'x-a': '1\r\nx-b: 2' } }, { 'custom_headers.x-a': 'is not a valid header value' }],
  ])('rejects config with %s', (_name, input, expected) => {
    expect(problems(webhook.configSchema, input)).toEqual(expected)
  })

  it.each([
    ['a secret without whsec_', { secret: 'abc' }, { secret: 'must be "whsec_" followed by base64' }],
    ['a secret of 16 bytes', { secret: `whsec_${Buffer.alloc(16, 1).toString('base64')}` }, { secret: 'must encode between 24 and 64 bytes' }],
    ['a bad previous_secret_invalid_at', { previous_secret_invalid_at: 'tomorrow' }, { previous_secret_invalid_at: 'must be an RFC 3339 date-time' }],
    ['a non-boolean rotate_secret', { rotate_secret: 'yes' }, { rotate_secret: 'must be a boolean' }],
    ['an unexpected field', { token: 'x' }, { token: 'unexpected field' }],
  ])('rejects credentials with %s', (_name, input, expected) => {
    expect(problems(webhook.credentialsSchema, input)).toEqual(expected)
  })

  it('describes exactly the fields its schemas accept', () => {
    expect(webhook.config_fields.map((f) => f.key)).toEqual([
      'url', 'signature_scheme',
      'compatible_signature', 'compatible_signature_header', 'compatible_signature_template', 'compatible_signed_content', 'compatible_signature_encoding',
      'proxy_url', 'custom_headers',
    ])
    expect(webhook.credential_fields.map((f) => f.key)).toEqual([
      'secret', 'previous_secret', 'previous_secret_invalid_at', 'rotate_secret',
      'basic_username', 'basic_password', 'bearer_token', 'auth_header_name', 'auth_header_value',
      'oauth2_token_url', 'oauth2_client_id', 'oauth2_client_secret', 'oauth2_scope', 'oauth2_audience',
      'tls_client_cert', 'tls_client_key', 'tls_ca', 'compatible_signature_secret',
    ])
    expect(webhook.icon).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"[^>]*>.*<\/svg>$/s)
    expect(webhook.instructions).toContain('webhook-signature')
  })
})

describe('webhook prepareCredentials', () => {
  const now = new Date('2025-03-01T12:00:00.000Z')
  const dayLater = '2025-03-02T12:00:00.000Z'
  const prepare = webhook.prepareCredentials!

  it('generates a valid secret on create when none is given', () => {
    const stored = prepare({ credentials: {}, now })
    expect(stored.secret).toMatch(/^whsec_/)
    expect(problems(webhook.credentialsSchema, stored)).toBeNull()
  })

  it('keeps a given secret on create and never stores rotate_secret', () => {
    const secret = generateWebhookSecret()
    expect(prepare({ credentials: { secret, rotate_secret: true }, now })).toEqual({ secret })
  })

  it('rotates: a new secret, the old one as previous_secret valid for 24 h by default', () => {
    const old = generateWebhookSecret()
    const stored = prepare({ credentials: { secret: old, rotate_secret: true }, previous: { secret: old }, now })
    expect(stored.secret).not.toBe(old)
    expect(stored).toEqual({ secret: expect.stringMatching(/^whsec_/), previous_secret: old, previous_secret_invalid_at: dayLater })
  })

  it('rotates to a given secret and a given previous_secret_invalid_at (stored as ISO)', () => {
    const old = generateWebhookSecret()
    const next = generateWebhookSecret()
    const stored = prepare({ credentials: { secret: next, previous_secret_invalid_at: '2025-03-05T02:00:00+02:00', rotate_secret: true }, previous: { secret: old }, now })
    expect(stored).toEqual({ secret: next, previous_secret: old, previous_secret_invalid_at: '2025-03-05T00:00:00.000Z' })
  })

  it('on a second rotation, replaces the leftover expiry with a fresh 24 h', () => {
    const [first, second] = [generateWebhookSecret(), generateWebhookSecret()]
    const previous = { secret: second, previous_secret: first, previous_secret_invalid_at: '2025-02-01T00:00:00.000Z' }
    const stored = prepare({ credentials: { ...previous, rotate_secret: true }, previous, now })
    expect(stored).toMatchObject({ previous_secret: second, previous_secret_invalid_at: dayLater })
    expect(stored.secret).not.toBe(second)
  })

  it('gives a previous_secret set by hand a 24 h expiry when none is given, and keeps the current secret', () => {
    const [secret, old] = [generateWebhookSecret(), generateWebhookSecret()]
    expect(prepare({ credentials: { secret, previous_secret: old }, previous: { secret }, now })).toEqual({ secret, previous_secret: old, previous_secret_invalid_at: dayLater })
  })
})
