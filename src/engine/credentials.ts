import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto'
import type { DestinationTypeDefinition } from '../destinations/types.js'

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

/** Mask sensitive credential values for responses: first 4 characters then `****`. */
export function maskCredentials(def: DestinationTypeDefinition, credentials: Record<string, unknown>): Record<string, unknown> {
  const sensitive = new Set(def.credential_fields.filter((f) => f.sensitive).map((f) => f.key))
  for (const key of def.revealedCredentials ?? []) sensitive.delete(key)
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(credentials)) {
    out[key] = sensitive.has(key) && typeof value === 'string' ? `${value.slice(0, 4)}****` : value
  }
  return out
}
