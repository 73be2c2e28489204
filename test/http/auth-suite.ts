import { describe, expect, it } from 'vitest'
import { issueTenantToken } from '../../src/tokens.js'
import { type SuiteContext, adminKey, jwtSecret } from './support.js'

/** Credentials: what is a 401 (with its challenge) and what is a 403. */
export function describeAuth(ctx: SuiteContext): void {
  describe('authentication', () => {
    const expectUnauthorized = async (headers: Record<string, string>) => {
      const res = await ctx.api('GET', '/tenants/acme', { as: null, headers })
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ status: 401, message: expect.any(String) })
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
    }

    it('no Authorization header is 401 with WWW-Authenticate: Bearer', () => expectUnauthorized({}))
    it('a scheme other than Bearer is 401', () => expectUnauthorized({ authorization: `Basic ${Buffer.from(`admin:${adminKey}`).toString('base64')}` }))
    it('Bearer without a token is 401', () => expectUnauthorized({ authorization: 'Bearer' }))
    it('a wrong API key is 401', () => expectUnauthorized({ authorization: 'Bearer not-the-key' }))
    it('the API key with a suffix is 401', () => expectUnauthorized({ authorization: `Bearer ${adminKey}x` }))
    it('a JWT signed with another secret is 401', async () =>
      expectUnauthorized({ authorization: `Bearer ${await issueTenantToken('another-secret-0123456789', 'acme')}` }))
    it('an expired tenant token is 401', async () =>
      expectUnauthorized({ authorization: `Bearer ${await issueTenantToken(jwtSecret, 'acme', new Date(Date.now() - 48 * 3600_000))}` }))
    it('a tampered tenant token is 401', () => {
      const [header, , signature] = ctx.tokens.acme.split('.')
      const payload = Buffer.from(JSON.stringify({ iss: 'outflow', sub: 'globex', iat: 1, exp: 9_999_999_999 })).toString('base64url')
      return expectUnauthorized({ authorization: `Bearer ${header}.${payload}.${signature}` })
    })

    it('accepts the scheme in any case', async () => {
      expect((await ctx.api('GET', '/tenants/acme', { as: null, headers: { authorization: `bearer ${adminKey}` } })).status).toBe(200)
    })

    it('a tenant token on another tenant is 403, on an admin route 403', async () => {
      const other = await ctx.api('GET', '/tenants/globex', { as: ctx.tokens.acme })
      expect(other.status).toBe(403)
      expect(other.body).toMatchObject({ status: 403, message: expect.any(String) })
      expect((await ctx.api('GET', '/tenants', { as: ctx.tokens.acme })).status).toBe(403)
      expect((await ctx.api('GET', '/tenants/acme/token', { as: ctx.tokens.acme })).status).toBe(403)
    })

    it('checks credentials before reading the body', async () => {
      const res = await ctx.api('POST', '/publish', { as: null, raw: 'not json', headers: { 'content-type': 'text/plain' } })
      expect(res.status).toBe(401)
    })
  })
}
