import { SignJWT, jwtVerify } from 'jose'
import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'

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

/** What a payload link grants: the data of one event as delivered to one destination of one tenant, until `exp`. */
export interface PayloadLinkClaims {
  tenantId: string
  eventId: string
  destinationId: string
  /** When the link stops answering, in seconds since the epoch. */
  exp: number
}

/** Longest token a payload link is read from (three ids of at most 128 characters, base64url, and the MAC). */
const maxPayloadTokenChars = 1024

/**
 * The key that signs payload links: HKDF-SHA256 of the engine's `jwtSecret` with a label of its own, so a link's
 * token and a tenant token can never be taken for each other.
 */
export function payloadLinkKey(secret: string): Uint8Array {
  return new Uint8Array(hkdfSync('sha256', secret, '', 'outflow payload links v1', 32))
}

function payloadMac(key: Uint8Array, body: string): string {
  return createHmac('sha256', key).update(body).digest('base64url')
}

/**
 * Sign a payload link's token: `base64url(JSON [tenant, event, destination, exp]).base64url(HMAC-SHA256)`. Synchronous
 * (node:crypto), so a delivery attempt mints it without waiting.
 *
 * @example
 * const token = signPayloadLink(key, { tenantId: 'acme', eventId: 'evt_1', destinationId: 'des_1', exp: 1767225600 })
 */
export function signPayloadLink(key: Uint8Array, claims: PayloadLinkClaims): string {
  const body = Buffer.from(JSON.stringify([claims.tenantId, claims.eventId, claims.destinationId, claims.exp])).toString('base64url')
  return `${body}.${payloadMac(key, body)}`
}

/**
 * The claims of a payload link's token, or null for anything else: another key, a changed byte, a malformed
 * token, or expired at `now`. The MAC is compared in constant time.
 */
export function verifyPayloadLink(key: Uint8Array, token: string, now: Date): PayloadLinkClaims | null {
  const dot = token.indexOf('.')
  if (dot < 1 || token.length > maxPayloadTokenChars) return null
  const body = token.slice(0, dot)
  const given = Buffer.from(token.slice(dot + 1))
  const expected = Buffer.from(payloadMac(key, body))
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null
  const claims: unknown = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'))
  if (!Array.isArray(claims) || claims.length !== 4) return null
  const [tenantId, eventId, destinationId, exp] = claims as unknown[]
  if (typeof tenantId !== 'string' || typeof eventId !== 'string' || typeof destinationId !== 'string' || !Number.isSafeInteger(exp)) return null
  if ((exp as number) * 1000 <= now.getTime()) return null
  return { tenantId, eventId, destinationId, exp: exp as number }
}
