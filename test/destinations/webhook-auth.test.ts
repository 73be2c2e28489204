import { randomUUID, X509Certificate } from 'node:crypto'
import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { OAuth2Server } from 'oauth2-mock-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { selfSignedCertificate } from '../support/tls.js'

const clientGood = selfSignedCertificate()
const clientOther = selfSignedCertificate()
const serverCert = selfSignedCertificate()

/** An https receiver that asks for a client certificate and refuses a connection without one it trusts (clientGood). */
async function startMtlsReceiver() {
  const seen: { path: string; fingerprint: string }[] = []
  let refused = 0
  const server: HttpsServer = createHttpsServer({ key: serverCert.key, cert: serverCert.cert, ca: [clientGood.cert], requestCert: true, rejectUnauthorized: true }, (req, res) => {
    seen.push({ path: req.url ?? '', fingerprint: (req.socket as TLSSocket).getPeerCertificate().fingerprint256 })
    req.resume()
    req.on('end', () => res.end('ok'))
  })
  server.on('tlsClientError', () => refused++)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    refused: () => refused,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  }
}

const fingerprintOf = (pem: string) => new X509Certificate(pem).fingerprint256

async function lastAttempt(outflow: Outflow, eventId: string) {
  return waitFor(async () => (await outflow.listDeliveries('acme', eventId).catch(() => []))[0])
}

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`authenticated webhook delivery: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let n = 0
    const publish = async (topic: string) => (await outflow.publish({ tenant_id: 'acme', id: `${topic}-${++n}`, topic, data: { n } })).id
    beforeAll(async () => {
      receiver = await startReceiver()
      outflow = await kind.create()
      await outflow.upsertTenant('acme', {})
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('sends basic auth, a bearer token or a secret header from the credentials, stored encrypted and masked in answers', async () => {
      const cases = [
        { id: 'basic', credentials: { basic_username: 'hooks', basic_password: 'pa55-word' }, header: ['authorization', `Basic ${Buffer.from('hooks:pa55-word').toString('base64')}`], masked: { basic_password: 'pa55****' } },
        { id: 'bearer', credentials: { bearer_token: 'tok-123456' }, header: ['authorization', 'Bearer tok-123456'], masked: { bearer_token: 'tok-****' } },
        { id: 'header', credentials: { auth_header_name: 'X-Api-Key', auth_header_value: 'k3y-value' }, header: ['x-api-key', 'k3y-value'], masked: { auth_header_value: 'k3y-****' } },
      ] as const
      for (const c of cases) {
        const created = await outflow.createDestination('acme', { id: c.id, type: 'webhook', topics: [`auth.${c.id}`], config: { url: `${receiver.url}/${c.id}`, custom_headers: { Authorization: 'from-custom-headers' } }, credentials: c.credentials })
        expect(created.credentials).toMatchObject(c.masked)
        const row = (await outflow.storage.getDestination('acme', c.id))!.credentials
        expect(row).toMatch(/^enc:v2:/)
        for (const value of Object.values(c.credentials)) expect(row).not.toContain(value)
        await publish(`auth.${c.id}`)
        const [delivered] = await waitFor(() => receiver.on(`/${c.id}`).length > 0 && receiver.on(`/${c.id}`))
        expect(delivered!.headers[c.header[0]]).toBe(c.header[1])
      }
    })

    it('refuses incomplete or conflicting authentication and unusable certificates with 422s naming the fields, storing nothing', async () => {
      const bad: [Record<string, unknown>, Record<string, string>][] = [
        [{ basic_username: 'u' }, { 'credentials.basic_password': 'required with basic_username' }],
        [{ bearer_token: 't', auth_header_name: 'X-Key', auth_header_value: 'v' }, { 'credentials.auth_header_name': 'cannot be combined with bearer_token: use one of basic auth, a bearer token, a secret header or OAuth2' }],
        [{ oauth2_token_url: 'https://auth.example/token', oauth2_client_id: 'c' }, { 'credentials.oauth2_client_secret': 'required with oauth2_token_url' }],
        [{ auth_header_name: 'Webhook-Signature', auth_header_value: 'v' }, { 'credentials.auth_header_name': 'is set by Outflow and cannot be used' }],
        [{ tls_client_cert: clientGood.cert }, { 'credentials.tls_client_key': 'required with tls_client_cert' }],
        [{ tls_client_cert: clientGood.cert, tls_client_key: clientOther.key }, { 'credentials.tls_client_key': 'is not the private key of tls_client_cert' }],
        [{ tls_client_cert: '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----', tls_client_key: clientGood.key }, { 'credentials.tls_client_cert': 'must be a PEM certificate' }],
        [{ oauth2_token_url: 'https://user:pw@auth.example/token', oauth2_client_id: 'c', oauth2_client_secret: 's' }, { 'credentials.oauth2_token_url': 'must be an http or https URL without a user name or password' }],
      ]
      for (const [credentials, data] of bad) {
        const error = await rejection(outflow.createDestination('acme', { id: 'refused', type: 'webhook', topics: ['x'], config: { url: `${receiver.url}/x` }, credentials }))
        expect([error.status, error.data], JSON.stringify(credentials)).toEqual([422, data])
        expect(await outflow.storage.getDestination('acme', 'refused')).toBeNull()
      }
    })

    describe('mTLS', () => {
      let mtls: Awaited<ReturnType<typeof startMtlsReceiver>>
      beforeAll(async () => (mtls = await startMtlsReceiver()))
      afterAll(() => mtls.close())

      it('presents the client certificate to an https receiver that requires one, pinning the receiver CA', async () => {
        await outflow.createDestination('acme', { id: 'mtls', type: 'webhook', topics: ['mtls.ok'], config: { url: `${mtls.url}/mtls` }, credentials: { tls_client_cert: clientGood.cert, tls_client_key: clientGood.key, tls_ca: serverCert.cert } })
        const id = await publish('mtls.ok')
        expect(await lastAttempt(outflow, id)).toMatchObject({ status: 'success', response_status_code: 200 })
        expect(mtls.seen).toEqual([{ path: '/mtls', fingerprint: fingerprintOf(clientGood.cert) }])
      })

      it('is refused by that receiver without a certificate or with one it does not trust: failed attempts, nothing received', async () => {
        const refusedBefore = mtls.refused()
        await outflow.createDestination('acme', { id: 'no-cert', type: 'webhook', topics: ['mtls.none'], config: { url: `${mtls.url}/none` }, credentials: { tls_ca: serverCert.cert } })
        await outflow.createDestination('acme', { id: 'other-cert', type: 'webhook', topics: ['mtls.other'], config: { url: `${mtls.url}/other` }, credentials: { tls_client_cert: clientOther.cert, tls_client_key: clientOther.key, tls_ca: serverCert.cert } })
        for (const topic of ['mtls.none', 'mtls.other']) {
          const attempt = await lastAttempt(outflow, await publish(topic))
          expect(attempt.status, topic).toBe('failed')
          expect(attempt.response_status_code).toBeNull()
        }
        expect(mtls.seen.map((s) => s.path)).toEqual(['/mtls'])
        expect(mtls.refused()).toBeGreaterThan(refusedBefore)
      })

      it('does not trust a receiver whose certificate is not under the pinned CA', async () => {
        await outflow.createDestination('acme', { id: 'wrong-ca', type: 'webhook', topics: ['mtls.ca'], config: { url: `${mtls.url}/ca` }, credentials: { tls_client_cert: clientGood.cert, tls_client_key: clientGood.key, tls_ca: clientOther.cert } })
        expect(await lastAttempt(outflow, await publish('mtls.ca'))).toMatchObject({ status: 'failed', error_kind: 'tls' })
        expect(mtls.seen.map((s) => s.path)).not.toContain('/ca')
      })
    })

    describe('OAuth2 client credentials (oauth2-mock-server)', () => {
      const oauth = new OAuth2Server()
      const tokenRequests: { authorization?: string; body: Record<string, string> }[] = []
      const revoked = new Set<string>()
      let tokenTtl = 3600
      let api: Server
      let apiUrl: string
      let jwks: ReturnType<typeof createRemoteJWKSet>
      const accepted: string[] = []
      beforeAll(async () => {
        await oauth.issuer.keys.generate('RS256')
        await oauth.start(0, '127.0.0.1')
        oauth.service.on('beforeTokenSigning', (token: { payload: Record<string, unknown> }, req: { body: Record<string, string> }) => {
          token.payload.exp = Math.floor(Date.now() / 1000) + tokenTtl
          // A token id, as real servers issue: two tokens of one second are not the same JWT.
          token.payload.jti = randomUUID()
          if (req.body.audience) token.payload.aud = req.body.audience
        })
        oauth.service.on('beforeResponse', (response: { body: Record<string, unknown>; statusCode: number }, req: { headers: Record<string, string>; body: Record<string, string> }) => {
          tokenRequests.push({ authorization: req.headers.authorization, body: req.body })
          // The server checks the client: client_secret_basic with the right secret, or 401.
          if (req.headers.authorization !== `Basic ${Buffer.from('outflow-client:client-s3cret').toString('base64')}`) {
            response.statusCode = 401
            response.body = { error: 'invalid_client' }
          } else response.body.expires_in = tokenTtl
        })
        jwks = createRemoteJWKSet(new URL(`${oauth.issuer.url}/jwks`))
        // A receiver that accepts only a valid, unexpired, unrevoked token of that issuer with the audience and scope.
        const check = async (authorization: string | undefined) => {
          const token = authorization?.replace(/^Bearer /, '') ?? ''
          if (revoked.has(token)) return false
          try {
            const { payload } = await jwtVerify(token, jwks, { issuer: oauth.issuer.url!, audience: 'https://hooks.example' })
            return payload.scope === 'events:write'
          } catch {
            return false
          }
        }
        api = createHttpServer(async (req, res) => {
          req.resume()
          const ok = await check(req.headers.authorization)
          if (ok) accepted.push(req.headers.authorization!)
          res.statusCode = ok ? 200 : 401
          res.end(ok ? 'ok' : 'unauthorized')
        })
        await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve))
        apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`
      })
      afterAll(async () => {
        api.closeAllConnections()
        await new Promise<void>((r) => api.close(() => r()))
        await oauth.stop()
      })

      const grant = () => ({ oauth2_token_url: `${oauth.issuer.url}/token`, oauth2_client_id: 'outflow-client', oauth2_client_secret: 'client-s3cret', oauth2_scope: 'events:write', oauth2_audience: 'https://hooks.example' })

      it('fetches a token with client_secret_basic, sends it as a bearer token, and reuses it until shortly before it expires', async () => {
        tokenRequests.length = 0
        tokenTtl = 3
        await outflow.createDestination('acme', { id: 'oauth', type: 'webhook', topics: ['oauth.ok'], config: { url: `${apiUrl}/oauth` }, credentials: grant() })
        for (let i = 0; i < 2; i++) expect(await lastAttempt(outflow, await publish('oauth.ok'))).toMatchObject({ status: 'success' })
        expect(tokenRequests).toHaveLength(1)
        expect(tokenRequests[0]!.body).toMatchObject({ grant_type: 'client_credentials', scope: 'events:write', audience: 'https://hooks.example' })
        // Past the token's lifetime (3 s) the receiver would refuse it: a new one is fetched first.
        await new Promise((r) => setTimeout(r, 3_100))
        expect(await lastAttempt(outflow, await publish('oauth.ok'))).toMatchObject({ status: 'success' })
        expect(tokenRequests).toHaveLength(2)
        expect(new Set(accepted).size).toBe(2)
      })

      it('fetches a new token once when the receiver answers 401, and delivers with it', async () => {
        tokenTtl = 3600
        await outflow.createDestination('acme', { id: 'oauth-revoked', type: 'webhook', topics: ['oauth.revoked'], config: { url: `${apiUrl}/revoked` }, credentials: grant() })
        const first = await lastAttempt(outflow, await publish('oauth.revoked'))
        expect(first, JSON.stringify(first)).toMatchObject({ status: 'success' })
        const before = tokenRequests.length
        revoked.add(accepted.at(-1)!.replace(/^Bearer /, ''))
        const second = await lastAttempt(outflow, await publish('oauth.revoked'))
        expect(second, JSON.stringify(second)).toMatchObject({ status: 'success' })
        expect(tokenRequests.length).toBe(before + 1)
      })

      it('records a refused client as error_kind authentication and sends nothing to the receiver', async () => {
        const acceptedBefore = accepted.length
        await outflow.createDestination('acme', { id: 'oauth-bad', type: 'webhook', topics: ['oauth.bad'], config: { url: `${apiUrl}/bad` }, credentials: { ...grant(), oauth2_client_secret: 'wrong' } })
        const attempt = await lastAttempt(outflow, await publish('oauth.bad'))
        expect(attempt).toMatchObject({ status: 'failed', error_kind: 'authentication', response_status_code: null })
        expect(attempt.error).toBe('OAuth2 token endpoint answered HTTP 401 (invalid_client)')
        expect(accepted.length).toBe(acceptedBefore)
      })

      it('keeps the token endpoint under the SSRF guard: a loopback token URL is refused without a connection', async () => {
        const guarded = await kind.create({ allowPrivateNetworks: false })
        await guarded.upsertTenant('acme', {})
        const before = tokenRequests.length
        await guarded.createDestination('acme', { id: 'oauth-ssrf', type: 'webhook', topics: ['oauth.ssrf'], config: { url: 'https://hooks.example.com/x' }, credentials: grant() })
        const { id } = await guarded.publish({ tenant_id: 'acme', topic: 'oauth.ssrf', data: {} })
        const attempt = await lastAttempt(guarded, id)
        expect(attempt).toMatchObject({ status: 'failed', error_kind: 'ssrf' })
        expect(attempt.error).toMatch(/^OAuth2 token endpoint: /)
        expect(tokenRequests.length).toBe(before)
      })
    })
  })
}
