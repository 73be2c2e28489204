import { SignJWT, jwtVerify } from 'jose'

const issuer = 'outflow'
/** Tokens are issued for 24 h, and a token claiming a longer life is refused. */
export const tenantTokenLifetimeSeconds = 24 * 60 * 60
/** Clock difference tolerated between the issuer and this process. */
const clockToleranceSeconds = 60

/** What a verified tenant token says. */
export interface TenantTokenClaims {
  tenantId: string
  /** Creation time (ms) of the tenant the token was issued for: a token dies with its tenant. */
  tenantCreatedAt: number
}

function key(secret: string): Uint8Array {
  return new TextEncoder().encode(secret)
}

/**
 * Sign a tenant token: HS256, `iss`=outflow, `sub`=tenant id, `tenant_created_at` (ms), valid 24 h.
 *
 * @example
 * const token = await issueTenantToken(secret, 'acme', tenant.created_at)
 */
export async function issueTenantToken(secret: string, tenantId: string, tenantCreatedAt: Date, now = new Date()): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000)
  return new SignJWT({ tenant_created_at: tenantCreatedAt.getTime() })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(tenantId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + tenantTokenLifetimeSeconds)
    .sign(key(secret))
}

/**
 * The claims of a well-formed tenant token, or null for anything else: bad signature, wrong issuer,
 * no `exp` or `iat`, a lifetime (`exp - iat`) over 24 h, expired, issued in the future. Whether its
 * tenant still exists is the caller's check (`Outflow.verifyTenantToken` makes it).
 */
export async function verifyTenantToken(secret: string, token: string, now = new Date()): Promise<TenantTokenClaims | null> {
  try {
    const { payload } = await jwtVerify(token, key(secret), {
      issuer,
      algorithms: ['HS256'],
      requiredClaims: ['exp', 'iat', 'sub'],
      maxTokenAge: tenantTokenLifetimeSeconds,
      clockTolerance: clockToleranceSeconds,
      currentDate: now,
    })
    const { sub, exp, iat, tenant_created_at: createdAt } = payload
    if (typeof sub !== 'string' || sub.length === 0 || !Number.isSafeInteger(createdAt)) return null
    if (exp! - iat! > tenantTokenLifetimeSeconds) return null
    return { tenantId: sub, tenantCreatedAt: createdAt as number }
  } catch {
    return null
  }
}
