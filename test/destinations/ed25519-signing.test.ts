import * as ed from '@noble/ed25519'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createKeyring } from '../../src/credentials.js'
import type { Outflow } from '../../src/engine.js'
import { SigningKeyring } from '../../src/engine/signing-keys.js'
import { generateSigningSecret, keyFromSeed } from '../../src/net/ed25519.js'
import { resolveOptions } from '../../src/options.js'
import type { Storage } from '../../src/storage/storage.js'
import { apiKey, engineKinds, jwtSecret, rejection } from '../support/engines.js'
import { startReceiver, waitFor, type Received } from '../support/receiver.js'
import { sqlStorages } from '../support/sql-storages.js'

/** The v1a signatures of a delivery, each checked by @noble/ed25519 (independent of node:crypto) against the given whpk_ keys. */
async function verifiedBy(received: Received, whpks: string[]): Promise<string[]> {
  const id = received.headers['webhook-id'] as string
  const timestamp = received.headers['webhook-timestamp'] as string
  const message = new TextEncoder().encode(`${id}.${timestamp}.${received.body}`)
  const signatures = String(received.headers['webhook-signature']).split(' ').filter((s) => s.startsWith('v1a,'))
  const matched: string[] = []
  for (const signature of signatures) {
    const bytes = Buffer.from(signature.slice(4), 'base64')
    for (const key of whpks) if (await ed.verifyAsync(bytes, message, Buffer.from(key.slice(5), 'base64'))) matched.push(key)
  }
  return matched
}

