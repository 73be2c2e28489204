import type { Destination, Json, JsonObject } from './types.js'

// What a webhook's receiver needs to trust a delivery, read from the destination as the API returns it
// (secrets masked): the signing scheme, the compatible signature, the authentication, and how to verify.

export type SigningScheme = 'hmac' | 'ed25519' | 'both'

export const schemeLabels: Record<SigningScheme, string> = {
  hmac: 'HMAC-SHA256 (v1, Standard Webhooks)',
  ed25519: 'Ed25519 (v1a), keys in the key set',
  both: 'HMAC and Ed25519 (v1 and v1a), while receivers move',
}

export const presetLabels: Record<string, string> = {
  svix: 'Svix (svix-id, svix-timestamp, svix-signature)',
  github: 'GitHub-style (X-Hub-Signature-256)',
  stripe: 'Stripe-style (Stripe-Signature)',
  outpost: 'Outpost (X-Outpost-Signature: v0=…)',
  custom: 'Custom header',
}

const text = (value: Json | undefined): string | undefined => (typeof value === 'string' ? value : undefined)

export function signingScheme(destination: Destination): SigningScheme {
  const scheme = text(destination.config?.signature_scheme)
  return scheme === 'ed25519' || scheme === 'both' ? scheme : 'hmac'
}

/** The compatible signature preset, if any. */
export function compatiblePreset(destination: Destination): string | undefined {
  return text(destination.config?.compatible_signature)
}

/** How deliveries authenticate to the receiver, one line per part; the API already masked the secrets. */
export function authenticationSummary(credentials: JsonObject): string[] {
  const lines: string[] = []
  if (credentials.basic_username !== undefined) lines.push(`Basic auth, user ${text(credentials.basic_username)}`)
  if (credentials.bearer_token !== undefined) lines.push(`Bearer token ${text(credentials.bearer_token)}`)
  if (credentials.auth_header_name !== undefined) lines.push(`Secret header ${text(credentials.auth_header_name)}: ${text(credentials.auth_header_value)}`)
  if (credentials.oauth2_token_url !== undefined) lines.push(`OAuth2 client credentials from ${text(credentials.oauth2_token_url)}, client ${text(credentials.oauth2_client_id)}`)
  if (credentials.tls_client_cert !== undefined) lines.push('mTLS client certificate')
  if (credentials.tls_ca !== undefined) lines.push('Receiver CA pinned')
  return lines.length ? lines : ['None']
}

export interface Snippet {
  title: string
  code: string
}

/** The scheme's own snippet: a Standard Webhooks library for v1, outflow/verify with the key set for v1a. */
function schemeSnippet(scheme: SigningScheme, keySetUrl: string): Snippet {
  if (scheme === 'hmac')
    return {
      title: 'v1 (HMAC) with a Standard Webhooks library',
      code: `import { Webhook } from 'standardwebhooks'

const wh = new Webhook(process.env.WEBHOOK_SECRET) // the signing secret, whsec_…
// The raw body, before parsing; throws when the signature or timestamp is wrong.
const event = wh.verify(rawBody, req.headers)`,
    }
  const secret = scheme === 'both' ? '\n  secret: process.env.WEBHOOK_SECRET, // the signing secret, whsec_…' : ''
  return {
    title: scheme === 'both' ? 'v1 (HMAC) or v1a (Ed25519) with outflow/verify' : 'v1a (Ed25519) with outflow/verify',
    code: `import { createVerifier } from 'outflow/verify'

// The key set is fetched and cached; keys never come from the request.
const verifier = createVerifier({${secret}
  keySetUrl: '${keySetUrl}',
})
// The raw body, before parsing; throws when no signature verifies.
const { payload } = await verifier.verify(rawBody, req.headers)`,
  }
}

/** A template's text as the inside of a JS template literal, its variables as the request's values. */
function templateLiteral(template: string): string {
  const values: Record<string, string> = { id: "${req.headers['webhook-id']}", timestamp: "${req.headers['webhook-timestamp']}", body: '${rawBody}' }
  // A valid template has braces only around its variables, so a literal "${" cannot occur: "$" before a variable stays "$".
  return template.replace(/[`\\]|\{(id|timestamp|body)\}/g, (match, name?: string) => (name ? values[name]! : `\\${match}`))
}

function presetCode(preset: string, config: JsonObject, secret: string): string | undefined {
  switch (preset) {
    case 'svix':
      return `import { Webhook } from 'svix'\n\nconst wh = new Webhook(${secret})\nconst payload = wh.verify(rawBody, req.headers)`
    case 'github':
      return `import { verify } from '@octokit/webhooks-methods'\n\nconst signature = req.headers['x-hub-signature-256']\nconst ok = await verify(${secret}, rawBody, signature)`
    case 'stripe':
      return `import Stripe from 'stripe'\n\nconst secret = ${secret}\nconst signature = req.headers['stripe-signature']\nconst event = Stripe.webhooks.constructEvent(rawBody, signature, secret)`
    case 'outpost':
      return `import { createHmac, timingSafeEqual } from 'node:crypto'

// x-outpost-signature: v0=<hex HMAC-SHA256 of the raw body>[,<hex>…]
const hmac = createHmac('sha256', ${secret}).update(rawBody)
const expected = Buffer.from(hmac.digest('hex'))
const listed = req.headers['x-outpost-signature'].slice(3).split(',')
const ok = listed.some((hex) =>
  hex.length === expected.length && timingSafeEqual(Buffer.from(hex), expected))`
    case 'custom': {
      const header = text(config.compatible_signature_header) ?? 'the header'
      const value = text(config.compatible_signature_template) ?? '{signature}'
      const content = text(config.compatible_signed_content) ?? '{timestamp}.{body}'
      const encoding = text(config.compatible_signature_encoding) ?? 'hex'
      return `import { createHmac } from 'node:crypto'

// ${header}: ${value}
const hmac = createHmac('sha256', ${secret})
const signature = hmac.update(\`${templateLiteral(content)}\`).digest('${encoding}')
// Compare it in constant time with the {signature} part of ${header}.`
    }
  }
  return undefined
}

/**
 * A short verification snippet per scheme the destination signs with: its own, then its compatible one.
 *
 * @example
 * verifySnippets(destination, 'https://hooks.example.com/api/v1/signing-keys')
 */
export function verifySnippets(destination: Destination, keySetUrl: string): Snippet[] {
  const snippets = [schemeSnippet(signingScheme(destination), keySetUrl)]
  const preset = compatiblePreset(destination)
  const secret = destination.credentials.compatible_signature_secret === undefined ? 'process.env.WEBHOOK_SECRET' : 'process.env.OLD_WEBHOOK_SECRET'
  const code = preset ? presetCode(preset, destination.config ?? {}, secret) : undefined
  if (preset && code) snippets.push({ title: `${presetLabels[preset] ?? preset}, compatible`, code })
  return snippets
}
