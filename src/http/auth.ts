import { createHash, timingSafeEqual } from 'node:crypto'
import { OutflowError } from '../errors.js'
import type { Access } from './routes.js'

/** Who is calling: the admin key holder, or one tenant through its token. */
export type Principal = { kind: 'admin' } | { kind: 'tenant'; tenantId: string }

export interface AuthSettings {
  apiKey?: string
  /** The tenant a tenant token grants, or null (`Outflow.verifyTenantToken`). */
  verifyTenantToken(token: string): Promise<string | null>
  /** `false` only when the host opted out explicitly: every caller is admin. */
  auth: boolean
}

function unauthorized(message: string, error?: 'invalid_token'): OutflowError {
  const header = error ? `Bearer realm="outflow", error="${error}"` : 'Bearer realm="outflow"'
  return new OutflowError('unauthorized', message, { headers: { 'WWW-Authenticate': header } })
}

/** Equal-length digests keep timingSafeEqual from leaking the key's length. */
function sameSecret(given: string, expected: string): boolean {
  const a = createHash('sha256').update(given).digest()
  const b = createHash('sha256').update(expected).digest()
  return timingSafeEqual(a, b)
}

/**
 * Refuse to serve an open API by accident: without an API key, `auth: false` must be explicit.
 *
 * @example
 * assertAuthConfigured({ auth: true }) // throws: the HTTP API needs an apiKey
 */
export function assertAuthConfigured(settings: AuthSettings): void {
  if (settings.auth !== false && !settings.apiKey)
    throw new OutflowError(
      'internal',
      'The Outflow HTTP API needs an apiKey (createOutflow({ apiKey })); pass auth: false explicitly to run it without authentication (local use only).',
    )
}

/**
 * Resolve the caller from `Authorization: Bearer <token>`: the admin key or a tenant JWT; 401 otherwise.
 *
 * @example
 * await authenticate(request.headers.get('authorization'), outflow.options) // { kind: 'tenant', tenantId: 'acme' }
 */
export async function authenticate(header: string | null, settings: AuthSettings): Promise<Principal> {
  if (settings.auth === false) return { kind: 'admin' }
  const token = bearerToken(header)
  if (settings.apiKey && sameSecret(token, settings.apiKey)) return { kind: 'admin' }
  const tenantId = await settings.verifyTenantToken(token)
  if (tenantId) return { kind: 'tenant', tenantId }
  throw unauthorized('invalid credentials', 'invalid_token')
}

/**
 * Require `Authorization: Bearer <secret>` (compared in constant time), as the API requires its admin
 * key; 401 otherwise.
 *
 * @example
 * requireBearer(request.headers.get('authorization'), apiKey) // throws 401 invalid credentials
 */
export function requireBearer(header: string | null, secret: string): void {
  if (!sameSecret(bearerToken(header), secret)) throw unauthorized('invalid credentials', 'invalid_token')
}

/** The token of `Authorization: Bearer <token>`; 401 when the header is missing or malformed. */
function bearerToken(header: string | null): string {
  if (!header) throw unauthorized('missing credentials: send Authorization: Bearer <token>')
  const [scheme, token, ...rest] = header.trim().split(/\s+/)
  if (scheme?.toLowerCase() !== 'bearer' || !token || rest.length > 0)
    throw unauthorized('malformed Authorization header: expected Bearer <token>', 'invalid_token')
  return token
}

/**
 * Check a caller against a route's access rule: a tenant token only reaches its own tenant's routes
 * and the destination-type schemas; everything else is 403.
 *
 * @example
 * authorize({ kind: 'tenant', tenantId: 'acme' }, 'tenant', { tenant_id: 'globex' }) // throws 403
 */
export function authorize(principal: Principal, access: Access, params: Record<string, string>): void {
  if (principal.kind === 'admin' || access === 'public' || access === 'token') return
  if (access === 'admin') throw new OutflowError('forbidden', 'this route needs the admin API key')
  if (params.tenant_id !== principal.tenantId) throw new OutflowError('forbidden', 'the token does not grant access to this tenant')
}