const get = (outflow: Outflow, path: string, headers: Record<string, string> = {}) => outflow.fetch(new Request(`http://outflow.test${path}`, { headers }))
const post = (outflow: Outflow, path: string, body: unknown, token: string | null = apiKey) =>
  outflow.fetch(
    new Request(`http://outflow.test${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  )

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`Ed25519 (v1a) signatures: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    beforeAll(async () => {
      receiver = await startReceiver()
      outflow = await kind.create()
      await outflow.upsertTenant('acme', {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('generates a signing key at the first start, stored sealed like credentials, and publishes it as a JWK Set', async () => {
      const { keys } = await outflow.getSigningKeys()
      expect(keys).toHaveLength(1)
      const [key] = keys
      expect(key).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig', status: 'active', retires_at: null })
      expect(key!.whpk).toBe(`whpk_${Buffer.from(key!.x, 'base64url').toString('base64')}`)
      const [row] = await outflow.storage.listSigningKeys()
      expect(row).toMatchObject({ kid: key!.kid, public_key: key!.x, active: true })
      expect(row!.secret).toMatch(/^enc:v2:/)
      expect(row!.secret).not.toContain('whsk_')
    })

    it('signs with v1a only for signature_scheme ed25519: verified by @noble/ed25519 with the published key', async () => {
      await outflow.createDestination('acme', { id: 'ed', type: 'webhook', topics: ['ed.only'], config: { url: `${receiver.url}/ed`, signature_scheme: 'ed25519' } })
      await outflow.publish({ tenant_id: 'acme', topic: 'ed.only', data: { n: 1 } })
      const [delivered] = await waitFor(() => receiver.on('/ed').length > 0 && receiver.on('/ed'))
      const signatures = String(delivered!.headers['webhook-signature']).split(' ')
      expect(signatures).toHaveLength(1)
      expect(signatures[0]).toMatch(/^v1a,/)
      const { keys } = await outflow.getSigningKeys()
      expect(await verifiedBy(delivered!, [keys[0]!.whpk])).toEqual([keys[0]!.whpk])
      // A signature over another body does not verify.
      expect(await verifiedBy({ ...delivered!, body: '{"n":2}' }, [keys[0]!.whpk])).toEqual([])
    })

    it('signs with v1 and v1a for signature_scheme both: standardwebhooks verifies the v1 one, @noble/ed25519 the v1a one', async () => {
      const d = await outflow.createDestination('acme', { id: 'both', type: 'webhook', topics: ['ed.both'], config: { url: `${receiver.url}/both`, signature_scheme: 'both' } })
      await outflow.publish({ tenant_id: 'acme', topic: 'ed.both', data: { n: 2 } })
      const [delivered] = await waitFor(() => receiver.on('/both').length > 0 && receiver.on('/both'))
      expect(String(delivered!.headers['webhook-signature'])).toMatch(/^v1,\S+ v1a,\S+$/)
      expect(new Webhook(String(d.credentials.secret)).verify(delivered!.body, delivered!.headers as Record<string, string>)).toEqual({ n: 2 })
      const { keys } = await outflow.getSigningKeys()
      expect(await verifiedBy(delivered!, [keys[0]!.whpk])).toHaveLength(1)
    })

    it('signs a batch (one body of several events) with v1 and v1a for signature_scheme both', async () => {
      const d = await outflow.createDestination('acme', { id: 'both-batch', type: 'webhook', topics: ['ed.batch'], config: { url: `${receiver.url}/both-batch`, signature_scheme: 'both' }, batch: { max_events: 5, max_wait_ms: 20 } })
      await outflow.publishMany([{ tenant_id: 'acme', topic: 'ed.batch', data: { n: 1 } }, { tenant_id: 'acme', topic: 'ed.batch', data: { n: 2 } }])
      const [delivered] = await waitFor(() => receiver.on('/both-batch').length > 0 && receiver.on('/both-batch'))
      expect(String(delivered!.headers['webhook-signature'])).toMatch(/^v1,\S+ v1a,\S+$/)
      const events = new Webhook(String(d.credentials.secret)).verify(delivered!.body, delivered!.headers as Record<string, string>) as { data: unknown }[]
      expect(events.map((e) => e.data)).toEqual([{ n: 1 }, { n: 2 }])
      const { keys } = await outflow.getSigningKeys()
      expect(await verifiedBy(delivered!, [keys[0]!.whpk])).toHaveLength(1)
    })

    it('keeps hmac as the default: no v1a signature without signature_scheme', async () => {
      await outflow.createDestination('acme', { id: 'hmac', type: 'webhook', topics: ['ed.hmac'], config: { url: `${receiver.url}/hmac` } })
      await outflow.publish({ tenant_id: 'acme', topic: 'ed.hmac', data: {} })
      const [delivered] = await waitFor(() => receiver.on('/hmac').length > 0 && receiver.on('/hmac'))
      expect(String(delivered!.headers['webhook-signature'])).toMatch(/^v1,[^ ]+$/)
    })

    it('refuses an unknown signature_scheme with a 422 naming the field, and stores nothing', async () => {
      const error = await rejection(outflow.createDestination('acme', { id: 'bad-scheme', type: 'webhook', topics: ['x'], config: { url: `${receiver.url}/x`, signature_scheme: 'rsa' } }))
      expect(error.status).toBe(422)
      expect(error.data).toEqual({ 'config.signature_scheme': 'must be one of: hmac, ed25519, both' })
      expect(await outflow.storage.getDestination('acme', 'bad-scheme')).toBeNull()
    })

    it('rotates: the new key is active, the old one keeps signing beside it and stays published until its overlap ends', async () => {
      const [before] = (await outflow.getSigningKeys()).keys
      const rotated = await outflow.rotateSigningKey({ overlap: '2h' })
      expect(rotated.keys.map((k) => k.status)).toEqual(['active', 'previous'])
      expect(rotated.keys[1]!.kid).toBe(before!.kid)
      expect(Date.parse(rotated.keys[1]!.retires_at!) - Date.now()).toBeGreaterThan(2 * 3_600_000 - 60_000)
      await outflow.publish({ tenant_id: 'acme', topic: 'ed.only', data: { n: 3 } })
      const delivered = await waitFor(() => receiver.on('/ed').find((r) => r.body === '{"n":3}'))
      expect(String(delivered.headers['webhook-signature']).split(' ')).toHaveLength(2)
      // Each published key verifies one of the two signatures: a receiver with either key accepts the delivery.
      expect(await verifiedBy(delivered, rotated.keys.map((k) => k.whpk))).toEqual(rotated.keys.map((k) => k.whpk))
    })

    it('refuses a bad rotation body with a 422 and changes nothing', async () => {
      const before = await outflow.getSigningKeys()
      expect((await rejection(outflow.rotateSigningKey({ overlap: 'soon' }))).data).toEqual({ overlap: 'must be a duration like 30m, 24h, 7d or 2w' })
      expect((await rejection(outflow.rotateSigningKey({ overlap: '24h', kid: 'mine' }))).data).toEqual({ kid: 'unexpected field' })
      expect(await outflow.getSigningKeys()).toEqual(before)
    })

    it('serves the key set over HTTP without credentials, cacheable, at /api/v1/signing-keys and the well-known path', async () => {
      const expected = await outflow.getSigningKeys()
      for (const path of ['/api/v1/signing-keys', '/.well-known/webhook-signing-keys.json']) {
        const response = await get(outflow, path)
        expect(response.status, path).toBe(200)
        expect(response.headers.get('cache-control')).toBe('public, max-age=300')
        expect(await response.json()).toEqual(expected)
      }
    })

    it('rotates over HTTP for the admin only: 401 without a key, 403 with a tenant token, 422 on a bad body, 200 with the new set', async () => {
      const { token } = await outflow.getTenantToken('acme')
      expect((await post(outflow, '/api/v1/signing-keys/rotate', {}, null)).status).toBe(401)
      expect((await post(outflow, '/api/v1/signing-keys/rotate', {}, token)).status).toBe(403)
      expect((await post(outflow, '/api/v1/signing-keys/rotate', { overlap: -1 })).status).toBe(422)
      const before = await outflow.getSigningKeys()
      const response = await post(outflow, '/api/v1/signing-keys/rotate', undefined)
      expect(response.status).toBe(200)
      const after = (await response.json()) as Awaited<ReturnType<Outflow['getSigningKeys']>>
      expect(after.keys[0]!.status).toBe('active')
      expect(after.keys.map((k) => k.kid)).toEqual(expect.arrayContaining(before.keys.map((k) => k.kid)))
      expect(after.keys).toHaveLength(before.keys.length + 1)
    })
  })

  describe.runIf(kind.available)(`configured signing keys (signing.keys): ${kind.name}`, () => {
    afterAll(() => kind.cleanup())

    it('accepts whsk_ keys of 32 bytes (seed) and of 64 bytes (seed and public key), publishes them (the first active), stores none, and refuses to rotate them (409)', async () => {
      const seedOnly = generateSigningSecret()
      const seed = Buffer.from(seedOnly.slice(5), 'base64')
      const other = keyFromSeed(Buffer.alloc(32, 7))
      const withPublic = `whsk_${Buffer.concat([Buffer.alloc(32, 7), Buffer.from(other.x, 'base64url')]).toString('base64')}`
      const outflow = await kind.create({ signing: { keys: [seedOnly, withPublic] } })
      const { keys } = await outflow.getSigningKeys()
      expect(keys.map((k) => [k.kid, k.status])).toEqual([
        [keyFromSeed(seed).kid, 'active'],
        [other.kid, 'previous'],
      ])
      // The public key @noble/ed25519 derives from the seed is the one published.
      expect(Buffer.from(await ed.getPublicKeyAsync(seed)).toString('base64url')).toBe(keys[0]!.x)
      expect(await outflow.storage.listSigningKeys()).toEqual([])
      expect((await rejection(outflow.rotateSigningKey())).status).toBe(409)
    })

    it('refuses a 64-byte key whose public half is not its seed\'s, and keys that are not whsk_, at start', async () => {
      const mismatched = `whsk_${Buffer.concat([Buffer.alloc(32, 1), Buffer.from(keyFromSeed(Buffer.alloc(32, 2)).x, 'base64url')]).toString('base64')}`
      for (const [key, message] of [
        [mismatched, 'its public half does not belong to its seed'],
        [`whsk_${Buffer.alloc(48).toString('base64')}`, 'must encode 32 bytes (seed) or 64 bytes (seed and public key)'],
        ['whsec_abc', 'must be "whsk_" followed by base64'],
      ] as const) {
        const error = await rejection(kind.create({ signing: { keys: [key] } }))
        expect(error.message).toContain(message)
      }
    })
  })
}

for (const kind of sqlStorages) {
  describe.runIf(kind.available)(`signing keyring storage: ${kind.name}`, () => {
    const keyring = createKeyring(['signing-test-key-0123456789abcdef'])
    const options = resolveOptions({ storage: undefined as never, signing: { overlap: '1h' } })
    let close: () => Promise<void>
    let storages: Storage[]
    beforeAll(async () => {
      const db = await kind.open()
      const open = db.storage as () => Promise<Storage>
      storages = [await open(), await open()]
      await storages[0]!.migrate()
      close = async () => {
        for (const s of storages) await s.close()
        await db.close()
      }
    })
    afterAll(() => close())

    it('has one active key when two instances start at once on an empty keyring', async () => {
      const rings = storages.map((s) => new SigningKeyring(s, options, keyring, () => new Date()))
      await Promise.all(rings.map((r) => r.start()))
      rings.forEach((r) => r.close())
      const rows = await storages[0]!.listSigningKeys()
      expect(rows.filter((r) => r.active)).toHaveLength(1)
      expect(rings.map((r) => r.signers().map((k) => k.kid))).toEqual([[rows[0]!.kid], [rows[0]!.kid]])
    })

    it('stops signing with and publishing a previous key once its overlap has passed, and deletes it at the next rotation', async () => {
      let now = new Date()
      const ring = new SigningKeyring(storages[0]!, options, keyring, () => now)
      await ring.start()
      ring.close()
      const first = ring.signers()[0]!.kid
      await ring.rotate()
      expect(ring.signers().map((k) => k.kid)).toContain(first)
      now = new Date(now.getTime() + 3_600_001)
      expect(ring.signers().map((k) => k.kid)).not.toContain(first)
      expect((await ring.keySet()).keys.map((k) => k.kid)).not.toContain(first)
      await ring.rotate()
      expect((await storages[0]!.listSigningKeys()).map((r) => r.kid)).not.toContain(first)
    })

    it('never signs with a stored key whose secret was swapped for another key\'s, nor publishes it', async () => {
      const ring = new SigningKeyring(storages[0]!, options, keyring, () => new Date())
      await ring.rotate()
      const rows = await storages[0]!.listSigningKeys()
      const [a, b] = rows.slice(-2)
      expect(await storages[0]!.replaceSigningKeySecret(b!.kid, b!.secret, a!.secret)).toBe(true)
      const errors: string[] = []
      const quiet = resolveOptions({ storage: undefined as never, logger: { debug() {}, info() {}, warn() {}, error: (_f, m) => errors.push(m) } })
      const reread = new SigningKeyring(storages[0]!, quiet, keyring, () => new Date())
      const published = (await reread.keySet()).keys.map((k) => k.kid)
      expect(published).not.toContain(b!.kid)
      expect(errors).toContain('a stored signing key cannot be read: it neither signs nor is published')
    })
  })
}
