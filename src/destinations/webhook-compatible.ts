import type { KeyObject } from 'node:crypto'
import * as v from 'valibot'
import type { FieldSpec } from '../model/destination-type.js'
import {
  compatibleHeaders,
  compatibleKey,
  compatiblePresets,
  contentVariables,
  countVariable,
  parseTemplate,
  presetHeaderNames,
  valueVariables,
  type CompatiblePreset,
  type CustomSignature,
  type Template,
} from '../net/compatible-signatures.js'
import { webhookSecretProblem } from '../net/signing.js'
import { headerTokenPattern, headerValuePattern, reservedHeaders } from './webhook-headers.js'

// A webhook's compatible signature: the headers of another provider (Svix, GitHub, Stripe, Outpost, or a custom
// template) sent beside Outflow's own, so receivers written for that provider keep working during a migration.
// The preset and templates are config; the receiver's secret, when it is not the signing secret, is a credential.

const encodings = ['hex', 'base64'] as const
const defaultValue = '{signature}'
const defaultContent = '{timestamp}.{body}'

/** A template field checked by parsing it, so a template that was stored always renders. */
function templateSchema(variables: readonly string[]) {
  return v.pipe(
    v.string('must be a string'),
    v.minLength(1, 'must not be empty'),
    v.rawCheck(({ dataset, addIssue }) => {
      const parsed = dataset.typed ? parseTemplate(dataset.value, variables) : []
      if (typeof parsed === 'string') addIssue({ message: parsed })
    }),
  )
}

/** The config entries, spread into the webhook's config schema. */
export const compatibleConfigEntries = {
  compatible_signature: v.optional(v.picklist(compatiblePresets, `must be one of: ${compatiblePresets.join(', ')}`)),
  compatible_signature_header: v.optional(
    v.pipe(
      v.string('must be a string'),
      v.maxLength(256, 'must be at most 256 characters'),
      v.regex(headerTokenPattern, 'is not a valid header name'),
      v.check((name) => !reservedHeaders.has(name.toLowerCase()), 'is set by Outflow and cannot be used'),
    ),
  ),
  compatible_signature_template: v.optional(v.pipe(templateSchema(valueVariables), v.regex(headerValuePattern, 'is not a valid header value'))),
  compatible_signed_content: v.optional(templateSchema(contentVariables)),
  compatible_signature_encoding: v.optional(v.picklist(encodings, `must be one of: ${encodings.join(', ')}`)),
}

/** The credential entry: the secret the receiver already verifies with. */
export const compatibleCredentialEntries = {
  compatible_signature_secret: v.optional(
    v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(1024, 'must be at most 1024 characters'), v.regex(/^[^\x00-\x1f\x7f]+$/, 'must not contain control characters')),
  ),
}

const field = (key: string, label: string, description: string, extra: Partial<FieldSpec> = {}): FieldSpec => ({ key, type: 'text', label, description, required: false, sensitive: false, ...extra })

