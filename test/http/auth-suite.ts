import { SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { issueTenantToken } from '../../src/tokens.js'
import { type SuiteContext, adminKey, jwtSecret } from './support.js'

/** A token signed with the engine's secret, with the claims given (`exp` only when given). */
async function signToken(claims: { sub: string; tenant_created_at: number; iat: number; exp?: number }): Promise<string> {
  const { sub, iat, exp, ...rest } = claims
  const jwt = new SignJWT(rest).setProtectedHeader({ alg: 'HS256', typ: 'JWT' }).setIssuer('outflow').setSubject(sub).setIssuedAt(iat)
  if (exp !== undefined) jwt.setExpirationTime(exp)
  return jwt.sign(new TextEncoder().encode(jwtSecret))
}

/** Credentials: what is a 401 (with its challenge) and what is a 403. */
export function describeAuth(ctx: SuiteContext): void {
  describe('authentication', () => {
    const expectUnauthorizedOn = async (path: string, token: string) => {
      const res = await ctx.api('GET', path, { as: token })
      expect(res.status).toBe(401)
      expect(res.body).toMatchObject({ status: 401, message: expect.any(String) })
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
    }
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
    /** acme's creation time, which its tokens carry. */
    const acmeCreatedAt = async () => Date.parse((await ctx.api('GET', '/tenants/acme')).body.created_at)

    it('a JWT signed with another secret is 401', async () =>
      expectUnauthorized({ authorization: `Bearer ${await issueTenantToken('another-secret-0123456789', 'acme', new Date(await acmeCreatedAt()))}` }))
    it('an expired tenant token is 401', async () =>
      expectUnauthorized({ authorization: `Bearer ${await issueTenantToken(jwtSecret, 'acme', new Date(await acmeCreatedAt()), new Date(Date.now() - 48 * 3600_000))}` }))

    it('a correctly signed tenant token is 200 (the control for the cases below)', async () => {
      const iat = Math.floor(Date.now() / 1000)
      const token = await signToken({ sub: 'acme', tenant_created_at: await acmeCreatedAt(), iat, exp: iat + 3600 })
      expect((await ctx.api('GET', '/tenants/acme', { as: token })).status).toBe(200)
    })
    it('a tenant token without exp is 401', async () =>
      expectUnauthorized({ authorization: `Bearer ${await signToken({ sub: 'acme', tenant_created_at: await acmeCreatedAt(), iat: Math.floor(Date.now() / 1000) })}` }))
    it('a tenant token valid for longer than 24 h is 401', async () => {
      const iat = Math.floor(Date.now() / 1000)
      const token = await signToken({ sub: 'acme', tenant_created_at: await acmeCreatedAt(), iat, exp: iat + 30 * 24 * 3600 })
      await expectUnauthorized({ authorization: `Bearer ${token}` })
    })
    it('a tenant token without the tenant creation time is 401', async () => {
      const iat = Math.floor(Date.now() / 1000)
      const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setIssuer('outflow').setSubject('acme').setIssuedAt(iat).setExpirationTime(iat + 3600).sign(new TextEncoder().encode(jwtSecret))
      await expectUnauthorized({ authorization: `Bearer ${token}` })
    })

    it('a tenant token dies with its tenant: 401 once the tenant is deleted, also after the id is created again', async () => {
      expect((await ctx.api('PUT', '/tenants/ephemeral', { json: {} })).status).toBe(201)
      const old = (await ctx.api('GET', '/tenants/ephemeral/token')).body.token as string
      expect((await ctx.api('GET', '/tenants/ephemeral', { as: old })).status).toBe(200)
      expect((await ctx.api('DELETE', '/tenants/ephemeral')).status).toBe(200)
      await expectUnauthorizedOn('/tenants/ephemeral', old)
      // The re-created tenant has a new creation time; a millisecond must pass for it to differ.
      await new Promise((resolve) => setTimeout(resolve, 5))
      expect((await ctx.api('PUT', '/tenants/ephemeral', { json: {} })).status).toBe(201)
      await expectUnauthorizedOn('/tenants/ephemeral', old)
      const fresh = (await ctx.api('GET', '/tenants/ephemeral/token')).body.token as string
      expect((await ctx.api('GET', '/tenants/ephemeral', { as: fresh })).status).toBe(200)
      expect((await ctx.api('DELETE', '/tenants/ephemeral')).status).toBe(200)
    })
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

    it("scopes a tenant token's metrics to its tenant: what the admin key sees with filters[tenant_id] naming it", async () => {
      /** The total count a metrics query answers. */
      const count = async (path: string, as?: string) => {
        const res = await ctx.api('GET', path, { as })
        expect(res.status, JSON.stringify(res.body)).toBe(200)
        return (res.body.data as { metrics: { count: number } }[]).reduce((sum, row) => sum + row.metrics.count, 0)
      }
      // The seeded events are dated 2024-01-01 to 2024-01-05: acme e1 to e4, globex g1.
      const events = '/metrics/events?time[start]=2024-01-01T00:00:00Z&time[end]=2024-01-06T00:00:00Z&measures=count'
      const acme = await count(`${events}&filters[tenant_id]=acme`)
      const globex = await count(`${events}&filters[tenant_id]=globex`)
      expect([acme, globex]).toEqual([4, 1])
      expect(await count(events)).toBeGreaterThanOrEqual(5)
      expect(await count(events, ctx.tokens.acme)).toBe(4)
      expect(await count(events, ctx.tokens.globex)).toBe(1)
      // Their attempts were made at seeding; only globex's stay as they were (other suites deliver to acme meanwhile).
      const day = 24 * 3600_000
      const attempts = `/metrics/attempts?time[start]=${new Date(Date.now() - day).toISOString()}&time[end]=${new Date(Date.now() + day).toISOString()}&measures=count`
      expect(await count(`${attempts}&filters[tenant_id]=globex`)).toBe(1)
      expect(await count(attempts)).toBeGreaterThan(1)
      expect(await count(attempts, ctx.tokens.globex)).toBe(1)
    })

    it('checks credentials before reading the body', async () => {
      const res = await ctx.api('POST', '/publish', { as: null, raw: 'not json', headers: { 'content-type': 'text/plain' } })
      expect(res.status).toBe(401)
    })
  })
}
