import { Webhook } from 'standardwebhooks'
import { describe, expect, it } from 'vitest'
import { generateWebhookSecret, signWebhook, webhookSecretKey, webhookSecretProblem, webhookSignatureHeader, webhookSigningKey } from '../../src/net/signing.js'

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

describe('webhookSignatureHeader', () => {
  it('signs once per active secret, space-separated, in the order given (rotation)', () => {
    const [current, previous] = [generateWebhookSecret(), generateWebhookSecret()]
    const body = '{"id":"ord_1"}'
    const header = webhookSignatureHeader([current, webhookSigningKey(previous)], 'msg_1', 1_700_000_000, body)
    expect(header).toBe(`${signWebhook(current, 'msg_1', 1_700_000_000, body)} ${signWebhook(previous, 'msg_1', 1_700_000_000, body)}`)
    // Each signature verifies with its own secret, as a Standard Webhooks receiver checks them.
    const headers = { 'webhook-id': 'msg_1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': '' }
    const now = Number(headers['webhook-timestamp'])
    headers['webhook-signature'] = webhookSignatureHeader([current, previous], 'msg_1', now, body)
    expect(new Webhook(current).verify(body, headers)).toEqual({ id: 'ord_1' })
    expect(new Webhook(previous).verify(body, headers)).toEqual({ id: 'ord_1' })
  })

  it('reads a secret without the whsec_ prefix as the same key', () => {
    const secret = generateWebhookSecret()
    expect(signWebhook(secret.slice('whsec_'.length), 'msg_1', 1, 'x')).toBe(signWebhook(secret, 'msg_1', 1, 'x'))
    expect(webhookSecretKey(secret)).toEqual(Buffer.from(secret.slice(6), 'base64'))
  })
})

describe('webhookSecretProblem', () => {
  const secretOf = (bytes: number) => `whsec_${Buffer.alloc(bytes, 9).toString('base64')}`

  it('accepts whsec_ + base64 of 24 to 64 bytes, padded or not as base64 needs', () => {
    for (const bytes of [24, 25, 26, 32, 64]) expect(webhookSecretProblem(secretOf(bytes)), `${bytes} bytes`).toBeNull()
    expect(webhookSecretProblem(generateWebhookSecret())).toBeNull()
  })

  it.each([
    ['no prefix', Buffer.alloc(32, 9).toString('base64'), 'must be "whsec_" followed by base64'],
    ['text before the prefix', `x${secretOf(32)}`, 'must be "whsec_" followed by base64'],
    ['only the prefix', 'whsec_', 'must be "whsec_" followed by base64'],
    ['base64url characters', `whsec_${'-_'.repeat(16)}`, 'must be "whsec_" followed by base64'],
    ['a length that is no base64', `${secretOf(32).slice(0, -1)}`, 'must be "whsec_" followed by base64'],
    ['text after the padding', `${secretOf(32)}A`, 'must be "whsec_" followed by base64'],
    ['23 bytes', secretOf(23), 'must encode between 24 and 64 bytes'],
    ['65 bytes', secretOf(65), 'must encode between 24 and 64 bytes'],
  ])('refuses %s', (_name, secret, problem) => {
    expect(webhookSecretProblem(secret)).toBe(problem)
  })
})
