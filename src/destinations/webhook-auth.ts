import * as v from 'valibot'
import type { FieldSpec } from '../model/destination-type.js'
import { clientTls, clientTlsProblems, type ClientTls } from '../net/client-tls.js'
import { TokenSource } from '../net/oauth2.js'
import type { EgressProxy } from '../net/proxy.js'
import { headerTokenPattern, headerValuePattern, reservedHeaders } from './webhook-headers.js'

// How a webhook (or relay) authenticates to its receiver, kept in the destination's encrypted credentials:
// basic auth, a bearer token or a custom secret header, OAuth2 client credentials, and/or an mTLS client certificate.

const text = (max: number) => v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(max, `must be at most ${max} characters`))
const headerText = (max: number) => v.pipe(text(max), v.regex(headerValuePattern, 'is not a valid header value'))
const pem = v.pipe(text(16_384), v.includes('-----BEGIN ', 'must be PEM'))
const httpUrl = v.pipe(
  text(2048),
  v.check((value) => {
    try {
      const url = new URL(value)
      return (url.protocol === 'https:' || url.protocol === 'http:') && !url.username && !url.password
    } catch {
      return false
    }
  }, 'must be an http or https URL without a user name or password'),
)

/** The credential entries of authentication, spread into the webhook's credentials schema. */
export const authCredentialEntries = {
  basic_username: v.optional(v.pipe(text(256), v.check((u) => !u.includes(':'), 'must not contain ":"'), v.regex(headerValuePattern, 'is not a valid header value'))),
  basic_password: v.optional(headerText(1024)),
  bearer_token: v.optional(v.pipe(text(8192), v.regex(/^[\x21-\x7e]+$/, 'must be visible ASCII without spaces'))),
  auth_header_name: v.optional(
    v.pipe(text(256), v.regex(headerTokenPattern, 'is not a valid header name'), v.check((name) => !reservedHeaders.has(name.toLowerCase()), 'is set by Outflow and cannot be used')),
  ),
  auth_header_value: v.optional(headerText(8192)),
  oauth2_token_url: v.optional(httpUrl),
  oauth2_client_id: v.optional(text(1024)),
  oauth2_client_secret: v.optional(text(4096)),
  oauth2_scope: v.optional(v.pipe(text(2048), v.regex(/^[\x21\x23-\x5b\x5d-\x7e]+( [\x21\x23-\x5b\x5d-\x7e]+)*$/, 'must be space-separated scope tokens'))),
  oauth2_audience: v.optional(text(2048)),
  tls_client_cert: v.optional(pem),
  tls_client_key: v.optional(pem),
  tls_ca: v.optional(pem),
}

const field = (key: string, label: string, description: string, sensitive: boolean): FieldSpec => ({ key, type: 'text', label, description, required: false, sensitive })

/** Their field specs (the portal's form and GET /destination-types). */
export const authCredentialFields: FieldSpec[] = [
  field('basic_username', 'Basic auth user', 'HTTP basic authentication: the user name (with basic_password).', false),
  field('basic_password', 'Basic auth password', 'HTTP basic authentication: the password.', true),
  field('bearer_token', 'Bearer token', 'Sent as "Authorization: Bearer <token>" with every delivery.', true),
  field('auth_header_name', 'Secret header name', 'A header of your choice that carries a shared secret, e.g. X-Api-Key (with auth_header_value).', false),
  field('auth_header_value', 'Secret header value', 'The value of the secret header.', true),
  field('oauth2_token_url', 'OAuth2 token endpoint', 'OAuth2 client credentials: the token endpoint. Tokens are cached until shortly before they expire and sent as a bearer token.', false),
  field('oauth2_client_id', 'OAuth2 client id', 'OAuth2 client credentials: the client id (sent with client_secret_basic).', false),
  field('oauth2_client_secret', 'OAuth2 client secret', 'OAuth2 client credentials: the client secret.', true),
  field('oauth2_scope', 'OAuth2 scope', 'Optional: space-separated scopes to ask for.', false),
  field('oauth2_audience', 'OAuth2 audience', 'Optional: the audience (API identifier) to ask a token for.', false),
  field('tls_client_cert', 'mTLS client certificate', 'PEM certificate presented to the receiver (mutual TLS), with tls_client_key.', false),
  field('tls_client_key', 'mTLS client key', 'PEM private key of the client certificate (unencrypted).', true),
  field('tls_ca', 'Receiver CA (pinned)', "Optional PEM CA certificate: the receiver's certificate must chain to it, instead of the public CAs.", false),
]

