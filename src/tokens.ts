import { SignJWT, jwtVerify } from 'jose'

const issuer = 'outflow'
const ttlSeconds = 24 * 60 * 60

function key(secret: string): Uint8Array {
  return new TextEncoder().encode(secret)
}

/**
 * Sign a tenant token: HS256, `iss`=outflow, `sub`=tenant id, valid 24 h.
 *
 * @example
 * const token = await issueTenantToken(secret, 'acme')
 */
export async function issueTenantToken(secret: string, tenantId: string, now = new Date()): Promise<string> {
  const iat = Math.floor(now.getTime() / 1000)
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer(issuer)
    .setSubject(tenantId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttlSeconds)
    .sign(key(secret))
}

/** The tenant id of a valid tenant token, or null for anything else (bad signature, expired, wrong issuer). */
export async function verifyTenantToken(secret: string, token: string): Promise<string | null> {
  try {
    const { payload } = await jwtVerify(token, key(secret), { issuer, algorithms: ['HS256'] })
    return typeof payload.sub === 'string' && payload.sub.length > 0 ? payload.sub : null
  } catch {
    return null
  }
}
