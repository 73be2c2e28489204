import * as v from 'valibot'
import { generateWebhookSecret, webhookSecretProblem } from '../net/signing.js'
import { parseProxyUrl } from '../net/proxy.js'
import { authCredentialEntries, authCredentialFields, authProblems } from './webhook-auth.js'
import { headerTokenPattern, headerValuePattern, reservedHeaders } from './webhook-headers.js'
import { compatibleConfigEntries, compatibleConfigFields, compatibleCredentialEntries, compatibleCredentialFields, compatibleProblems } from './webhook-compatible.js'
import { createWebhookPublisher } from './webhook-publisher.js'
import type { CredentialsInput, DestinationTypeDefinition, Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { objectOf } from '../model/common.js'

/** How long a rotated-out secret keeps signing when no `previous_secret_invalid_at` is given. */
const ROTATION_GRACE_MS = 24 * 60 * 60 * 1000

const SecretSchema = v.pipe(
  v.string('must be a string'),
  v.rawCheck(({ dataset, addIssue }) => {
    const problem = dataset.typed ? webhookSecretProblem(dataset.value) : null
    if (problem) addIssue({ message: problem })
  }),
)

function proxyProblem(text: string): string | null {
  try {
    parseProxyUrl(text)
    return null
  } catch (err) {
    return (err as Error).message
  }
}

/** `hmac`: `v1,` with the destination's secret (the default); `ed25519`: `v1a,` with the engine's keyring; `both` while receivers move. */
export const signatureSchemes = ['hmac', 'ed25519', 'both'] as const

const rfc3339Pattern = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i

function urlProblem(text: string): string | null {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be a valid URL'
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL'
  if (!url.hostname) return 'must name a host'
  // config is returned unmasked, so a password in the URL would leak; headers are the place for auth.
  if (url.username || url.password) return 'must not contain a user name or password: use custom_headers'
  return null
}

const ConfigSchema = v.strictObject(
  {
    url: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.maxLength(2048, 'must be at most 2048 characters'),
      v.rawCheck(({ dataset, addIssue }) => {
        const problem = dataset.typed ? urlProblem(dataset.value) : null
        if (problem) addIssue({ message: problem })
      }),
    ),
    proxy_url: v.optional(
      v.pipe(
        v.string('must be a string'),
        v.check((text) => /^http:\/\/[^/@?#]+:\d{1,5}\/?$/.test(text) && proxyProblem(text) === null, 'must be http://host:port, without a user name, password or path'),
      ),
    ),
    signature_scheme: v.optional(v.picklist(signatureSchemes, `must be one of: ${signatureSchemes.join(', ')}`)),
    ...compatibleConfigEntries,
    // objectOf, not v.record: an array is refused rather than read as headers named 0, 1, …
    custom_headers: v.optional(
      objectOf(
        v.pipe(v.string('must be a string'), v.maxLength(8192, 'must be at most 8192 characters'), v.regex(headerValuePattern, 'is not a valid header value')),
        'must be an object of header names to strings',
        v.pipe(
          v.string(),
          v.regex(headerTokenPattern, 'is not a valid header name'),
          v.check((name) => !reservedHeaders.has(name.toLowerCase()), 'is set by Outflow and cannot be overridden'),
        ),
      ),
    ),
  },
  'unexpected field',
)

const CredentialsSchema = v.strictObject(
  {
    secret: v.optional(SecretSchema),
    previous_secret: v.optional(SecretSchema),
    previous_secret_invalid_at: v.optional(
      v.pipe(v.string('must be a string'), v.check((s) => rfc3339Pattern.test(s) && !Number.isNaN(Date.parse(s)), 'must be an RFC 3339 date-time')),
    ),
    rotate_secret: v.optional(v.boolean('must be a boolean')),
    ...authCredentialEntries,
    ...compatibleCredentialEntries,
  },
  'unexpected field',
)

type WebhookCredentials = v.InferOutput<typeof CredentialsSchema>

const configFields: FieldSpec[] = [
  {
    key: 'url',
    type: 'text',
    label: 'URL',
    description: 'The http:// or https:// endpoint that receives a POST for every event. Private and loopback addresses are refused unless the engine allows them.',
    required: true,
    sensitive: false,
    pattern: '^https?://.+',
    maxlength: 2048,
  },
  {
    key: 'signature_scheme',
    type: 'text',
    label: 'Signature scheme',
    description:
      'hmac (default): "v1," HMAC-SHA256 signatures with the signing secret. ed25519: "v1a," Ed25519 signatures with the engine\'s keys, published as a JWK Set at /signing-keys. both: the two side by side, while a receiver moves from one to the other.',
    required: false,
    sensitive: false,
    default: 'hmac',
    pattern: '^(hmac|ed25519|both)$',
  },
  ...compatibleConfigFields,
  {
    key: 'proxy_url',
    type: 'text',
    label: 'Egress proxy',
    description: 'Send this destination\'s deliveries through this HTTP CONNECT proxy (http://host:port) instead of the engine\'s, e.g. to reach the receiver from an address it allows.',
    required: false,
    sensitive: false,
    pattern: '^http://[^/@]+:[0-9]+/?$',
  },
  {
    key: 'custom_headers',
    type: 'key_value_map',
    label: 'Custom headers',
    description: 'Extra HTTP headers sent with every delivery, e.g. an Authorization token. The webhook-*, content-type, content-length, host and user-agent headers are set by Outflow.',
    required: false,
    sensitive: false,
  },
]

const credentialFields: FieldSpec[] = [
  {
    key: 'secret',
    type: 'text',
    label: 'Signing secret',
    description: 'Standard Webhooks signing secret ("whsec_" + base64). Generated when left empty.',
    required: false,
    sensitive: true,
    pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  },
  {
    key: 'previous_secret',
    type: 'text',
    label: 'Previous secret',
    description: 'The secret before the last rotation. Deliveries are also signed with it until previous_secret_invalid_at.',
    required: false,
    sensitive: true,
    pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  },
  {
    key: 'previous_secret_invalid_at',
    type: 'text',
    label: 'Previous secret valid until',
    description: 'RFC 3339 time after which the previous secret no longer signs deliveries. Defaults to 24 hours after a rotation.',
    required: false,
    sensitive: false,
  },
  {
    key: 'rotate_secret',
    type: 'checkbox',
    label: 'Rotate secret',
    description: 'On update: generate a new secret (or use the one given) and keep the current one as the previous secret for a grace period.',
    required: false,
    sensitive: false,
    default: false,
  },
  ...authCredentialFields,
  ...compatibleCredentialFields,
]

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" width="24" height="24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M18 16.98h-5.99c-1.1 0-1.95.94-2.48 1.9A4 4 0 0 1 2 17c.01-.7.2-1.4.57-2"/><path d="m6 17 3.13-5.78c.53-.97.1-2.18-.5-3.1a4 4 0 1 1 6.89-4.06"/><path d="m12 6 3.13 5.73C15.66 12.7 16.9 13 18 13a4 4 0 0 1 0 8"/></svg>'

const instructions = `## Receive events over HTTPS

Outflow sends an HTTP \`POST\` to your URL for every matching event. The body is the event's \`data\` as JSON.
Answer with any **2xx** status within the timeout (10 s by default) to acknowledge it; do slow work after answering.

| Header | Meaning |
| --- | --- |
| \`webhook-id\` | The event id. It stays the same on retries: use it to drop duplicates. |
| \`webhook-timestamp\` | Unix time (seconds) of this attempt. |
| \`webhook-signature\` | \`v1,<signature>\`, space-separated when several secrets are active. |
| \`x-outflow-<key>\` | Event metadata, e.g. \`x-outflow-topic\`, \`x-outflow-event-id\`. |

Any other status, a timeout or a network error is retried later with backoff. \`410 Gone\` disables the
destination. With \`429\` or \`503\`, a \`Retry-After\` header (seconds or HTTP date) sets when we try again.
Redirects are not followed: give the final URL.

## Verify the signature

Signatures follow [Standard Webhooks](https://www.standardwebhooks.com). Verify them against the **raw** body,
before parsing it, with an official library:

\`\`\`js
import { Webhook } from 'standardwebhooks'

const wh = new Webhook(process.env.WEBHOOK_SECRET) // "whsec_…", shown on the destination
app.post('/webhooks', express.raw({ type: 'application/json' }), (req, res) => {
  const event = wh.verify(req.body, req.headers) // throws when the signature or timestamp is wrong
  res.sendStatus(204)
})
\`\`\`

Or by hand: base64-decode the secret after \`whsec_\`, compute HMAC-SHA256 of
\`<webhook-id>.<webhook-timestamp>.<raw body>\`, base64-encode it and compare it in constant time with each
\`v1,\` entry of \`webhook-signature\`. Reject timestamps more than 5 minutes away from your clock.

## Ed25519 signatures

With the signature scheme \`ed25519\` (or \`both\`), \`webhook-signature\` carries \`v1a,<signature>\`: an Ed25519
signature of the same \`<webhook-id>.<webhook-timestamp>.<raw body>\`, checked with a public key from the
service's key set (\`GET /api/v1/signing-keys\`, a JWK Set; each key also as \`whpk_…\`). During a key rotation two
\`v1a\` signatures are sent: accept the delivery when any one verifies.

## Compatible signatures

Moving from another provider? Set \`compatible_signature\` to \`svix\`, \`github\`, \`stripe\` or \`outpost\` and its
headers are sent too (HMAC-SHA256 with \`compatible_signature_secret\`, your old secret, or else the signing secret),
so your receivers keep verifying with that provider's library; \`custom\` sends a header you describe by templates.

## Rotate the secret

Update the destination with \`credentials: { "rotate_secret": true }\`. A new secret is generated and the old
one keeps signing (a second signature) for 24 hours, or until \`previous_secret_invalid_at\`, so you can
deploy the new secret without dropping events.
`

function isoString(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toISOString()
  if (typeof value !== 'string') return undefined
  const time = Date.parse(value)
  return Number.isNaN(time) ? undefined : new Date(time).toISOString()
}

/** Generate a secret when absent; on `rotate_secret`, keep the old secret signing for a grace period. */
function prepareCredentials({ credentials, previous, now }: CredentialsInput): Record<string, unknown> {
  const { rotate_secret: rotate, ...input } = credentials as WebhookCredentials
  const stored: Record<string, unknown> = { ...input }
  const oldSecret = typeof previous?.secret === 'string' ? previous.secret : undefined
  const defaultInvalidAt = new Date(now.getTime() + ROTATION_GRACE_MS).toISOString()
  if (rotate === true && oldSecret !== undefined) {
    // After a merge patch the input still carries the stored values; only a changed value was given by the caller.
    const givenSecret = input.secret !== oldSecret ? input.secret : undefined
    const givenInvalidAt = isoString(input.previous_secret_invalid_at)
    const keptInvalidAt = isoString(previous?.previous_secret_invalid_at)
    stored.secret = givenSecret ?? generateWebhookSecret()
    stored.previous_secret = oldSecret
    stored.previous_secret_invalid_at = givenInvalidAt !== undefined && givenInvalidAt !== keptInvalidAt ? givenInvalidAt : defaultInvalidAt
    return stored
  }
  stored.secret ??= generateWebhookSecret()
  if (stored.previous_secret === undefined) delete stored.previous_secret_invalid_at
  else stored.previous_secret_invalid_at = isoString(stored.previous_secret_invalid_at) ?? defaultInvalidAt
  return stored
}

/** The `webhook` destination type: a signed HTTP POST per event (Standard Webhooks). */
export const webhook: DestinationTypeDefinition = {
  type: 'webhook',
  label: 'Webhook',
  description: 'Send events as signed HTTP POST requests (Standard Webhooks) to an endpoint you run.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  configRequired: true,
  credentialsRequired: false,
  revealedCredentials: ['secret', 'previous_secret'],
  prepareCredentials,
  validate: (config, credentials) => {
    const problems = { ...authProblems(credentials), ...compatibleProblems(config, credentials) }
    return Object.keys(problems).length ? problems : undefined
  },
  target(config) {
    try {
      return new URL(String(config.url)).host
    } catch {
      return undefined
    }
  },
  targetUrl(config) {
    return typeof config.url === 'string' ? config.url : undefined
  },
  createPublisher: (destination, context): Promise<Publisher> => createWebhookPublisher(destination, context),
}
