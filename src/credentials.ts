import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'

const prefix = 'enc:v1:'

/** A 32-byte AES key from the engine's `encryptionKey` (any string; hashed to 32 bytes). */
export function encryptionKeyBytes(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest()
}

/** Credentials as stored: JSON, or AES-256-GCM ciphertext `enc:v1:<iv>.<tag>.<data>` (base64url) with a key. */
export function sealCredentials(credentials: Record<string, unknown>, key: Buffer | undefined): string {
  const json = JSON.stringify(credentials)
  if (!key) return json
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  const data = Buffer.concat([cipher.update(json, 'utf8'), cipher.final()])
  return `${prefix}${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`
}

/** Inverse of `sealCredentials`. Plain JSON stored before a key was configured still reads. */
export function unsealCredentials(stored: string, key: Buffer | undefined): Record<string, unknown> {
  if (!stored.startsWith(prefix)) return JSON.parse(stored) as Record<string, unknown>
  if (!key) throw new Error('outflow: stored credentials are encrypted but the engine has no encryptionKey')
  const [iv, tag, data] = stored.slice(prefix.length).split('.')
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv!, 'base64url'))
  decipher.setAuthTag(Buffer.from(tag!, 'base64url'))
  const json = Buffer.concat([decipher.update(Buffer.from(data!, 'base64url')), decipher.final()]).toString('utf8')
  return JSON.parse(json) as Record<string, unknown>
}
