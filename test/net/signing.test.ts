import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { generateWebhookSecret, signWebhook, webhookSigningKey } from '../../src/net/signing.js'

describe('signing', () => {
  it('generates whsec_ secrets of 32 random bytes', () => {
    const secret = generateWebhookSecret()
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/)
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32)
    expect(generateWebhookSecret()).not.toBe(secret)
  })

  it('produces the same signature as the standardwebhooks reference implementation', () => {
    const secret = generateWebhookSecret()
    const body = JSON.stringify({ id: 'ord_1', amount: 250, note: 'café ✓' })
    expect(signWebhook(secret, 'msg_1', 1_700_000_000, body)).toBe(new Webhook(secret).sign('msg_1', new Date(1_700_000_000_000), body))
    // The key a publisher decodes once signs the same as the secret it came from.
    expect(signWebhook(webhookSigningKey(secret), 'msg_1', 1_700_000_000, body)).toBe(new Webhook(secret).sign('msg_1', new Date(1_700_000_000_000), body))
  })
})
