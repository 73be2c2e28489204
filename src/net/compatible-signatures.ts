import { createHmac, createSecretKey, type KeyObject } from 'node:crypto'
import { webhookSecretKey, webhookSignatureHeader } from './signing.js'

// The signature headers of other webhook providers, sent beside Outflow's own so that a receiver written for
// that provider keeps verifying deliveries during a migration. All are HMAC-SHA256:
//   svix     svix-id, svix-timestamp, svix-signature: v1,<base64 of "id.timestamp.body"> (key: base64 after whsec_)
//   github   x-hub-signature-256: sha256=<hex of body>
//   stripe   stripe-signature: t=<timestamp>,v1=<hex of "timestamp.body">
//   outpost  x-outpost-signature: v0=<hex of body> (Outpost's default mode), with x-outpost-timestamp,
//            x-outpost-event-id and x-outpost-topic
//   custom   a header named by the destination, its value and signed content given as templates
// Besides Svix, the key is the secret's UTF-8 bytes as the receiver holds it (GitHub, Stripe and Outpost do so).

/** The named presets, and `custom`. */
export const compatiblePresets = ['svix', 'github', 'stripe', 'outpost', 'custom'] as const
export type CompatiblePreset = (typeof compatiblePresets)[number]

/** The header names a preset sets (lower case); a custom scheme sets the one it names. */
export const presetHeaderNames: Readonly<Record<Exclude<CompatiblePreset, 'custom'>, readonly string[]>> = {
  svix: ['svix-id', 'svix-timestamp', 'svix-signature'],
  github: ['x-hub-signature-256'],
  stripe: ['stripe-signature'],
  outpost: ['x-outpost-signature', 'x-outpost-timestamp', 'x-outpost-event-id', 'x-outpost-topic'],
}

/** What a custom signature's templates may use: the signed content, then the header value. */
export const contentVariables = ['id', 'timestamp', 'body'] as const
export const valueVariables = ['signature', 'timestamp', 'id'] as const

/** Literal text and `{variable}` references, in order. */
export type Template = readonly (string | { variable: string })[]

/** A template may be at most this long: its literal text is copied into every delivery. */
export const maxTemplateLength = 256

/**
 * Parse a template of literal text and `{variable}` references from `variables`, in one pass (linear in its
 * length: each `{` is matched with the next `}` and scanning resumes after it). Braces only delimit variables.
 * Returns the parts, or what is wrong as a sentence fragment.
 *
 * @example
 * parseTemplate('{timestamp}.{body}', contentVariables) // [{ variable: 'timestamp' }, '.', { variable: 'body' }]
 */
export function parseTemplate(text: string, variables: readonly string[]): Template | string {
  if (text.length > maxTemplateLength) return `must be at most ${maxTemplateLength} characters`
  const parts: (string | { variable: string })[] = []
  let literal = ''
  for (let i = 0; i < text.length; i++) {
    const char = text[i]!
    if (char === '}') return 'has a "}" that closes no variable (braces only delimit variables)'
    if (char !== '{') {
      literal += char
      continue
    }
    const end = text.indexOf('}', i + 1)
    const name = end < 0 ? '' : text.slice(i + 1, end)
    if (end < 0 || !variables.includes(name)) return `has ${end < 0 ? 'a "{" without its "}"' : `an unknown variable {${name}}`}: use ${variables.map((v) => `{${v}}`).join(', ')}`
    if (literal) parts.push(literal)
    literal = ''
    parts.push({ variable: name })
    i = end
  }
  if (literal) parts.push(literal)
  return parts
}

/** How many times a template refers to `variable`. */
export function countVariable(template: Template, variable: string): number {
  return template.filter((part) => typeof part !== 'string' && part.variable === variable).length
}

/** A custom scheme: the header, its value template (with `{signature}`), the signed content template and encoding. */
export interface CustomSignature {
  header: string
  value: Template
  content: Template
  encoding: 'hex' | 'base64'
}

/** What one delivery's compatible signature covers. */
export interface SignedDelivery {
  id: string
  topic: string
  /** Unix seconds, the same as `webhook-timestamp`. */
  timestamp: number
  body: string
}

/**
 * The HMAC key of a receiver's secret for a preset: Svix's is base64 after `whsec_` (as Standard Webhooks'), the
 * others' the secret's own UTF-8 bytes.
 *
 * @example
 * const key = compatibleKey('stripe', 'whsec_test_secret')
 */
export function compatibleKey(preset: CompatiblePreset, secret: string): KeyObject {
  return createSecretKey(preset === 'svix' ? webhookSecretKey(secret) : Buffer.from(secret, 'utf8'))
}

const valueOf = (part: string | { variable: string }, values: Record<string, string>) => (typeof part === 'string' ? part : values[part.variable]!)

/** HMAC-SHA256 of a template's content, fed part by part (the body is never copied into a larger string). */
function templateHmac(key: KeyObject, template: Template, values: Record<string, string>): Buffer {
  const hmac = createHmac('sha256', key)
  for (const part of template) hmac.update(valueOf(part, values))
  return hmac.digest()
}

const hexHmac = (key: KeyObject, content: string) => createHmac('sha256', key).update(content).digest('hex')

/** The custom scheme's header, signed with the first key. */
function customHeaders(custom: CustomSignature, key: KeyObject, delivery: SignedDelivery): Record<string, string> {
  const timestamp = String(delivery.timestamp)
  const mac = templateHmac(key, custom.content, { id: delivery.id, timestamp, body: delivery.body })
  const values = { signature: mac.toString(custom.encoding), timestamp, id: delivery.id }
  let value = ''
  for (const part of custom.value) value += valueOf(part, values)
  return { [custom.header.toLowerCase()]: value }
}

/**
 * The headers of a compatible signature for one delivery, signed with each key where the format lists several
 * (Svix, Stripe, Outpost: the current secret and one still in its rotation overlap), else with the first.
 *
 * @example
 * compatibleHeaders('github', [compatibleKey('github', secret)], { id, topic, timestamp, body })
 * // { 'x-hub-signature-256': 'sha256=5d61…' }
 */
export function compatibleHeaders(preset: CompatiblePreset, keys: readonly KeyObject[], delivery: SignedDelivery, custom?: CustomSignature): Record<string, string> {
  const { id, timestamp, body } = delivery
  switch (preset) {
    case 'svix':
      return { 'svix-id': id, 'svix-timestamp': String(timestamp), 'svix-signature': webhookSignatureHeader(keys, id, timestamp, body) }
    case 'github':
      return { 'x-hub-signature-256': `sha256=${hexHmac(keys[0]!, body)}` }
    case 'stripe':
      return { 'stripe-signature': `t=${timestamp},${keys.map((key) => `v1=${hexHmac(key, `${timestamp}.${body}`)}`).join(',')}` }
    case 'outpost':
      return {
        'x-outpost-signature': `v0=${keys.map((key) => hexHmac(key, body)).join(',')}`,
        'x-outpost-timestamp': String(timestamp),
        'x-outpost-event-id': id,
        'x-outpost-topic': delivery.topic,
      }
    case 'custom':
      return customHeaders(custom!, keys[0]!, delivery)
  }
}
