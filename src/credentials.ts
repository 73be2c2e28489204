import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes } from 'node:crypto'

// Stored credentials take one of three forms, newest first:
//   enc:v2:<key id>:<iv>.<tag>.<data>  AES-256-GCM, HKDF-derived key, bound to its tenant and destination (AAD)
//   enc:v1:<iv>.<tag>.<data>           AES-256-GCM, key = sha256(encryptionKey), no binding (read only)
//   {...}                              plain JSON (read only when a keyring is configured)
const v2 = 'enc:v2:'
const v1 = 'enc:v1:'
const hkdfSalt = 'outflow/credentials'

/** The destination a ciphertext belongs to: it cannot be decrypted as anyone else's. */
export interface CredentialsOwner {
  tenantId: string
  destinationId: string
}

interface CredentialKey {
  /** Public fingerprint stored in each ciphertext, so the right key is found after a rotation. */
  id: string
  aes: Buffer
  /** The pre-HKDF key of `enc:v1:` rows. */
  legacy: Buffer
}

/** The engine's credential keys: the first encrypts, every one decrypts. Build it with `createKeyring`. */
export interface Keyring {
  readonly current: CredentialKey
  readonly byId: ReadonlyMap<string, CredentialKey>
}

/** Stored credentials that cannot be read: an unknown key, a wrong key, or a row moved or tampered with. */
export class CredentialsError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'CredentialsError'
  }
}

function deriveKey(secret: string): CredentialKey {
  const ikm = Buffer.from(secret, 'utf8')
  const derive = (info: string, length: number) => Buffer.from(hkdfSync('sha256', ikm, hkdfSalt, info, length))
  return {
    id: derive('key id', 6).toString('base64url'),
    aes: derive('aes-256-gcm v2', 32),
    legacy: createHash('sha256').update(secret, 'utf8').digest(),
  }
}

/**
 * A keyring from secrets, newest first: the newest encrypts, all of them decrypt.
 *
 * @example
 * const keyring = createKeyring([process.env.OUTFLOW_ENCRYPTION_KEY!, previousKey])
 */
export function createKeyring(secrets: string[]): Keyring {
  if (secrets.length === 0) throw new CredentialsError('a keyring needs at least one key')
  const keys = secrets.map(deriveKey)
  return { current: keys[0]!, byId: new Map(keys.map((k) => [k.id, k])) }
}

/** A new random key (32 bytes, base64url) for a key file or `encryptionKey`. */
export function generateEncryptionKey(): string {
  return randomBytes(32).toString('base64url')
}

/** The additional authenticated data of a v2 ciphertext: its key id and owner. */
function boundTo(keyId: string, owner: CredentialsOwner): Buffer {
  return Buffer.from(JSON.stringify(['outflow.credentials', keyId, owner.tenantId, owner.destinationId]), 'utf8')
}

/**
 * Credentials as stored: `enc:v2:` ciphertext under the keyring's newest key, bound to `owner`; plain
 * JSON without a keyring (only when the host opted into `insecurePlaintextCredentials`).
 *
 * @example
 * const stored = sealCredentials({ secret }, keyring, { tenantId: 'acme', destinationId: 'des_1' })
 */
export function sealCredentials(credentials: Record<string, unknown>, keyring: Keyring | undefined, owner: CredentialsOwner): string {
  const json = JSON.stringify(credentials)
  if (!keyring) return json
  const { id, aes } = keyring.current
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', aes, iv)
  cipher.setAAD(boundTo(id, owner))
  const data = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()])
  return `${v2}${id}:${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`
}

function decrypt(key: Buffer, payload: string, aad: Buffer | undefined): Record<string, unknown> {
  const [iv, tag, data] = payload.split('.')
  if (!iv || !tag || data === undefined) throw new CredentialsError('stored credentials are malformed')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag, 'base64url'))
  if (aad) decipher.setAAD(aad)
  const json = Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8')
  return JSON.parse(json) as Record<string, unknown>
}

function parsePlain(stored: string): Record<string, unknown> {
  try {
    return JSON.parse(stored) as Record<string, unknown>
  } catch (err) {
    throw new CredentialsError('stored credentials are neither encrypted nor JSON', { cause: err })
  }
}

/**
 * Inverse of `sealCredentials`. Also reads `enc:v1:` rows (with any key of the ring) and plain JSON
 * written before encryption was on; `reencryptCredentials` moves those to the newest key.
 * Throws `CredentialsError` when the row cannot be read as `owner`'s.
 */
export function unsealCredentials(stored: string, keyring: Keyring | undefined, owner: CredentialsOwner): Record<string, unknown> {
  if (!stored.startsWith(v2) && !stored.startsWith(v1)) return parsePlain(stored)
  if (!keyring) throw new CredentialsError('stored credentials are encrypted but the engine has no encryption key')
  if (stored.startsWith(v2)) {
    const rest = stored.slice(v2.length)
    const colon = rest.indexOf(':')
    const keyId = rest.slice(0, colon)
    const key = keyring.byId.get(keyId)
    if (colon < 0 || !key) throw new CredentialsError(`stored credentials are encrypted with key ${keyId || '?'}, which is not configured (encryptionKey, previousEncryptionKeys)`)
    try {
      return decrypt(key.aes, rest.slice(colon + 1), boundTo(keyId, owner))
    } catch (err) {
      throw new CredentialsError(`stored credentials of destination ${owner.destinationId} do not authenticate: written for another destination, or altered`, { cause: err })
    }
  }
  for (const key of keyring.byId.values()) {
    try {
      return decrypt(key.legacy, stored.slice(v1.length), undefined)
    } catch {
      // try the next key
    }
  }
  throw new CredentialsError('stored enc:v1 credentials do not decrypt with any configured key')
}

/** Whether a stored value is already what `sealCredentials` writes today (v2 under the newest key). */
export function sealedWithCurrentKey(stored: string, keyring: Keyring): boolean {
  return stored.startsWith(`${v2}${keyring.current.id}:`)
}
