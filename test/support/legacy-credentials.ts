import { createCipheriv, createHash, randomBytes } from 'node:crypto'

/**
 * Credentials as releases before key rotation stored them: `enc:v1:`, key = sha256(encryptionKey),
 * no binding to the destination. Only tests write this format now; the engine still reads it.
 */
export function sealV1(value: Record<string, unknown>, secret: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(secret).digest(), iv)
  const data = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()])
  return `enc:v1:${iv.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}.${data.toString('base64url')}`
}
