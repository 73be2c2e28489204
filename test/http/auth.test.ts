import { describe, expect, it } from 'vitest'
import { OutflowError } from '../../src/errors.js'
import { assertAuthConfigured, authenticate, authorize, type AuthSettings, type Principal } from '../../src/http/auth.js'

const apiKey = 'admin-key-0123456789'
/** A tenant token verifier that knows one token, `tok_acme`, granting tenant `acme`; it records what it was asked. */
function settings(overrides: Partial<AuthSettings> = {}): AuthSettings & { asked: string[] } {
  const asked: string[] = []
  return {
    apiKey,
    auth: true,
    asked,
    verifyTenantToken: async (token) => {
      asked.push(token)
      return token === 'tok_acme' ? 'acme' : null
    },
    ...overrides,
  }
}

/** The OutflowError a call rejects or throws with. */
async function refusal(call: () => unknown): Promise<OutflowError> {
  try {
    await call()
  } catch (err) {
    expect(err).toBeInstanceOf(OutflowError)
    return err as OutflowError
  }
  throw new Error('expected the call to be refused')
}

describe('assertAuthConfigured', () => {
  it('refuses an API without an apiKey unless auth: false is explicit', async () => {
    const err = await refusal(() => assertAuthConfigured({ auth: true, verifyTenantToken: async () => null }))
    expect(err.status).toBe(500)
    expect(err.message).toMatch(/needs an apiKey/)
    expect(await refusal(() => assertAuthConfigured({ auth: true, apiKey: '', verifyTenantToken: async () => null }))).toBeInstanceOf(OutflowError)
  })

  it('accepts an apiKey, or auth: false without one', () => {
    expect(assertAuthConfigured({ auth: true, apiKey, verifyTenantToken: async () => null })).toBeUndefined()
    expect(assertAuthConfigured({ auth: false, verifyTenantToken: async () => null })).toBeUndefined()
  })
})

describe('authenticate', () => {
  it('makes every caller admin when auth is off, credentials or not', async () => {
    expect(await authenticate(null, settings({ auth: false }))).toEqual({ kind: 'admin' })
    expect(await authenticate('Bearer whatever', settings({ auth: false }))).toEqual({ kind: 'admin' })
  })

  it('resolves the API key to admin, without asking the token verifier', async () => {
    const s = settings()
    expect(await authenticate(`Bearer ${apiKey}`, s)).toEqual({ kind: 'admin' })
    expect(s.asked).toEqual([])
  })

  it('resolves a tenant token to its tenant', async () => {
    expect(await authenticate('Bearer tok_acme', settings())).toEqual({ kind: 'tenant', tenantId: 'acme' })
  })

  it('accepts the scheme in any case and extra white space around the parts', async () => {
    expect(await authenticate(`bearer ${apiKey}`, settings())).toEqual({ kind: 'admin' })
    expect(await authenticate(`  BEARER \t ${apiKey}  `, settings())).toEqual({ kind: 'admin' })
  })

  it('is 401 with a bare WWW-Authenticate challenge when there is no Authorization header', async () => {
    for (const header of [null, '']) {
      const err = await refusal(() => authenticate(header, settings()))
      expect(err.status).toBe(401)
      expect(err.message).toBe('missing credentials: send Authorization: Bearer <token>')
      expect(err.headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="outflow"' })
    }
  })

  it.each([
    ['another scheme', `Basic ${apiKey}`],
    ['the scheme alone', 'Bearer'],
    ['a token in two parts', `Bearer ${apiKey} extra`],
    ['the token alone', apiKey],
  ])('is 401 invalid_token for a malformed header: %s', async (_, header) => {
    const s = settings()
    const err = await refusal(() => authenticate(header, s))
    expect(err.status).toBe(401)
    expect(err.message).toBe('malformed Authorization header: expected Bearer <token>')
    expect(err.headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="outflow", error="invalid_token"' })
    expect(s.asked).toEqual([])
  })

  it.each([
    ['a wrong key', 'not-the-key'],
    ['the key with a suffix', `${apiKey}x`],
    ['a prefix of the key', apiKey.slice(0, -1)],
    ['an unknown tenant token', 'tok_globex'],
  ])('is 401 invalid_token for %s', async (_, token) => {
    const err = await refusal(() => authenticate(`Bearer ${token}`, settings()))
    expect(err.status).toBe(401)
    expect(err.message).toBe('invalid credentials')
    expect(err.headers).toEqual({ 'WWW-Authenticate': 'Bearer realm="outflow", error="invalid_token"' })
  })

  it('without an API key (auth: false not given) only tenant tokens pass', async () => {
    const s = settings({ apiKey: undefined })
    expect(await authenticate('Bearer tok_acme', s)).toEqual({ kind: 'tenant', tenantId: 'acme' })
    expect((await refusal(() => authenticate('Bearer undefined', s))).status).toBe(401)
  })
})

describe('authorize', () => {
  const admin: Principal = { kind: 'admin' }
  const acme: Principal = { kind: 'tenant', tenantId: 'acme' }

  it('lets the admin through every route', () => {
    for (const access of ['public', 'admin', 'tenant', 'token'] as const) expect(authorize(admin, access, { tenant_id: 'globex' })).toBeUndefined()
  })

  it("lets a tenant token through its own tenant's routes, public routes and routes open to any token", () => {
    expect(authorize(acme, 'tenant', { tenant_id: 'acme' })).toBeUndefined()
    expect(authorize(acme, 'public', { tenant_id: 'globex' })).toBeUndefined()
    expect(authorize(acme, 'token', {})).toBeUndefined()
  })

  it('is 403 for a tenant token on an admin route', async () => {
    const err = await refusal(() => authorize(acme, 'admin', { tenant_id: 'acme' }))
    expect(err.status).toBe(403)
    expect(err.message).toBe('this route needs the admin API key')
  })

  it("is 403 for a tenant token on another tenant's route, or on a tenant route without a tenant", async () => {
    for (const params of [{ tenant_id: 'globex' }, { tenant_id: 'acme2' }, { tenant_id: '' }, {}] as Record<string, string>[]) {
      const err = await refusal(() => authorize(acme, 'tenant', params))
      expect(err.status).toBe(403)
      expect(err.message).toBe('the token does not grant access to this tenant')
    }
  })
})
