import { createHmac } from 'node:crypto'
import { verify as verifyGithub } from '@octokit/webhooks-methods'
import Stripe from 'stripe'
import { Webhook as SvixWebhook } from 'svix'
import { describe, expect, it } from 'vitest'
import { compatibleHeaders, compatibleKey, contentVariables, maxTemplateLength, parseTemplate, valueVariables } from '../../src/net/compatible-signatures.js'

// The compatible signature formats on their own, each checked by that provider's published verification code
// (svix, @octokit/webhooks-methods, stripe) or, for Outpost, by the test vectors of its own example verifier.

const stripe = new Stripe('sk_test_compatible_signatures')
const delivery = { id: 'evt_compat_1', topic: 'order.created', timestamp: Math.floor(Date.now() / 1000), body: '{"order":"ord_1","total":42.5}' }

describe('compatibleHeaders', () => {
  it('signs Svix headers that svix Webhook.verify accepts, with each key of a rotation', () => {
    const current = `whsec_${Buffer.alloc(24, 7).toString('base64')}`
    const previous = `whsec_${Buffer.alloc(24, 8).toString('base64')}`
    const headers = compatibleHeaders('svix', [compatibleKey('svix', current), compatibleKey('svix', previous)], delivery)
    expect(Object.keys(headers)).toEqual(['svix-id', 'svix-timestamp', 'svix-signature'])
    expect(headers['svix-signature']!.split(' ')).toHaveLength(2)
    for (const secret of [current, previous]) expect(new SvixWebhook(secret).verify(delivery.body, headers)).toEqual(JSON.parse(delivery.body))
    expect(() => new SvixWebhook(`whsec_${Buffer.alloc(24, 9).toString('base64')}`).verify(delivery.body, headers)).toThrow()
  })

  it('signs X-Hub-Signature-256 as GitHub documents it, and @octokit/webhooks-methods verifies it', async () => {
    // GitHub's documented example: this secret and payload give exactly this signature.
    const known = compatibleHeaders('github', [compatibleKey('github', "It's a Secret to Everybody")], { ...delivery, body: 'Hello, World!' })
    expect(known).toEqual({ 'x-hub-signature-256': 'sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17' })
    const secret = 'gh secret with spaces, ünïcode'
    const { 'x-hub-signature-256': signature } = compatibleHeaders('github', [compatibleKey('github', secret)], delivery)
    expect(await verifyGithub(secret, delivery.body, signature!)).toBe(true)
    expect(await verifyGithub(secret, `${delivery.body} `, signature!)).toBe(false)
  })

  it('signs Stripe-Signature that stripe.webhooks.constructEvent accepts, one v1 per key', () => {
    const [current, previous] = ['whsec_current0123456789abcdefABCDEF', 'whsec_previous0123456789abcdefABCDE']
    const { 'stripe-signature': header } = compatibleHeaders('stripe', [compatibleKey('stripe', current!), compatibleKey('stripe', previous!)], delivery)
    expect(header).toMatch(new RegExp(`^t=${delivery.timestamp},v1=[0-9a-f]{64},v1=[0-9a-f]{64}$`))
    for (const secret of [current!, previous!]) expect(stripe.webhooks.constructEvent(delivery.body, header!, secret)).toEqual(JSON.parse(delivery.body))
    expect(() => stripe.webhooks.constructEvent(delivery.body, header!, 'whsec_another')).toThrow(/No signatures found matching/)
  })

  it("matches the test vector of Outpost's own example verifier (default mode: v0=<hex of the body>)", () => {
    const headers = compatibleHeaders('outpost', [compatibleKey('outpost', 'some_secret_value')], { ...delivery, body: '{"test":"data"}' })
    expect(headers).toEqual({
      'x-outpost-signature': 'v0=5920020651a5934e394f95a7e79a85400ba12318c11f330b9ca30c7f064318d1',
      'x-outpost-timestamp': String(delivery.timestamp),
      'x-outpost-event-id': delivery.id,
      'x-outpost-topic': delivery.topic,
    })
    // Its legacy format (t=<t>,v0=<hex of "t.body">), as a custom header, matches the example's second vector.
    const legacy = { header: 'x-outpost-signature', value: parseTemplate('t={timestamp},v0={signature}', valueVariables) as never, content: parseTemplate('{timestamp}.{body}', contentVariables) as never, encoding: 'hex' as const }
    expect(compatibleHeaders('custom', [compatibleKey('custom', 'some_secret_value')], { ...delivery, timestamp: 1741797142, body: '{"test":"data"}' }, legacy)).toEqual({
      'x-outpost-signature': 't=1741797142,v0=ec25087a0b05b76fd057f61af808778b2b0e3b4c9f0dfc80f4cdc5cecdd1f325',
    })
    const two = compatibleHeaders('outpost', [compatibleKey('outpost', 'a'), compatibleKey('outpost', 'b')], delivery)
    expect(two['x-outpost-signature']).toMatch(/^v0=[0-9a-f]{64},[0-9a-f]{64}$/)
  })

  it('renders a custom header from its templates, signing with the first key only', () => {
    const content = parseTemplate('{id}:{timestamp}:{body}', contentVariables) as never
    const value = parseTemplate('t={timestamp}, sig={signature}', valueVariables) as never
    const headers = compatibleHeaders('custom', [compatibleKey('custom', 'k1'), compatibleKey('custom', 'k2')], delivery, { header: 'X-My-Signature', value, content, encoding: 'base64' })
    const expected = createHmac('sha256', 'k1').update(`${delivery.id}:${delivery.timestamp}:${delivery.body}`).digest('base64')
    expect(headers).toEqual({ 'x-my-signature': `t=${delivery.timestamp}, sig=${expected}` })
  })
})

describe('parseTemplate', () => {
  it('splits literal text and variables', () => {
    expect(parseTemplate('{timestamp}.{body}', contentVariables)).toEqual([{ variable: 'timestamp' }, '.', { variable: 'body' }])
    expect(parseTemplate('sha256={signature}', valueVariables)).toEqual(['sha256=', { variable: 'signature' }])
    expect(parseTemplate('plain', valueVariables)).toEqual(['plain'])
  })

  it.each([
    ['{secret}', contentVariables, 'has an unknown variable {secret}: use {id}, {timestamp}, {body}'],
    ['{body}', valueVariables, 'has an unknown variable {body}: use {signature}, {timestamp}, {id}'],
    ['v1={signature', valueVariables, 'has a "{" without its "}": use {signature}, {timestamp}, {id}'],
    ['v1=}{signature}', valueVariables, 'has a "}" that closes no variable (braces only delimit variables)'],
    ['{{signature}}', valueVariables, 'has an unknown variable {{signature}: use {signature}, {timestamp}, {id}'],
    ['{'.repeat(maxTemplateLength), valueVariables, 'has a "{" without its "}": use {signature}, {timestamp}, {id}'],
    ['x'.repeat(maxTemplateLength + 1), valueVariables, `must be at most ${maxTemplateLength} characters`],
  ])('refuses %j', (text, variables, problem) => {
    expect(parseTemplate(text, variables)).toBe(problem)
  })
})