/** Their field specs (the portal's form and GET /destination-types). */
export const compatibleConfigFields: FieldSpec[] = [
  field(
    'compatible_signature',
    'Compatible signature',
    "Also send another provider's signature headers, so receivers written for it keep working while they move: svix (svix-id, svix-timestamp, svix-signature), github (X-Hub-Signature-256: sha256=<hex>), stripe (Stripe-Signature: t=…,v1=…), outpost (X-Outpost-Signature: v0=<hex>) or custom (the header and templates below).",
    { pattern: `^(${compatiblePresets.join('|')})$` },
  ),
  field('compatible_signature_header', 'Custom signature header', 'custom only (required): the name of the header that carries the signature, e.g. X-Signature.', { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$", maxlength: 256 }),
  field('compatible_signature_template', 'Custom signature value', 'custom only: the header value, with {signature} and optionally {timestamp} and {id}. Default: {signature}.', { maxlength: 256 }),
  field('compatible_signed_content', 'Custom signed content', 'custom only: what is signed (HMAC-SHA256), from {id}, {timestamp} (Unix seconds) and {body} (the raw body, at most once). Default: {timestamp}.{body}.', {
    maxlength: 256,
  }),
  field('compatible_signature_encoding', 'Custom signature encoding', 'custom only: hex (default) or base64.', { pattern: '^(hex|base64)$' }),
]

export const compatibleCredentialFields: FieldSpec[] = [
  field(
    'compatible_signature_secret',
    'Compatible signature secret',
    "The secret your receivers already verify the compatible signature with (e.g. the old provider's). Default: the signing secret. Svix needs a whsec_ secret.",
    { sensitive: true, maxlength: 1024 },
  ),
]

const customKeys = ['compatible_signature_header', 'compatible_signature_template', 'compatible_signed_content', 'compatible_signature_encoding'] as const

/** The header names a compatible signature sets (lower case). */
function headerNamesOf(config: Record<string, unknown>): readonly string[] {
  const preset = config.compatible_signature as CompatiblePreset | undefined
  if (preset === undefined) return []
  if (preset !== 'custom') return presetHeaderNames[preset]
  return typeof config.compatible_signature_header === 'string' ? [config.compatible_signature_header.toLowerCase()] : []
}

/** Headers that authentication or custom_headers would also set. */
function headerConflicts(config: Record<string, unknown>, credentials: Record<string, unknown>, problems: Record<string, string>): void {
  const names = new Set(headerNamesOf(config))
  const why = `is also set by the compatible signature (${String(config.compatible_signature)})`
  for (const name of Object.keys((config.custom_headers as Record<string, string> | undefined) ?? {})) if (names.has(name.toLowerCase())) problems[`config.custom_headers.${name}`] = why
  const authName = typeof credentials.auth_header_name === 'string' ? credentials.auth_header_name.toLowerCase() : undefined
  if (authName !== undefined && names.has(authName)) problems['credentials.auth_header_name'] = why
  const setsAuthorization = ['basic_username', 'bearer_token', 'oauth2_token_url'].some((key) => credentials[key] !== undefined)
  if (setsAuthorization && names.has('authorization')) problems['config.compatible_signature_header'] = 'is the Authorization header that the authentication sets'
}

/** A stored or validated template's parts (none when absent). */
function templateOf(text: unknown, variables: readonly string[]): Template {
  const parsed = typeof text === 'string' ? parseTemplate(text, variables) : []
  return typeof parsed === 'string' ? [] : parsed
}

/** Cross-field rules of compatible signatures: custom fields with custom only, its header required, a Svix secret, no header set twice. 422 data or undefined. */
export function compatibleProblems(config: Record<string, unknown>, credentials: Record<string, unknown>): Record<string, string> | undefined {
  const problems: Record<string, string> = {}
  const preset = config.compatible_signature as CompatiblePreset | undefined
  if (preset === undefined && credentials.compatible_signature_secret !== undefined) problems['credentials.compatible_signature_secret'] = 'needs compatible_signature'
  if (preset !== 'custom') for (const key of customKeys) if (config[key] !== undefined) problems[`config.${key}`] = 'is only used with compatible_signature "custom"'
  if (preset === 'custom' && config.compatible_signature_header === undefined) problems['config.compatible_signature_header'] = 'required with compatible_signature "custom"'
  if (preset === 'custom' && countVariable(templateOf(config.compatible_signature_template, valueVariables), 'signature') === 0 && config.compatible_signature_template !== undefined)
    problems['config.compatible_signature_template'] = 'must contain {signature}'
  // The body is the one large value: signed once, so the signed content stays linear in its size.
  if (preset === 'custom' && countVariable(templateOf(config.compatible_signed_content, contentVariables), 'body') > 1) problems['config.compatible_signed_content'] = 'may use {body} at most once'
  const secret = credentials.compatible_signature_secret
  if (preset === 'svix' && typeof secret === 'string') {
    const problem = webhookSecretProblem(secret)
    if (problem) problems['credentials.compatible_signature_secret'] = `is a Svix secret, so it ${problem}`
  }
  headerConflicts(config, credentials, problems)
  return Object.keys(problems).length ? problems : undefined
}

/** Adds a delivery's compatible signature headers; `signingSecrets` are the webhook's active secrets, current first. */
export type CompatibleSigner = (headers: Record<string, string>, delivery: { id: string; topic: string; timestamp: number; body: string }, signingSecrets: readonly string[]) => void

function customOf(config: Record<string, unknown>): CustomSignature {
  return {
    header: config.compatible_signature_header as string,
    value: templateOf(config.compatible_signature_template ?? defaultValue, valueVariables),
    content: templateOf(config.compatible_signed_content ?? defaultContent, contentVariables),
    encoding: (config.compatible_signature_encoding as 'hex' | 'base64' | undefined) ?? 'hex',
  }
}

/**
 * The signer of a destination's compatible signature, or undefined when it has none (stored values only: they were
 * validated when written). Keys are derived once per secret, not per delivery.
 */
export function compatibleSigner(config: Record<string, unknown>, credentials: Record<string, unknown>): CompatibleSigner | undefined {
  const preset = config.compatible_signature as CompatiblePreset | undefined
  if (preset === undefined) return undefined
  const custom = preset === 'custom' ? customOf(config) : undefined
  const own = typeof credentials.compatible_signature_secret === 'string' ? [compatibleKey(preset, credentials.compatible_signature_secret)] : undefined
  const derived = new Map<string, KeyObject>()
  const keyOf = (secret: string) => {
    let key = derived.get(secret)
    if (!key) derived.set(secret, (key = compatibleKey(preset, secret)))
    return key
  }
  return (headers, delivery, signingSecrets) => {
    const keys = own ?? signingSecrets.map(keyOf)
    if (keys.length === 0) return
    const signed = compatibleHeaders(preset, keys, delivery, custom)
    // The topic is the publisher's text: left out, as metadata headers are, when HTTP cannot carry it.
    for (const name in signed) if (headerValuePattern.test(signed[name]!)) headers[name] = signed[name]!
  }
}
