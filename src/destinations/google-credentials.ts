import type * as PubSubModule from '@google-cloud/pubsub'
import { ipLiteral, isPrivateAddress } from '../net/ssrf.js'

/** The credential types a Pub/Sub destination accepts, as google-auth-library names them. */
export const googleCredentialTypes = ['service_account', 'authorized_user', 'external_account', 'external_account_authorized_user', 'impersonated_service_account'] as const

/** Fields of a credential JSON that google-auth-library sends requests to (token exchange, impersonation, revocation). */
const endpointFields = ['token_url', 'token_uri', 'token_info_url', 'revoke_url', 'service_account_impersonation_url'] as const

/**
 * `credential_source` kinds that make google-auth-library read from the Outflow host rather than from the tenant's
 * credential: a local file, a local program, the host's AWS identity (metadata server and environment), local
 * certificates. A tenant must not get the host's files or identity sent anywhere.
 */
const hostSources = {
  file: 'reads a file of the Outflow host',
  executable: 'runs a program on the Outflow host',
  environment_id: "uses the Outflow host's own AWS identity",
  certificate: "reads certificates of the Outflow host",
} as const

type Json = Record<string, unknown>

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A Google API host: googleapis.com or a subdomain (regional and Private Service Connect endpoints are). */
function isGoogleApisUrl(text: string): boolean {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return false
  }
  return url.protocol === 'https:' && (url.hostname === 'googleapis.com' || url.hostname.endsWith('.googleapis.com')) && !url.username && !url.password
}

/** An https URL of a public host (an IP literal must not be private): where a `credential_source.url` may point. */
function isPublicHttpsUrl(text: unknown): boolean {
  if (typeof text !== 'string') return false
  try {
    const url = new URL(text)
    const literal = ipLiteral(url.hostname)
    return url.protocol === 'https:' && !url.username && !url.password && (literal === null || !isPrivateAddress(literal))
  } catch {
    return false
  }
}

/**
 * What Outflow refuses in a credential JSON the library would accept, because the JSON comes from a tenant:
 * anything that reads from the host (see `hostSources`), a `credential_source.url` that is not public https, a
 * token or impersonation endpoint outside googleapis.com, another universe. Undefined when none applies.
 */
function hostSafetyIssue(key: Json, path = ''): string | undefined {
  const type = key.type
  if (typeof type !== 'string' || !(googleCredentialTypes as readonly string[]).includes(type)) {
    return `${path}type must be one of ${googleCredentialTypes.join(', ')}`
  }
  if (key.universe_domain !== undefined && key.universe_domain !== 'googleapis.com') return `${path}universe_domain must be googleapis.com`
  for (const field of endpointFields) {
    const value = key[field]
    if (value !== undefined && (typeof value !== 'string' || !isGoogleApisUrl(value))) return `${path}${field} must be an https:// URL of googleapis.com`
  }
  if (type === 'external_account') {
    const source = key.credential_source
    if (isObject(source)) {
      for (const [field, why] of Object.entries(hostSources)) {
        if (source[field] !== undefined) return `${path}credential_source.${field} is not accepted: it ${why}; use credential_source.url`
      }
      if (source.url !== undefined && !isPublicHttpsUrl(source.url)) return `${path}credential_source.url must be an https:// URL of a public host`
    }
  }
  if (type === 'impersonated_service_account') {
    if (!isObject(key.source_credentials)) return `${path}source_credentials must be a JSON object`
    return hostSafetyIssue(key.source_credentials, `${path}source_credentials.`)
  }
  return undefined
}

/**
 * The secret values of a credential JSON (its own, its source credentials', the headers its `credential_source` sends):
 * never to be recorded or echoed.
 *
 * @example
 * googleCredentialSecrets({ type: 'authorized_user', client_secret: 's3cr3t', refresh_token: '1//x' }) // ['s3cr3t', '1//x']
 */
export function googleCredentialSecrets(key: Record<string, unknown>): string[] {
  const headers = isObject(key.credential_source) && isObject(key.credential_source.headers) ? Object.values(key.credential_source.headers) : []
  const own = [...['private_key', 'private_key_id', 'client_secret', 'refresh_token'].map((field) => key[field]), ...headers]
  const strings = own.filter((v): v is string => typeof v === 'string' && v.length >= 4)
  return isObject(key.source_credentials) ? [...strings, ...googleCredentialSecrets(key.source_credentials)] : strings
}

/**
 * Why a Google credential JSON cannot publish to Pub/Sub, or undefined when it can. google-auth-library itself parses
 * it (the GoogleAuth of a PubSub client, as publishing will), so every form it accepts is accepted — a service-account
 * key, an authorized user, workload identity federation (`external_account`), an impersonated service account —
 * except what would make it read from the Outflow host or send tokens outside googleapis.com (`hostSafetyIssue`).
 * The message never quotes a secret of the key.
 *
 * @example
 * await googleCredentialIssue(sdk, { type: 'authorized_user' }) // 'The incoming JSON object does not contain a client_id field'
 */
export function googleCredentialIssue(sdk: typeof PubSubModule, key: Json, projectId: string): string | undefined {
  const unsafe = hostSafetyIssue(key)
  if (unsafe) return unsafe
  try {
    // A client that is never used: it only lends its GoogleAuth, which parses without any I/O.
    new sdk.PubSub({ projectId }).auth.fromJSON(key)
    return undefined
  } catch (err) {
    let message = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 300)
    for (const secret of googleCredentialSecrets(key)) message = message.split(secret).join('****')
    return `is not a credential Google accepts: ${message}`
  }
}
