import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as ed from '@noble/ed25519'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { createVerifier, verifyWebhook, WebhookVerificationError } from '../../src/verify.js'
import { engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`

/** An Ed25519 key made by @noble/ed25519, independent of node:crypto, and deliveries signed with it. */
async function nobleKey(fill: number) {
  const seed = new Uint8Array(32).fill(fill)
  const publicKey = await ed.getPublicKeyAsync(seed)
  const x = Buffer.from(publicKey).toString('base64url')
  return {
    whpk: `whpk_${Buffer.from(publicKey).toString('base64')}`,
    jwk: { kty: 'OKP', crv: 'Ed25519', x, kid: `noble-${fill}` },
    async sign(id: string, timestamp: number, body: string) {
      const signature = await ed.signAsync(new TextEncoder().encode(`${id}.${timestamp}.${body}`), seed)
      return { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1a,${Buffer.from(signature).toString('base64')}` }
    },
  }
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

/** A JWK Set served over HTTP that the test changes, counting the fetches. */
async function keySetServer(initial: object[]) {
  const state = { keys: initial, fetches: 0 }
  const server: Server = createServer((req, res) => {
    state.fetches++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ keys: state.keys }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { state, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/keys`, close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))) }
}

describe('outflow/verify against independent signers', () => {
  it('verifies a v1a signature made by @noble/ed25519 with its pinned whpk_ key or JWK, and refuses a changed body', async () => {
    const key = await nobleKey(1)
    const body = '{"order":1}'
    const headers = await key.sign('evt_1', nowSeconds(), body)
    expect(await verifyWebhook(body, headers, { publicKeys: [key.whpk] })).toEqual({ id: 'evt_1', timestamp: Number(headers['webhook-timestamp']), payload: { order: 1 }, scheme: 'v1a' })
    expect(await verifyWebhook(Buffer.from(body), new Headers(headers), { publicKeys: [key.jwk] })).toMatchObject({ scheme: 'v1a', kid: 'noble-1' })
    await expect(verifyWebhook('{"order":2}', headers, { publicKeys: [key.whpk] })).rejects.toThrow('no signature matches')
    await expect(verifyWebhook(body, headers, { publicKeys: [(await nobleKey(2)).whpk] })).rejects.toThrow(WebhookVerificationError)
  })

  it('verifies v1 signatures made by the stock standardwebhooks package, and refuses another secret', async () => {
    const wh = new Webhook(secret)
    const at = new Date()
    const body = '{"n":1}'
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': wh.sign('msg_1', at, body) }
    expect(await verifyWebhook(body, headers, { secret })).toMatchObject({ id: 'msg_1', scheme: 'v1', payload: { n: 1 } })
    await expect(verifyWebhook(body, headers, { secret: `whsec_${Buffer.alloc(32, 4).toString('base64')}` })).rejects.toThrow('no signature matches')
  })

  it('refuses timestamps outside the tolerance, both ways, and missing headers', async () => {
    const key = await nobleKey(1)
    const old = await key.sign('evt_1', nowSeconds() - 301, '{}')
    const future = await key.sign('evt_1', nowSeconds() + 301, '{}')
    await expect(verifyWebhook('{}', old, { publicKeys: [key.whpk] })).rejects.toThrow('too old')
    await expect(verifyWebhook('{}', future, { publicKeys: [key.whpk] })).rejects.toThrow('in the future')
    expect(await verifyWebhook('{}', old, { publicKeys: [key.whpk], toleranceSeconds: 600 })).toMatchObject({ scheme: 'v1a' })
    await expect(verifyWebhook('{}', { 'webhook-id': 'x' }, { publicKeys: [key.whpk] })).rejects.toThrow('missing')
  })

  it('never takes a key from the request: a signature by a key named only in a header is refused', async () => {
    const attacker = await nobleKey(9)
    const headers = { ...(await attacker.sign('evt_1', nowSeconds(), '{}')), 'webhook-public-key': attacker.whpk }
    await expect(verifyWebhook('{}', headers, { publicKeys: [(await nobleKey(1)).whpk] })).rejects.toThrow('no signature matches')
  })

  it('fetches a key-set URL once, caches it, fetches again once for an unknown signature (a rotation), and no more often than minRefreshIntervalMs', async () => {
    const [a, b, c] = [await nobleKey(1), await nobleKey(2), await nobleKey(3)]
    const set = await keySetServer([a.jwk])
    try {
      const verifier = createVerifier({ keySetUrl: set.url })
      for (let i = 0; i < 3; i++) expect(await verifier.verify('{}', await a.sign(`e${i}`, nowSeconds(), '{}'))).toMatchObject({ kid: 'noble-1' })
      expect(set.state.fetches).toBe(1)
      // The service rotated to b: the first b signature makes the verifier fetch again, once.
      set.state.keys = [b.jwk, a.jwk]
      expect(await verifier.verify('{}', await b.sign('e3', nowSeconds(), '{}'))).toMatchObject({ kid: 'noble-2' })
      expect(set.state.fetches).toBe(2)
      // A key the set never had: refused, and within 10 s it does not fetch again.
      await expect(verifier.verify('{}', await c.sign('e4', nowSeconds(), '{}'))).rejects.toThrow('no signature matches')
      await expect(verifier.verify('{}', await c.sign('e5', nowSeconds(), '{}'))).rejects.toThrow('no signature matches')
      expect(set.state.fetches).toBe(2)
    } finally {
      await set.close()
    }
  })

  it('fetches the key set again when its cache time has passed', async () => {
    const a = await nobleKey(1)
    const set = await keySetServer([a.jwk])
    try {
      let clock = Date.now()
      const verifier = createVerifier({ keySetUrl: set.url, now: () => clock })
      await verifier.verify('{}', await a.sign('e1', Math.floor(clock / 1000), '{}'))
      clock += 299_000
      await verifier.verify('{}', await a.sign('e2', Math.floor(clock / 1000), '{}'))
      expect(set.state.fetches).toBe(1)
      clock += 2_000
      await verifier.verify('{}', await a.sign('e3', Math.floor(clock / 1000), '{}'))
      expect(set.state.fetches).toBe(2)
    } finally {
      await set.close()
    }
  })
})

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`outflow/verify with Outflow's own deliveries: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let api: Server
    let apiUrl: string
    let keySetFetches = 0
    beforeAll(async () => {
      receiver = await startReceiver()
      outflow = await kind.create()
      await outflow.upsertTenant('acme', {})
      // The engine's HTTP API on a real port: the verifier fetches the key set from it.
      api = createServer(async (req, res) => {
        if (req.url?.endsWith('/signing-keys')) keySetFetches++
        const response = await outflow.fetch(new Request(`http://127.0.0.1${req.url}`))
        res.writeHead(response.status, Object.fromEntries(response.headers))
        res.end(await response.text())
      })
      await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve))
      apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`
    })
    afterAll(async () => {
      api.closeAllConnections()
      await new Promise<void>((r) => api.close(() => r()))
      await kind.cleanup()
      await receiver.close()
    })

    it('verifies v1a deliveries with the key set URL (also across a rotation) and with the key @noble/ed25519 checks, v1 with the secret', async () => {
      const d = await outflow.createDestination('acme', { id: 'both', type: 'webhook', topics: ['v.*'], config: { url: `${receiver.url}/both`, signature_scheme: 'both' } })
      const verifier = createVerifier({ keySetUrl: `${apiUrl}/api/v1/signing-keys` })
      await outflow.publish({ tenant_id: 'acme', id: 'v-1', topic: 'v.one', data: { n: 1 } })
      const first = await waitFor(() => receiver.on('/both').find((r) => r.headers['webhook-id'] === 'v-1'))
      const [active] = (await outflow.getSigningKeys()).keys
      expect(await verifier.verify(first.body, first.headers)).toEqual({ id: 'v-1', timestamp: Number(first.headers['webhook-timestamp']), payload: { n: 1 }, scheme: 'v1a', kid: active!.kid })
      expect(await verifyWebhook(first.body, first.headers, { secret: String(d.credentials.secret) })).toMatchObject({ scheme: 'v1' })
      // The same v1a signature checked by @noble/ed25519 with the published key.
      const v1a = String(first.headers['webhook-signature']).split(' ').find((s) => s.startsWith('v1a,'))!
      const message = new TextEncoder().encode(`v-1.${first.headers['webhook-timestamp']}.${first.body}`)
      expect(await ed.verifyAsync(Buffer.from(v1a.slice(4), 'base64'), message, Buffer.from(active!.x, 'base64url'))).toBe(true)

      // After a rotation the old key still signs during the overlap; once only the new key signs
      // (overlap ended), the verifier's cached set lacks it and it fetches the set again.
      await outflow.rotateSigningKey({ overlap: '1m' })
      const rotated = (await outflow.getSigningKeys()).keys
      const onlyNew = await outflow.createDestination('acme', { id: 'ed', type: 'webhook', topics: ['w.*'], config: { url: `${receiver.url}/ed`, signature_scheme: 'ed25519' } })
      expect(onlyNew.config.signature_scheme).toBe('ed25519')
      await outflow.publish({ tenant_id: 'acme', id: 'w-1', topic: 'w.one', data: { n: 2 } })
      const second = await waitFor(() => receiver.on('/ed').find((r) => r.headers['webhook-id'] === 'w-1'))
      const newOnly = { ...second.headers, 'webhook-signature': String(second.headers['webhook-signature']).split(' ')[0]! }
      expect(keySetFetches).toBe(1)
      expect(await verifier.verify(second.body, newOnly)).toMatchObject({ scheme: 'v1a', kid: rotated[0]!.kid })
      expect(keySetFetches).toBe(2)
    })
  })
}
