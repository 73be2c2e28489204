import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { issueTenantToken, payloadLinkKey, signPayloadLink, tenantTokenLifetimeSeconds, verifyPayloadLink, verifyTenantToken } from '../src/tokens.js'

const secret = 'token-secret-0123456789abcdef'
const now = new Date('2026-03-01T12:00:00.000Z')
const iat = Math.floor(now.getTime() / 1000)
const createdAt = new Date('2026-01-15T08:30:00.123Z')

/** A token with exactly these claims and header, signed with `key` (HS256 unless `alg` says otherwise). */
function signToken(claims: Record<string, unknown>, key = secret, alg = 'HS256'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg }).sign(new TextEncoder().encode(key))
}
const valid = { iss: 'outflow', sub: 'acme', tenant_created_at: createdAt.getTime(), iat, exp: iat + 3600 }

describe('issueTenantToken', () => {
  it('signs HS256 with iss outflow, sub the tenant, the tenant creation time in ms, valid 24 h from now', async () => {
    const token = await issueTenantToken(secret, 'acme', createdAt, now)
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'HS256', typ: 'JWT' })
    expect(decodeJwt(token)).toEqual({ iss: 'outflow', sub: 'acme', tenant_created_at: createdAt.getTime(), iat, exp: iat + 24 * 60 * 60 })
    expect(tenantTokenLifetimeSeconds).toBe(86_400)
  })

  it('truncates a fractional issue time to the second', async () => {
    const token = await issueTenantToken(secret, 'acme', createdAt, new Date(now.getTime() + 999))
    expect(decodeJwt(token)).toMatchObject({ iat, exp: iat + 86_400 })
  })

  it('issues a token its own verifier accepts, with the tenant and its creation time', async () => {
    const token = await issueTenantToken(secret, 'acme', createdAt, now)
    expect(await verifyTenantToken(secret, token, now)).toEqual({ tenantId: 'acme', tenantCreatedAt: createdAt.getTime() })
  })
})

describe('verifyTenantToken', () => {
  it('accepts a well-formed token through its whole life, and one minute of clock difference either side', async () => {
    const token = await issueTenantToken(secret, 'acme', createdAt, now)
    for (const offsetSeconds of [-60, 0, 86_400 - 1, 86_400 + 59])
      expect(await verifyTenantToken(secret, token, new Date(now.getTime() + offsetSeconds * 1000)), `at ${offsetSeconds} s`).toEqual({ tenantId: 'acme', tenantCreatedAt: createdAt.getTime() })
  })

  it('refuses a token before its issue time less the tolerance, and after its expiry plus the tolerance', async () => {
    const token = await issueTenantToken(secret, 'acme', createdAt, now)
    expect(await verifyTenantToken(secret, token, new Date(now.getTime() - 62_000))).toBeNull()
    expect(await verifyTenantToken(secret, token, new Date(now.getTime() + (86_400 + 61) * 1000))).toBeNull()
  })

  it('refuses a token signed with another secret', async () => {
    expect(await verifyTenantToken(secret, await issueTenantToken('another-secret-0123456789', 'acme', createdAt, now), now)).toBeNull()
  })

  it('refuses a token signed with another algorithm, even with the same secret', async () => {
    expect(await verifyTenantToken(secret, await signToken(valid, secret, 'HS512'), now)).toBeNull()
  })

  it('refuses a token from another issuer, or none', async () => {
    expect(await verifyTenantToken(secret, await signToken({ ...valid, iss: 'someone-else' }), now)).toBeNull()
    const { iss: _iss, ...noIssuer } = valid
    expect(await verifyTenantToken(secret, await signToken(noIssuer), now)).toBeNull()
  })

  it.each(['exp', 'iat', 'sub', 'tenant_created_at'])('refuses a token without %s', async (claim) => {
    const claims: Record<string, unknown> = { ...valid }
    delete claims[claim]
    expect(await verifyTenantToken(secret, await signToken(claims), now)).toBeNull()
  })

  it.each([
    ['an empty sub', { sub: '' }],
    ['a sub that is not a string', { sub: 123 }],
    ['a tenant creation time that is not an integer', { tenant_created_at: 1.5 }],
    ['a tenant creation time as a string', { tenant_created_at: String(createdAt.getTime()) }],
  ])('refuses a token with %s', async (_, claims) => {
    expect(await verifyTenantToken(secret, await signToken({ ...valid, ...claims }), now)).toBeNull()
  })

  it('refuses a token whose lifetime (exp - iat) is over 24 h, and accepts one of exactly 24 h', async () => {
    expect(await verifyTenantToken(secret, await signToken({ ...valid, exp: iat + 86_400 + 1 }), now)).toBeNull()
    expect(await verifyTenantToken(secret, await signToken({ ...valid, exp: iat + 86_400 }), now)).toEqual({ tenantId: 'acme', tenantCreatedAt: createdAt.getTime() })
  })

  it('refuses a token issued more than 24 h ago even when its exp says otherwise', async () => {
    const old = iat - 86_400 - 120
    expect(await verifyTenantToken(secret, await signToken({ ...valid, iat: old, exp: iat + 3600 }), now)).toBeNull()
  })

  it('refuses what is not a JWT', async () => {
    expect(await verifyTenantToken(secret, 'not-a-token', now)).toBeNull()
    expect(await verifyTenantToken(secret, '', now)).toBeNull()
  })
})

describe('payload link tokens', () => {
  const key = payloadLinkKey(secret)
  const exp = iat + 3600
  const claims = { tenantId: 'acme', eventId: 'evt_1', destinationId: 'des_1', exp }

  it('verifies its own token until its expiry, and not from that second on', () => {
    const token = signPayloadLink(key, claims)
    expect(verifyPayloadLink(key, token, now)).toEqual(claims)
    expect(verifyPayloadLink(key, token, new Date(exp * 1000 - 1))).toEqual(claims)
    expect(verifyPayloadLink(key, token, new Date(exp * 1000))).toBeNull()
  })

  it('refuses a token of another key, a changed byte, a padded MAC and what is not a link', async () => {
    const token = signPayloadLink(key, claims)
    const [body, mac] = token.split('.') as [string, string]
    expect(verifyPayloadLink(payloadLinkKey('another-secret-0123456789'), token, now)).toBeNull()
    for (let i = 0; i < token.length; i++) if (token[i] !== '.') expect(verifyPayloadLink(key, token.slice(0, i) + (token[i] === 'A' ? 'B' : 'A') + token.slice(i + 1), now)).toBeNull()
    expect(verifyPayloadLink(key, `${body}.${mac}=`, now)).toBeNull()
    expect(verifyPayloadLink(key, body, now)).toBeNull()
    expect(verifyPayloadLink(key, `.${mac}`, now)).toBeNull()
    expect(verifyPayloadLink(key, await issueTenantToken(secret, 'acme', createdAt, now), now)).toBeNull()
  })

  it('is keyed apart from tenant tokens: a link is no tenant token under the same secret', async () => {
    expect(await verifyTenantToken(secret, signPayloadLink(key, claims), now)).toBeNull()
    expect(Buffer.from(key).equals(Buffer.from(secret))).toBe(false)
  })
})
