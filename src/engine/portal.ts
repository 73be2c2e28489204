import { createHash, randomBytes } from 'node:crypto'
import { OutflowError } from '../errors.js'
import { parseInput } from '../model/common.js'
import { PortalQuerySchema, PortalSessionSchema } from '../model/tenant.js'
import { issueTenantToken } from '../tokens.js'
import type { EngineContext } from './context.js'
import { requireTenant } from './tenants.js'

/** How long a portal redirect URL can be opened: long enough for a redirect, too short to matter in a log. */
export const portalCodeLifetimeMs = 5 * 60_000

function hashCode(code: string): string {
  return createHash('sha256').update(code).digest('hex')
}

/**
 * A portal redirect URL for a tenant: the host's `portal.url`, else `portalUrl` (the built-in portal,
 * which the HTTP layer locates from the request). It carries a single-use code that expires in 5
 * minutes, never a token: the URL may end up in logs and browser history, the code is worthless there.
 */
export async function getPortalRedirect(
  ctx: EngineContext,
  tenantId: string,
  query: { theme?: unknown } = {},
  at: { portalUrl?: string } = {},
): Promise<{ redirect_url: string; tenant_id: string }> {
  const q = parseInput(PortalQuerySchema, query, { code: 'bad_request' })
  const base = ctx.options.portal.url ?? at.portalUrl
  if (!base) throw new OutflowError('not_found', 'no portal URL: set options.portal.url, or ask the HTTP API (which serves the built-in portal)')
  const tenant = await requireTenant(ctx, tenantId)
  const code = randomBytes(32).toString('base64url')
  const now = ctx.now()
  await ctx.storage.insertPortalCode(
    { code_hash: hashCode(code), tenant_id: tenantId, tenant_created_at: tenant.created_at, expires_at: new Date(now.getTime() + portalCodeLifetimeMs) },
    now,
  )
  const url = new URL(base)
  url.searchParams.set('code', code)
  if (q.theme) url.searchParams.set('theme', q.theme)
  return { redirect_url: url.toString(), tenant_id: tenantId }
}

const refused = () =>
  new OutflowError('unauthorized', 'the portal code is invalid, expired or already used: open the portal again from your application', {
    headers: { 'WWW-Authenticate': 'Bearer realm="outflow", error="invalid_token"' },
  })

/**
 * Exchange a portal code for a tenant token (`POST /portal/sessions`). A code works once, for 5
 * minutes, and only for the tenant it was issued for (not for a tenant re-created under the same id).
 */
export async function exchangePortalCode(ctx: EngineContext, body: unknown): Promise<{ token: string; tenant_id: string }> {
  const { code } = parseInput(PortalSessionSchema, body)
  const stored = await ctx.storage.takePortalCode(hashCode(code))
  const now = ctx.now()
  if (!stored || stored.expires_at.getTime() <= now.getTime()) throw refused()
  const tenant = await ctx.storage.getTenant(stored.tenant_id)
  if (tenant?.created_at.getTime() !== stored.tenant_created_at.getTime()) throw refused()
  return { token: await issueTenantToken(ctx.jwtSecret, tenant.id, tenant.created_at, now), tenant_id: tenant.id }
}
