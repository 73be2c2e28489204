import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { verify as verifyGithub } from '@octokit/webhooks-methods'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import Stripe from 'stripe'
import { Webhook as SvixWebhook } from 'svix'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { apiKey, engineKinds, rejection, snapshot } from '../support/engines.js'
import { startReceiver, waitFor, type Received } from '../support/receiver.js'

// Compatible signatures on real deliveries: a webhook destination also sends Svix, GitHub-style, Stripe-style,
// Outpost or custom signature headers, each checked on what a real HTTP receiver got by that provider's own
// verification code (svix, @octokit/webhooks-methods, stripe) or, for Outpost, by its documented algorithm written
// again here. Configured through the typed API and HTTP, on SQLite and Postgres, the secret sealed and masked.

const stripe = new Stripe('sk_test_compatible_signatures')

/** Only the headers a provider's verifier should see: svix also reads webhook-*, which would hide a wrong svix-*. */
const only = (received: Received, prefix: string) => Object.fromEntries(Object.entries(received.headers).filter(([name]) => name.startsWith(prefix))) as Record<string, string>

/** Outpost's default mode as its documentation states it: v0=<hex HMAC-SHA256 of the raw body, keyed by the secret's text>[,<hex>…]. */
function outpostVerifies(received: Received, secret: string): boolean {
  const header = String(received.headers['x-outpost-signature'] ?? '')
  if (!header.startsWith('v0=')) return false
  const expected = Buffer.from(createHmac('sha256', secret).update(received.body).digest('hex'))
  const timestamp = Number(received.headers['x-outpost-timestamp'])
  const fresh = Math.abs(Date.now() / 1000 - timestamp) < 300
  return fresh && header.slice(3).split(',').some((hex) => hex.length === expected.length && timingSafeEqual(Buffer.from(hex), expected))
}

const svixSecret = `whsec_${randomBytes(24).toString('base64')}`
const stripeSecret = `whsec_${randomBytes(16).toString('hex')}`
const githubSecret = 'the receiver’s GitHub secret, with spaces'
const outpostSecret = `whsec_${randomBytes(32).toString('hex')}`

