import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto'

/** Prefix of Standard Webhooks Ed25519 secret keys. */
export const SIGNING_SECRET_PREFIX = 'whsk_'
/** Prefix of Standard Webhooks Ed25519 public keys. */
export const SIGNING_PUBLIC_PREFIX = 'whpk_'

// PKCS#8 DER of an Ed25519 private key is this fixed prefix and the 32-byte seed (RFC 8410).
const pkcs8Prefix = Buffer.from('302e020100300506032b657004220420', 'hex')

/** An Ed25519 key pair, ready to sign: the seed stays inside the KeyObject. */
export interface Ed25519Key {
  /** RFC 7638 JWK thumbprint of the public key (base64url SHA-256): the key's `kid`. */
  kid: string
  privateKey: KeyObject
  /** The raw 32-byte public key, base64url (the JWK's `x`). */
  x: string
}

/** A `whsk_` key that is not 32 (seed) or 64 (seed and public key) bytes of base64, or whose public half does not match. */
export class SigningKeyError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'SigningKeyError'
  }
}

/**
 * Read a `whsk_` secret key: base64 of the 32-byte seed, or of 64 bytes (seed then public key, the layout
 * of Svix and some Standard Webhooks drafts, whose public half must match the seed).
 *
 * @example
 * const key = parseSigningSecret('whsk_…') // { kid, privateKey, x }
 */
export function parseSigningSecret(secret: string): Ed25519Key {
  const match = /^whsk_([A-Za-z0-9+/]+={0,2})$/.exec(secret)
  if (!match) throw new SigningKeyError('must be "whsk_" followed by base64')
  const bytes = Buffer.from(match[1]!, 'base64')
  if (bytes.length !== 32 && bytes.length !== 64) throw new SigningKeyError('must encode 32 bytes (seed) or 64 bytes (seed and public key)')
  const key = keyFromSeed(bytes.subarray(0, 32))
  if (bytes.length === 64 && !bytes.subarray(32).equals(Buffer.from(key.x, 'base64url'))) throw new SigningKeyError('its public half does not belong to its seed')
  return key
}

/** The key pair of a 32-byte seed. */
export function keyFromSeed(seed: Buffer): Ed25519Key {
  const privateKey = createPrivateKey({ key: Buffer.concat([pkcs8Prefix, seed]), format: 'der', type: 'pkcs8' })
  const x = createPublicKey(privateKey).export({ format: 'jwk' }).x!
  return { kid: jwkThumbprint(x), privateKey, x }
}

/**
 * A new random key as a `whsk_` secret (the 32-byte seed, base64).
 *
 * @example
 * generateSigningSecret() // 'whsk_q3Jv…'
 */
export function generateSigningSecret(): string {
  const { privateKey } = generateKeyPairSync('ed25519')
  return SIGNING_SECRET_PREFIX + Buffer.from(privateKey.export({ format: 'jwk' }).d!, 'base64url').toString('base64')
}

/** RFC 7638 thumbprint of an Ed25519 public key (`x`, base64url): its members in lexicographic order, hashed. */
export function jwkThumbprint(x: string): string {
  return createHash('sha256').update(`{"crv":"Ed25519","kty":"OKP","x":"${x}"}`).digest('base64url')
}

/** The `whpk_` form of a public key (`x`, base64url): base64 of the raw 32 bytes. */
export function whpk(x: string): string {
  return SIGNING_PUBLIC_PREFIX + Buffer.from(x, 'base64url').toString('base64')
}

/**
 * One Standard Webhooks asymmetric signature: `v1a,<base64 Ed25519 signature of "id.timestamp.body">`.
 *
 * @example
 * signWebhookEd25519(key.privateKey, 'evt_1', 1700000000, '{"a":1}') // 'v1a,3Qm…=='
 */
export function signWebhookEd25519(privateKey: KeyObject, msgId: string, timestampSeconds: number, body: string): string {
  return `v1a,${sign(null, Buffer.from(`${msgId}.${timestampSeconds}.${body}`, 'utf8'), privateKey).toString('base64')}`
}