/** Credential keys that are secrets (masked in answers). */
export const authSecretKeys = authCredentialFields.filter((f) => f.sensitive).map((f) => f.key)

const schemes = [
  ['basic_username', 'basic_password'],
  ['bearer_token'],
  ['auth_header_name', 'auth_header_value'],
  ['oauth2_token_url', 'oauth2_client_id', 'oauth2_client_secret'],
] as const

/** Cross-field rules: one header scheme at most, each complete; a certificate with its key. 422 data or undefined. */
export function authProblems(credentials: Record<string, unknown>): Record<string, string> | undefined {
  const problems: Record<string, string> = {}
  const used = schemes.filter((keys) => keys.some((k) => credentials[k] !== undefined) || (keys[0] === 'oauth2_token_url' && (credentials.oauth2_scope !== undefined || credentials.oauth2_audience !== undefined)))
  if (used.length > 1) problems[used[1]![0]] = `cannot be combined with ${used[0]![0]}: use one of basic auth, a bearer token, a secret header or OAuth2`
  for (const keys of used) for (const key of keys) if (credentials[key] === undefined) problems[key] = `required with ${keys.find((k) => credentials[k] !== undefined) ?? keys[0]}`
  const tls = { cert: credentials.tls_client_cert as string | undefined, key: credentials.tls_client_key as string | undefined, ca: credentials.tls_ca as string | undefined }
  Object.assign(problems, clientTlsProblems(tls))
  const entries = Object.entries(problems)
  return entries.length ? Object.fromEntries(entries.map(([key, message]) => [`credentials.${key}`, message])) : undefined
}

/** What a publisher adds to each request to authenticate. */
export interface Authenticator {
  tls?: ClientTls
  /** Headers that never change (basic, bearer, a secret header): set once per request without waiting. */
  fixed: Record<string, string>
  /** OAuth2 only: the token header of the next request (fetched or cached). */
  headers?(signal: AbortSignal): Promise<Record<string, string>>
  /** The receiver answered 401 to `sent`: true when a new token was asked for, so the request is worth sending once more. */
  refused(sent: Record<string, string>): boolean
}

/** The authenticator of a destination's credentials (stored values only: validated when written). */
export function authenticator(credentials: Record<string, unknown>, { allowPrivateNetworks, proxy }: { allowPrivateNetworks: boolean; proxy?: EgressProxy }): Authenticator {
  const tls = clientTls(credentials.tls_client_cert, credentials.tls_client_key, credentials.tls_ca)
  const str = (key: string) => (typeof credentials[key] === 'string' ? (credentials[key] as string) : undefined)
  const fixed: Record<string, string> = {}
  const [user, password, bearer, name, value] = ['basic_username', 'basic_password', 'bearer_token', 'auth_header_name', 'auth_header_value'].map(str)
  if (user !== undefined && password !== undefined) fixed.authorization = `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`
  else if (bearer !== undefined) fixed.authorization = `Bearer ${bearer}`
  else if (name !== undefined && value !== undefined) fixed[name.toLowerCase()] = value
  const [tokenUrl, clientId, clientSecret] = ['oauth2_token_url', 'oauth2_client_id', 'oauth2_client_secret'].map(str)
  if (tokenUrl && clientId && clientSecret) {
    const tokens = new TokenSource({ tokenUrl, clientId, clientSecret, scope: str('oauth2_scope'), audience: str('oauth2_audience') }, { allowPrivateNetworks, ...(proxy ? { proxy } : {}) })
    return {
      tls,
      fixed,
      headers: async (signal) => ({ authorization: `Bearer ${await tokens.token(signal)}` }),
      refused: (sent) => {
        const token = sent.authorization?.slice('Bearer '.length)
        if (token) tokens.invalidate(token)
        return true
      },
    }
  }
  return { tls, fixed, refused: () => false }
}