const masked = (secret: string) => `${secret.slice(0, 4)}****`

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`compatible webhook signatures: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let n = 0
    const http = async (method: string, path: string, body?: unknown) => {
      const response = await outflow.fetch(
        new Request(`http://outflow.test/api/v1${path}`, {
          method,
          headers: { authorization: `Bearer ${apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      )
      return { status: response.status, body: (await response.json()) as any }
    }
    /** Publish one event to `topic` and the request the receiver got for it on `path`. */
    const deliver = async (topic: string, path: string) => {
      const seen = receiver.on(path).length
      await outflow.publish({ tenant_id: 'acme', id: `${topic}-${++n}`, topic, data: { n, topic } })
      return (await waitFor(() => receiver.on(path).length > seen && receiver.on(path)))[seen]!
    }
    const create = (id: string, config: Record<string, unknown>, credentials?: Record<string, unknown>) =>
      outflow.createDestination('acme', { id, type: 'webhook', topics: [`compat.${id}`], config: { url: `${receiver.url}/${id}`, ...config }, ...(credentials ? { credentials } : {}) })

    beforeAll(async () => {
      receiver = await startReceiver()
      outflow = await kind.create()
      await outflow.upsertTenant('acme', {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('svix: svix-id, svix-timestamp and svix-signature that svix Webhook.verify accepts, beside a webhook-signature standardwebhooks accepts', async () => {
      const created = await create('svix', { compatible_signature: 'svix' }, { compatible_signature_secret: svixSecret })
      expect(created.credentials.compatible_signature_secret).toBe(masked(svixSecret))
      const received = await deliver('compat.svix', '/svix')
      expect(new SvixWebhook(svixSecret).verify(received.body, only(received, 'svix-'))).toEqual({ n, topic: 'compat.svix' })
      expect(received.headers['svix-id']).toBe(received.headers['webhook-id'])
      expect(() => new SvixWebhook(svixSecret).verify(received.body.replace('svix', 'xivs'), only(received, 'svix-'))).toThrow()
      expect(new StandardWebhook(created.credentials.secret as string).verify(received.body, only(received, 'webhook-'))).toEqual({ n, topic: 'compat.svix' })
    })

    it('github: X-Hub-Signature-256 that @octokit/webhooks-methods verify accepts', async () => {
      await create('github', { compatible_signature: 'github' }, { compatible_signature_secret: githubSecret })
      const received = await deliver('compat.github', '/github')
      expect(received.headers['x-hub-signature-256']).toMatch(/^sha256=[0-9a-f]{64}$/)
      expect(await verifyGithub(githubSecret, received.body, received.headers['x-hub-signature-256'] as string)).toBe(true)
      expect(await verifyGithub('another secret', received.body, received.headers['x-hub-signature-256'] as string)).toBe(false)
    })

    it('stripe: Stripe-Signature that stripe.webhooks.constructEvent accepts', async () => {
      await create('stripe', { compatible_signature: 'stripe' }, { compatible_signature_secret: stripeSecret })
      const received = await deliver('compat.stripe', '/stripe')
      expect(stripe.webhooks.constructEvent(received.body, received.headers['stripe-signature'] as string, stripeSecret)).toEqual({ n, topic: 'compat.stripe' })
      expect(received.headers['stripe-signature']).toMatch(new RegExp(`^t=${received.headers['webhook-timestamp']},v1=[0-9a-f]{64}$`))
    })

    it('outpost: x-outpost-signature v0, timestamp, event id and topic, checked by the documented algorithm', async () => {
      await create('outpost', { compatible_signature: 'outpost' }, { compatible_signature_secret: outpostSecret })
      const received = await deliver('compat.outpost', '/outpost')
      expect(outpostVerifies(received, outpostSecret)).toBe(true)
      expect(outpostVerifies({ ...received, body: `${received.body} ` }, outpostSecret)).toBe(false)
      expect(received.headers).toMatchObject({ 'x-outpost-event-id': received.headers['webhook-id'], 'x-outpost-topic': 'compat.outpost', 'x-outpost-timestamp': received.headers['webhook-timestamp'] })
      // An Outpost secret (whsec_ + 64 hex digits) is also valid as the signing secret: as text for v0, decoded for v1.
      const created = await create('outpost-own', { compatible_signature: 'outpost' }, { secret: outpostSecret })
      expect(created.credentials.secret).toBe(outpostSecret)
      const own = await deliver('compat.outpost-own', '/outpost-own')
      expect(outpostVerifies(own, outpostSecret)).toBe(true)
      expect(new StandardWebhook(outpostSecret).verify(own.body, only(own, 'webhook-'))).toMatchObject({ topic: 'compat.outpost-own' })
    })

    it('custom: the header and templates given, signed with the signing secret when no other is set', async () => {
      const created = await create('custom', {
        compatible_signature: 'custom',
        compatible_signature_header: 'X-Acme-Signature',
        compatible_signature_template: 'ts={timestamp};id={id};sig={signature}',
        compatible_signed_content: '{timestamp}|{id}|{body}',
        compatible_signature_encoding: 'base64',
      })
      const secret = created.credentials.secret as string
      const received = await deliver('compat.custom', '/custom')
      const { 'webhook-id': id, 'webhook-timestamp': ts } = received.headers
      const mac = createHmac('sha256', secret).update(`${ts}|${id}|${received.body}`).digest('base64')
      expect(received.headers['x-acme-signature']).toBe(`ts=${ts};id=${id};sig=${mac}`)
    })

    it('signs with the current and the previous signing secret during a rotation, where the format lists several', async () => {
      const created = await create('rotated', { compatible_signature: 'stripe' })
      const before = created.credentials.secret as string
      const rotated = await outflow.updateDestination('acme', 'rotated', { credentials: { rotate_secret: true } })
      const after = rotated.credentials.secret as string
      const received = await deliver('compat.rotated', '/rotated')
      expect(String(received.headers['stripe-signature']).match(/v1=/g)).toHaveLength(2)
      for (const secret of [before, after]) expect(stripe.webhooks.constructEvent(received.body, received.headers['stripe-signature'] as string, secret)).toMatchObject({ topic: 'compat.rotated' })
      // The signature_scheme still decides webhook-signature: ed25519 here, while the compatible one stays HMAC.
      await outflow.updateDestination('acme', 'rotated', { config: { signature_scheme: 'ed25519', compatible_signature: 'svix' } })
      const svix = await deliver('compat.rotated', '/rotated')
      expect(String(svix.headers['webhook-signature'])).toMatch(/^v1a,/)
      for (const secret of [before, after]) expect(new SvixWebhook(secret).verify(svix.body, only(svix, 'svix-'))).toMatchObject({ topic: 'compat.rotated' })
    })

    it('over HTTP: created, read back and updated with the secret sealed at rest and masked in every answer', async () => {
      const body = { id: 'over-http', type: 'webhook', topics: ['compat.http'], config: { url: `${receiver.url}/over-http`, compatible_signature: 'stripe' }, credentials: { compatible_signature_secret: stripeSecret } }
      const created = await http('POST', '/tenants/acme/destinations', body)
      expect(created.status, JSON.stringify(created.body)).toBe(201)
      expect(created.body.config).toMatchObject({ compatible_signature: 'stripe' })
      expect(created.body.credentials.compatible_signature_secret).toBe(masked(stripeSecret))
      const read = await http('GET', '/tenants/acme/destinations/over-http')
      expect(read.body.credentials.compatible_signature_secret).toBe(masked(stripeSecret))
      const row = (await outflow.storage.getDestination('acme', 'over-http'))!.credentials
      expect(row).toMatch(/^enc:v2:/)
      expect(row).not.toContain(stripeSecret)
      let received = await deliver('compat.http', '/over-http')
      expect(stripe.webhooks.constructEvent(received.body, received.headers['stripe-signature'] as string, stripeSecret)).toMatchObject({ topic: 'compat.http' })

      // A PATCH that echoes the masked value keeps the secret; a new preset and secret replace them.
      const echoed = await http('PATCH', '/tenants/acme/destinations/over-http', { credentials: read.body.credentials })
      expect(echoed.status).toBe(200)
      received = await deliver('compat.http', '/over-http')
      expect(stripe.webhooks.constructEvent(received.body, received.headers['stripe-signature'] as string, stripeSecret)).toMatchObject({ topic: 'compat.http' })
      const updated = await http('PATCH', '/tenants/acme/destinations/over-http', { config: { compatible_signature: 'github' }, credentials: { compatible_signature_secret: githubSecret } })
      expect(updated.status, JSON.stringify(updated.body)).toBe(200)
      expect(updated.body.credentials.compatible_signature_secret).toBe(masked(githubSecret))
      expect((await http('GET', '/tenants/acme/destinations/over-http')).body).toMatchObject({ config: { compatible_signature: 'github' }, credentials: { compatible_signature_secret: masked(githubSecret) } })
      received = await deliver('compat.http', '/over-http')
      expect(received.headers['stripe-signature']).toBeUndefined()
      expect(await verifyGithub(githubSecret, received.body, received.headers['x-hub-signature-256'] as string)).toBe(true)
      expect((await outflow.storage.getDestination('acme', 'over-http'))!.credentials).not.toContain(githubSecret)
    })

    it('refuses what it could not send with 422s naming the field, over HTTP and the typed API, storing nothing', async () => {
      const long = `{signature}${'x'.repeat(250)}`
      const bad: [Record<string, unknown>, Record<string, unknown>, Record<string, string>][] = [
        [{ compatible_signature: 'paypal' }, {}, { 'config.compatible_signature': 'must be one of: svix, github, stripe, outpost, custom' }],
        [{ compatible_signature: 'custom' }, {}, { 'config.compatible_signature_header': 'required with compatible_signature "custom"' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signature_template: 'v1={secret}' }, {}, { 'config.compatible_signature_template': 'has an unknown variable {secret}: use {signature}, {timestamp}, {id}' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signature_template: 't={timestamp}' }, {}, { 'config.compatible_signature_template': 'must contain {signature}' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signature_template: long }, {}, { 'config.compatible_signature_template': 'must be at most 256 characters' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signed_content: '{body}.{body}' }, {}, { 'config.compatible_signed_content': 'may use {body} at most once' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signed_content: '{timestamp}.{body' }, {}, { 'config.compatible_signed_content': 'has a "{" without its "}": use {id}, {timestamp}, {body}' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'Webhook-Signature' }, {}, { 'config.compatible_signature_header': 'is set by Outflow and cannot be used' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signature_encoding: 'base32' }, {}, { 'config.compatible_signature_encoding': 'must be one of: hex, base64' }],
        [{ compatible_signature: 'github', compatible_signature_header: 'X-Sig' }, {}, { 'config.compatible_signature_header': 'is only used with compatible_signature "custom"' }],
        [{}, { compatible_signature_secret: 'orphan' }, { 'credentials.compatible_signature_secret': 'needs compatible_signature' }],
        [{ compatible_signature: 'svix' }, { compatible_signature_secret: 'not-a-svix-secret' }, { 'credentials.compatible_signature_secret': 'is a Svix secret, so it must be "whsec_" followed by base64' }],
        [{ compatible_signature: 'github', custom_headers: { 'X-Hub-Signature-256': 'sha256=0' } }, {}, { 'config.custom_headers.X-Hub-Signature-256': 'is also set by the compatible signature (github)' }],
        [{ compatible_signature: 'stripe' }, { auth_header_name: 'Stripe-Signature', auth_header_value: 'v' }, { 'credentials.auth_header_name': 'is also set by the compatible signature (stripe)' }],
        [{ compatible_signature: 'custom', compatible_signature_header: 'Authorization' }, { bearer_token: 'tok' }, { 'config.compatible_signature_header': 'is the Authorization header that the authentication sets' }],
      ]
      await create('plain', {})
      const before = await snapshot(outflow)
      for (const [config, credentials, data] of bad) {
        const body = { id: 'refused', type: 'webhook', topics: ['x'], config: { url: `${receiver.url}/x`, ...config }, credentials }
        const answer = await http('POST', '/tenants/acme/destinations', body)
        expect([answer.status, answer.body.data], JSON.stringify(body)).toEqual([422, data])
        const error = await rejection(outflow.createDestination('acme', body))
        expect([error.status, error.data]).toEqual([422, data])
        const patch = await http('PATCH', '/tenants/acme/destinations/plain', { config, credentials })
        expect(patch.body.data, JSON.stringify(body)).toEqual(data)
      }
      expect(await snapshot(outflow)).toBe(before)
    })
  })
}
