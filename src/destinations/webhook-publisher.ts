import type { KeyObject } from 'node:crypto'
import { attemptResultFromError, httpAttemptResult, sendHttp } from '../net/http-client.js'
import { webhookSignatureHeader, webhookSigningKey } from '../net/signing.js'
import { signWebhookEd25519 } from '../net/ed25519.js'
import { parseProxyUrl } from '../net/proxy.js'
import { authenticator } from './webhook-auth.js'
import { headerTokenPattern, headerValuePattern } from './webhook-headers.js'
import { compatibleSigner } from './webhook-compatible.js'
import { batchRequest, type SignedPost } from './webhook-batch.js'
import type { AttemptResult } from '../model/attempt-result.js'
import { jsonBody, type DeliveryMessage, type Publisher, type PublisherContext, type PublisherDestination, type PublishOptions } from './types.js'

/** The webhook config the publisher reads (validated by the type's schema before). */
interface WebhookConfig {
  url: string
  proxy_url?: string
  signature_scheme?: 'hmac' | 'ed25519' | 'both'
  custom_headers?: Record<string, string>
}


/** The secrets that sign now: the current one, plus the previous one until it expires. */
function activeSecrets(credentials: Record<string, unknown>, now: number): string[] {
  const secrets = typeof credentials.secret === 'string' ? [credentials.secret] : []
  const expires = typeof credentials.previous_secret_invalid_at === 'string' ? Date.parse(credentials.previous_secret_invalid_at) : Number.NaN
  if (typeof credentials.previous_secret === 'string' && expires > now) secrets.push(credentials.previous_secret)
  return secrets
}

/** Header names of metadata keys (null: HTTP cannot carry it); the same few keys come with every delivery. */
const metadataHeaderNames = new Map<string, string | null>()
const maxMetadataHeaderNames = 1_000

function metadataHeaderName(key: string): string | null {
  let name = metadataHeaderNames.get(key)
  if (name === undefined) {
    // Keys are the publishers' own: bounded, so a stream of distinct ones cannot grow it without end.
    if (metadataHeaderNames.size >= maxMetadataHeaderNames) metadataHeaderNames.clear()
    name = headerTokenPattern.test(key) ? `x-outflow-${key.toLowerCase()}` : null
    metadataHeaderNames.set(key, name)
  }
  return name
}

/** Add metadata as `x-outflow-<key>` headers; keys or values HTTP cannot carry are left out rather than failing the delivery. */
function addMetadataHeaders(headers: Record<string, string>, metadata: Record<string, string>): void {
  for (const key in metadata) {
    if (!Object.hasOwn(metadata, key)) continue
    const value = metadata[key]
    const name = metadataHeaderName(key)
    if (name !== null && typeof value === 'string' && headerValuePattern.test(value)) headers[name] = value
  }
}

function lowerCaseKeys(headers: Record<string, string> | undefined): Record<string, string> {
  return Object.fromEntries(Object.entries(headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]))
}

/** A request's headers before its signatures: custom headers, metadata, trace context, then Outflow's own. */
function unsignedHeaders(customHeaders: Record<string, string>, request: SignedPost, userAgent: string, timestamp: number): Record<string, string> {
  const headers: Record<string, string> = { ...customHeaders }
  addMetadataHeaders(headers, request.metadata)
  if (request.traceHeaders) Object.assign(headers, request.traceHeaders)
  headers['content-type'] = request.contentType
  headers['user-agent'] = userAgent
  headers['webhook-id'] = request.id
  headers['webhook-timestamp'] = String(timestamp)
  return headers
}

/**
 * The webhook publisher: a POST per event (`publish`), or one POST per batch (`publishBatch`, the destination's
 * `batch` policy: see webhook-batch.ts), each signed with Standard Webhooks signatures over its whole body.
 */
