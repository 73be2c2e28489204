import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

/** Prefix of Standard Webhooks secrets. */
export const WEBHOOK_SECRET_PREFIX = 'whsec_'

/**
 * A new Standard Webhooks secret: `whsec_` + base64 of 32 random bytes.
 *
 * @example
 * generateWebhookSecret() // 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw…'
 */
export function generateWebhookSecret(): string {
  return WEBHOOK_SECRET_PREFIX + randomBytes(32).toString('base64')
}

/**
 * What is wrong with a Standard Webhooks secret: `whsec_` + base64 of 24–64 bytes (the range the spec recommends).
 *
 * @example
 * webhookSecretProblem('whsec_abc') // 'must encode between 24 and 64 bytes'
 */
export function webhookSecretProblem(secret: string): string | null {
  const match = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/.exec(secret)
  if (!match?.[1]) return 'must be "whsec_" followed by base64'
  const bytes = Buffer.from(match[1], 'base64').length
  return bytes < 24 || bytes > 64 ? 'must encode between 24 and 64 bytes' : null
}

/** The HMAC key of a secret: the base64-decoded part after `whsec_` (the prefix is optional, as in the reference libraries). */
export function webhookSecretKey(secret: string): Buffer {
  const encoded = secret.startsWith(WEBHOOK_SECRET_PREFIX) ? secret.slice(WEBHOOK_SECRET_PREFIX.length) : secret
  return Buffer.from(encoded, 'base64')
}

/**
 * The HMAC key of a secret, decoded once: a publisher signs every delivery with the same few secrets.
 *
 * @example
 * const key = webhookSigningKey(secret); signWebhook(key, 'evt_1', ts, body)
 */
export function webhookSigningKey(secret: string): KeyObject {
  return createSecretKey(webhookSecretKey(secret))
}

/**
 * One Standard Webhooks signature: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`.
 *
 * @example
 * signWebhook(secret, 'evt_1', 1700000000, '{"a":1}') // 'v1,K5oZ…='
 */
export function signWebhook(secret: string | KeyObject, msgId: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', typeof secret === 'string' ? webhookSecretKey(secret) : secret).update(`${msgId}.${timestampSeconds}.${body}`).digest('base64')
  return `v1,${mac}`
}

/**
 * The `webhook-signature` header value: one signature per active secret (or its key), space-separated (rotation).
 *
 * @example
 * webhookSignatureHeader([current, previous], 'evt_1', ts, body) // 'v1,abc= v1,def='
 */
export function webhookSignatureHeader(secrets: readonly (string | KeyObject)[], msgId: string, timestampSeconds: number, body: string): string {
  return secrets.map((secret) => signWebhook(secret, msgId, timestampSeconds, body)).join(' ')
}
