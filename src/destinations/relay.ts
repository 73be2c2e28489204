import { createHmac } from 'node:crypto'
import * as v from 'valibot'
import { attemptResultFromError, httpAttemptResult, sendHttp } from '../net/http-client.js'
import { parseProxyUrl } from '../net/proxy.js'
import type { DeliveryMessage, DestinationTypeDefinition, Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { objectOf } from '../model/common.js'

/** An http(s) URL. */
function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string') return false
  try {
    const url = new URL(value)
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== ''
  } catch {
    return false
  }
}

// The spec gives relay config "no declared object type": any object is kept, only a `url` is checked.
const ConfigSchema = v.pipe(
  // objectOf, not v.record: every key is kept (record drops `constructor`, `__proto__`, `prototype`).
  objectOf(v.unknown(), 'must be an object'),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || dataset.value.url === undefined) return
    if (!isHttpUrl(dataset.value.url)) {
      addIssue({ message: 'must be an http:// or https:// URL', path: [{ type: 'object', origin: 'value', input: dataset.value, key: 'url', value: dataset.value.url }] })
    }
  }),
)

const CredentialsSchema = v.strictObject(
  {
    token: v.pipe(v.string('must be a string'), v.minLength(1, 'required')),
  },
  'unexpected field',
)

const configFields: FieldSpec[] = [
  {
    key: 'url',
    type: 'text',
    label: 'Relay URL',
    description: "The URL events are posted to. Default: the relay URL of this Outflow installation. Other config keys are stored as they are.",
    required: false,
    sensitive: false,
    pattern: '^https?://.+',
  },
]

const credentialFields: FieldSpec[] = [
  {
    key: 'token',
    type: 'text',
    label: 'Relay token',
    description: 'The token the relay issued for this destination. It is sent as a bearer token and keys the HMAC signature of every request.',
    required: true,
    sensitive: true,
    minlength: 1,
  },
]

const instructions = `## Deliver events through an event-gateway relay

The relay is an HTTP service that receives events from Outflow and forwards them onwards
(for example to a private network or to a local development machine).

1. Create a source on the relay and copy its **token**.
2. Enter the token. Leave the **relay URL** empty to use the relay configured for this Outflow
   installation, or enter the URL the relay gave you.

Each event is sent as \`POST <relay URL>\` with the JSON envelope
\`{ "id", "tenant_id", "destination_id", "topic", "time", "metadata", "data" }\` and these headers:

- \`authorization: Bearer <token>\`
- \`webhook-id\` (the event id), \`webhook-timestamp\` (unix seconds) and
  \`webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">\` keyed with
  the UTF-8 bytes of the token ([Standard Webhooks](https://www.standardwebhooks.com/) with a raw key).

Any 2xx response is a successful delivery; 401/403 mean the token was refused.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><circle cx="5" cy="12" r="2"/><circle cx="19" cy="12" r="2"/><path d="M7 12h3l2-4 2 8 2-4h1"/></svg>'

/** The JSON body the relay receives. */
function relayEnvelope(message: DeliveryMessage): string {
  return JSON.stringify({
    id: message.id,
    tenant_id: message.tenant_id,
    destination_id: message.destination_id,
    topic: message.topic,
    time: message.time.toISOString(),
    metadata: message.metadata,
    data: message.data ?? null,
  })
}

/**
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` keyed with the UTF-8 token (Standard Webhooks, raw key).
 *
 * @example
 * relaySignature('tok', 'evt_1', 1700000000, '{}') // 'v1,…='
 */
export function relaySignature(token: string, id: string, timestampSeconds: number, body: string): string {
  return `v1,${createHmac('sha256', Buffer.from(token, 'utf8')).update(`${id}.${timestampSeconds}.${body}`).digest('base64')}`
}

/** Host of a configured relay URL, for display. */
function relayHost(config: Record<string, unknown>): string | undefined {
  return isHttpUrl(config.url) ? new URL(config.url as string).host : undefined
}

/** Event-gateway relay destinations: a signed, token-authenticated HTTP POST of an event envelope. */
export const relay: DestinationTypeDefinition = {
  type: 'relay',
  label: 'Event Gateway Relay',
  description: 'Forward events to an event-gateway relay over HTTP, authenticated with a token and signed.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  configRequired: false,
  credentialsRequired: true,

  target(config) {
    return relayHost(config) ?? 'relay'
  },

  targetUrl(config) {
    return isHttpUrl(config.url) ? (config.url as string) : undefined
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const { token } = v.parse(CredentialsSchema, destination.credentials)
    // Relay config is optional: a destination created without one may carry null.
    const configured = (destination.config as Record<string, unknown> | null | undefined)?.url
    const url = isHttpUrl(configured) ? (configured as string) : context.relayUrl
    // A tenant-supplied URL is guarded like a webhook URL; the engine's own relayUrl is the operator's choice.
    const allowPrivateNetworks = isHttpUrl(configured) ? context.allowPrivateNetworks : true
    const proxy = context.proxy ? parseProxyUrl(context.proxy) : undefined

    return {
      async publish(message, { signal }) {
        if (!url) {
          return { ok: false, error_kind: 'configuration', error: 'no relay URL: set config.url on the destination or relayUrl on the engine' }
        }
        const body = relayEnvelope(message)
        const timestamp = Math.floor(Date.now() / 1000)
        const headers = {
          'content-type': 'application/json',
          'user-agent': context.userAgent,
          authorization: `Bearer ${token}`,
          'webhook-id': message.id,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': relaySignature(token, message.id, timestamp, body),
        }
        try {
          const response = await sendHttp(url, { method: 'POST', headers, body }, { allowPrivateNetworks, signal, ...(proxy ? { proxy } : {}) })
          return httpAttemptResult(response)
        } catch (err) {
          return attemptResultFromError(err)
        }
      },

      // Connections live in the shared HTTP client pool, which the engine closes on shutdown.
      async close() {},
    }
  },
}