export async function createWebhookPublisher(destination: PublisherDestination, context: PublisherContext): Promise<Publisher> {
  const config = destination.config as unknown as WebhookConfig
  const customHeaders = lowerCaseKeys(config.custom_headers)
  const scheme = config.signature_scheme ?? 'hmac'
  const credentials = destination.credentials
  const proxyUrl = config.proxy_url ?? context.proxy
  const proxy = proxyUrl ? parseProxyUrl(proxyUrl) : undefined
  const compatible = compatibleSigner(destination.config, credentials)
  const auth = authenticator(credentials, { allowPrivateNetworks: context.allowPrivateNetworks, ...(proxy ? { proxy } : {}) })
  // Decoded once per publisher (it is replaced when the destination changes), not once per delivery.
  const keys = new Map<string, KeyObject>()
  const keyOf = (secret: string) => {
    let key = keys.get(secret)
    if (!key) keys.set(secret, (key = webhookSigningKey(secret)))
    return key
  }
  const post = async (request: SignedPost, signal: AbortSignal): Promise<AttemptResult> => {
    const signatures = scheme === 'hmac' ? [] : (context.signers?.() ?? [])
    if (scheme !== 'hmac' && signatures.length === 0) return { ok: false, error_kind: 'configuration', error: 'the engine has no Ed25519 signing key to sign with' }
    const secrets = scheme === 'ed25519' && !compatible ? [] : activeSecrets(credentials, Date.now())
    if (scheme !== 'ed25519' && secrets.length === 0) return { ok: false, error_kind: 'configuration', error: 'the webhook has no signing secret' }
    const { body, id } = request
    const timestamp = Math.floor(Date.now() / 1000)
    // Outflow's own headers come last so nothing else can replace the signature or framing.
    const headers = unsignedHeaders(customHeaders, request, context.userAgent, timestamp)
    // One signature per active key, space-separated: v1 (HMAC) first, then v1a (Ed25519), as Standard Webhooks lists them.
    let signature = scheme !== 'ed25519' ? webhookSignatureHeader(secrets.map(keyOf), id, timestamp, body) : ''
    for (const key of signatures) signature += `${signature ? ' ' : ''}${signWebhookEd25519(key.privateKey, id, timestamp, body)}`
    headers['webhook-signature'] = signature
    compatible?.(headers, { id, topic: request.topic, timestamp, body }, secrets)
    // Per delivery, this path is hot: no extra object or await unless a destination needs mTLS, a proxy or OAuth2.
    const http = auth.tls || proxy ? { allowPrivateNetworks: context.allowPrivateNetworks, signal, ...(auth.tls ? { tls: auth.tls } : {}), ...(proxy ? { proxy } : {}) } : { allowPrivateNetworks: context.allowPrivateNetworks, signal }
    for (const name in auth.fixed) headers[name] = auth.fixed[name]!
    try {
      let sent = auth.headers ? { ...headers, ...(await auth.headers(signal)) } : headers
      let response = await sendHttp(config.url, { method: 'POST', headers: sent, body }, http)
      // A refused OAuth2 token (expired or revoked early): one more try with a new one.
      if (response.status === 401 && auth.headers && auth.refused(sent)) {
        sent = { ...headers, ...(await auth.headers(signal)) }
        response = await sendHttp(config.url, { method: 'POST', headers: sent, body }, http)
      }
      return httpAttemptResult(response)
    } catch (err) {
      return attemptResultFromError(err)
    }
  }
  const format = destination.batch?.format ?? 'cloudevents'
  return {
    publish: (message: DeliveryMessage, { signal }: PublishOptions): Promise<AttemptResult> =>
      post({ body: jsonBody(message), id: message.id, topic: message.topic, contentType: 'application/json', metadata: message.metadata, traceHeaders: message.trace_headers }, signal),
    // All or nothing: one answer for the whole body, so every message gets the same result.
    async publishBatch(messages: DeliveryMessage[], { signal }: PublishOptions): Promise<AttemptResult[]> {
      const result = await post(batchRequest(messages, format, destination.tenant_id), signal)
      return messages.map(() => result)
    },
    // Connections are pooled per origin and shared by every destination (closeHttpClients at shutdown).
    async close() {},
  }
}
