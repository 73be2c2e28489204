import * as crypto from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import * as octokit from '@octokit/webhooks-methods'
import * as standardwebhooks from 'standardwebhooks'
import Stripe from 'stripe'
import * as svix from 'svix'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifySnippets } from '../../portal/src/receiver-trust.js'
import type { Destination } from '../../portal/src/types.js'
import { compatibleHeaders, compatibleKey, contentVariables, parseTemplate, valueVariables, type CompatiblePreset, type Template } from '../../src/net/compatible-signatures.js'
import { generateSigningSecret, parseSigningSecret, signWebhookEd25519 } from '../../src/net/ed25519.js'
import { generateWebhookSecret, webhookSignatureHeader } from '../../src/net/signing.js'
import * as verify from '../../src/verify.js'

// The portal's "How to verify" snippets are code a receiver copies: each one is run here as written, with its
// imports (standardwebhooks, outflow/verify, svix, @octokit/webhooks-methods, stripe, node:crypto), against a
// delivery signed by the engine's own signing code, and must accept it and refuse a changed body.

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<Record<string, unknown>>
/** What the snippets import, loaded here (the test runner allows no import() inside generated code). */
const modules: Record<string, unknown> = { 'outflow/verify': verify, standardwebhooks, svix, '@octokit/webhooks-methods': octokit, stripe: { default: Stripe }, 'node:crypto': crypto }

/** Run a snippet: its imports read the modules above; what it computed is returned by name. */
async function run(code: string, rawBody: string, headers: Record<string, string>, env: Record<string, string>) {
  const body = code.replace(/^import (.+) from '(.+)'$/gm, (_line, binding: string, from: string) => {
    expect(modules, from).toHaveProperty([from])
    return `const ${binding.startsWith('{') ? binding : `{ default: ${binding} }`} = modules[${JSON.stringify(from)}]`
  })
  const results = ['payload', 'event', 'ok', 'signature'].map((name) => `${name}: typeof ${name} === 'undefined' ? undefined : ${name}`).join(', ')
  return new AsyncFunction('rawBody', 'req', 'process', 'modules', `${body}\nreturn { ${results} }`)(rawBody, { headers }, { env }, modules)
}

const signingSecret = generateWebhookSecret()
const oldSecret = 'whsec_the-receivers-old-secret-0123'
const svixSecret = `whsec_${Buffer.alloc(24, 5).toString('base64')}`
const edKey = parseSigningSecret(generateSigningSecret())
const data = { order: 'ord_1', total: 42.5 }
const rawBody = JSON.stringify(data)
const env = { WEBHOOK_SECRET: signingSecret }

function destination(config: Record<string, string>, credentials: Record<string, string> = {}): Destination {
  return { id: 'd', type: 'webhook', topics: ['*'], disabled_at: null, created_at: '', config, credentials: { secret: signingSecret, ...credentials } }
}

/** The headers of a delivery as the engine signs it: webhook-* by the scheme, then the compatible ones. */
function signed(body: string, scheme: string, preset?: CompatiblePreset, secret = signingSecret, config: Record<string, string> = {}) {
  const delivery = { id: 'evt_snippet_1', topic: 'order.created', timestamp: Math.floor(Date.now() / 1000), body }
  const signatures = [...(scheme === 'ed25519' ? [] : [webhookSignatureHeader([signingSecret], delivery.id, delivery.timestamp, body)]), ...(scheme === 'hmac' ? [] : [signWebhookEd25519(edKey.privateKey, delivery.id, delivery.timestamp, body)])]
  const headers: Record<string, string> = { 'webhook-id': delivery.id, 'webhook-timestamp': String(delivery.timestamp), 'webhook-signature': signatures.join(' ') }
  if (!preset) return headers
  const template = (text: string, variables: readonly string[]) => {
    const parsed = parseTemplate(text, variables)
    expect(parsed, text).toBeInstanceOf(Array)
    return parsed as Template
  }
  const custom = preset === 'custom' ? { header: config.compatible_signature_header!, value: template(config.compatible_signature_template ?? '{signature}', valueVariables), content: template(config.compatible_signed_content!, contentVariables), encoding: config.compatible_signature_encoding as 'hex' } : undefined
  return { ...headers, ...compatibleHeaders(preset, [compatibleKey(preset, secret)], delivery, custom) }
}

describe('the portal’s verification snippets, run as written', () => {
  let keySet: Server
  let keySetUrl = ''
  beforeAll(async () => {
    keySet = createServer((_req, res) => res.setHeader('content-type', 'application/json').end(JSON.stringify({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: edKey.x, kid: edKey.kid }] })))
    await new Promise<void>((resolve) => keySet.listen(0, '127.0.0.1', resolve))
    keySetUrl = `http://127.0.0.1:${(keySet.address() as AddressInfo).port}/api/v1/signing-keys`
  })
  afterAll(() => new Promise<void>((resolve) => keySet.close(() => resolve())))

  it.each(['hmac', 'ed25519', 'both'])('the %s scheme’s snippet accepts a delivery and refuses a changed body', async (scheme) => {
    const [snippet] = verifySnippets(destination({ signature_scheme: scheme }), keySetUrl)
    const result = await run(snippet!.code, rawBody, signed(rawBody, scheme), env)
    expect(result.payload ?? result.event).toEqual(data)
    await expect(run(snippet!.code, rawBody.replace('42.5', '0.5'), signed(rawBody, scheme), env)).rejects.toThrow()
  })

  it.each([
    ['svix', svixSecret],
    ['github', oldSecret],
    ['stripe', oldSecret],
    ['outpost', oldSecret],
  ] as const)('the %s snippet verifies with the receiver’s old secret', async (preset, secret) => {
    const snippet = verifySnippets(destination({ compatible_signature: preset }, { compatible_signature_secret: 'whse****' }), keySetUrl)[1]!
    expect(snippet.code).toContain('process.env.OLD_WEBHOOK_SECRET')
    const headers = signed(rawBody, 'hmac', preset, secret)
    const result = await run(snippet.code, rawBody, headers, { OLD_WEBHOOK_SECRET: secret })
    if (preset === 'github' || preset === 'outpost') expect(result.ok).toBe(true)
    else expect(result.payload ?? result.event).toEqual(data)
    const changed = run(snippet.code, `${rawBody} `, headers, { OLD_WEBHOOK_SECRET: secret })
    if (preset === 'github' || preset === 'outpost') expect((await changed).ok).toBe(false)
    else await expect(changed).rejects.toThrow()
  })

  it('the custom snippet computes the signature the header carries, with backticks, backslashes and a $ before a variable kept as text', async () => {
    const config = { compatible_signature: 'custom', compatible_signature_header: 'X-Sig', compatible_signature_template: 'v1={signature}', compatible_signed_content: '`$`\\{id}.${timestamp}.{body}', compatible_signature_encoding: 'base64' }
    const snippet = verifySnippets(destination(config), keySetUrl)[1]!
    expect(snippet.code).toContain('process.env.WEBHOOK_SECRET')
    const headers = signed(rawBody, 'hmac', 'custom', signingSecret, config)
    const result = await run(snippet.code, rawBody, headers, env)
    expect(`v1=${result.signature}`).toBe(headers['x-sig'])
  })
})
