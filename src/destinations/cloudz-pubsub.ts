import type * as PubSubModule from '@google-cloud/pubsub'
import * as v from 'valibot'
import { OutflowError, type ErrorData } from '../errors.js'
import { hostChecker } from '../net/endpoint-guard.js'
import { untilAborted } from '../net/deadline.js'
import { loadPeer } from '../load-peer.js'
import { isConnectionFailure, transportErrorKind, transportKindInText } from '../net/transport-error.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import { failureOf, type FailureDescription } from './failure.js'
import { sendCalls, splitCalls, type CallLimits } from './batch-calls.js'
import { googleCredentialIssue, googleCredentialSecrets } from './google-credentials.js'
import { checkedHost, lazyConnection, sendBatchOver, sendOver } from './lazy-connection.js'
import { jsonBody, type DeliveryMessage, type DestinationTypeDefinition, type Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { parsedBy, parseStored } from './settings.js'

/** GCP project ids (6–30 characters), optionally domain-scoped (`example.com:my-project`). */
const projectIdPattern = /^([a-z][a-z0-9.-]*[a-z0-9]:)?[a-z][a-z0-9-]{4,28}[a-z0-9]$/
/** Pub/Sub topic ids: 3–255 characters, starting with a letter, not with `goog`. */
const topicPattern = /^(?!goog)[A-Za-z][A-Za-z0-9._~+%-]{2,254}$/
/** `host:port`, or an http(s) URL of a host with an optional port (the SDK takes no path). */
const endpointPattern = /^(https?:\/\/[A-Za-z0-9.-]+(:\d{1,5})?\/?|[A-Za-z0-9.-]+:\d{1,5})$/
const maxAttributes = 100

const ConfigSchema = v.strictObject(
  {
    project_id: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), v.regex(projectIdPattern, 'must be a Google Cloud project id such as my-project-123')),
    topic: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.regex(topicPattern, 'must be a topic id (not the full projects/…/topics/… name): 3–255 letters, digits or . _ ~ + % -, starting with a letter'),
    ),
    endpoint: v.optional(v.pipe(v.string('must be a string'), v.regex(endpointPattern, 'must be host:port or an http(s):// URL of a host, e.g. localhost:8085'))),
  },
  'unexpected field',
)

/** Parse the key JSON; an object or an error message. */
function parseKeyJson(text: string): Record<string, unknown> | string {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return 'must be a Google credential JSON (e.g. the key file of a service account)'
  }
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : 'must be a JSON object'
}

const CredentialsSchema = v.strictObject(
  {
    service_account_json: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.maxLength(32_768, 'must be at most 32768 characters'),
      parsedBy(parseKeyJson),
    ),
  },
  'unexpected field',
)

type PubsubConfig = v.InferOutput<typeof ConfigSchema>

/** The host of an `endpoint` (`host:port` or an http(s) URL of a host). */
function endpointHost(endpoint: string): string {
  return endpoint.replace(/^https?:\/\//, '').split(/[:/]/)[0] ?? ''
}

/** True when the endpoint is an emulator (not a *.googleapis.com host): plaintext, no auth, as the SDK decides. */
function isEmulatorEndpoint(endpoint: string | undefined): boolean {
  return endpoint ? !endpointHost(endpoint).endsWith('.googleapis.com') : false
}

/**
 * Cross-field rule the two schemas cannot check alone: without an emulator `endpoint`, a credential JSON that
 * google-auth-library accepts and Outflow allows (see google-credentials.ts); 422 data, or undefined. Loads the SDK.
 */
export async function pubsubDestinationIssues(config: Record<string, unknown>, credentials: Record<string, unknown>): Promise<ErrorData | undefined> {
  const endpoint = typeof config.endpoint === 'string' ? config.endpoint : undefined
  if (isEmulatorEndpoint(endpoint) || typeof credentials.service_account_json !== 'string') return undefined
  const key = parseKeyJson(credentials.service_account_json)
  const issue = typeof key === 'string' ? key : googleCredentialIssue(await loadSdk(), key, String(config.project_id))
  return issue ? { 'credentials.service_account_json': issue } : undefined
}

function loadSdk(): Promise<typeof PubSubModule> {
  return loadPeer<typeof PubSubModule>('@google-cloud/pubsub', 'cloudz_pubsub destinations')
}

const configFields: FieldSpec[] = [
  { key: 'project_id', type: 'text', label: 'Project ID', description: 'The Google Cloud project that owns the topic.', required: true, sensitive: false, pattern: projectIdPattern.source },
  {
    key: 'topic',
    type: 'text',
    label: 'Topic',
    description: 'The topic id (the last part of projects/<project>/topics/<topic>). It must already exist.',
    required: true,
    sensitive: false,
    minlength: 3,
    maxlength: 255,
    pattern: topicPattern.source,
  },
  {
    key: 'endpoint',
    type: 'text',
    label: 'Endpoint',
    description: 'Overrides the Pub/Sub endpoint: host:port of the Pub/Sub emulator (e.g. localhost:8085, no auth), or a regional *.googleapis.com endpoint.',
    required: false,
    sensitive: false,
    pattern: endpointPattern.source,
  },
]

const credentialFields: FieldSpec[] = [
  {
    key: 'service_account_json',
    type: 'text',
    label: 'Service account key (JSON)',
    description:
      'A Google credential JSON with the Pub/Sub Publisher role on the topic: the JSON key file of a service account, an authorized user, an impersonated service account, or a workload identity federation configuration (external_account) whose credential_source is an https URL. With an emulator endpoint any JSON object is accepted, e.g. {}.',
    required: true,
    sensitive: true,
    minlength: 2,
    maxlength: 32_768,
  },
]

const instructions = `## Deliver events to Google Cloud Pub/Sub

1. Create the **topic** in your project (Outflow does not create it).
2. Create a service account, grant it the **Pub/Sub Publisher** role (\`roles/pubsub.publisher\`)
   on the topic, and create a **JSON key** for it.
3. Enter the project ID, the topic id and paste the whole JSON key file.

Instead of a service-account key you may paste any credential JSON Google's client libraries accept: an
\`authorized_user\`, an \`impersonated_service_account\`, or a workload identity federation configuration
(\`external_account\`). Because Outflow runs it on shared servers, a configuration must not read from them:
\`credential_source\` must be an \`https://\` URL of a public host (not a file, a program, AWS or a certificate),
token and impersonation URLs must be on googleapis.com, and the universe googleapis.com.

For the Pub/Sub emulator set **endpoint** to its \`host:port\` (e.g. \`localhost:8085\`); the emulator
needs no credentials, so any JSON object (\`{}\`) is accepted as the key.

Each event is published as one message: the data is the event \`data\` as JSON, and the event
metadata (\`event-id\`, \`topic\`, \`timestamp\`, …) is sent as message attributes (attribute names
starting with \`goog\` are reserved by Google and skipped).`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><circle cx="12" cy="12" r="2.5"/><circle cx="5" cy="6" r="2"/><circle cx="19" cy="6" r="2"/><circle cx="12" cy="20" r="2"/><path d="M6.7 7.2l3.4 3M17.3 7.2l-3.4 3M12 14.5V18"/></svg>'

/** Metadata as Pub/Sub attributes: reserved (`goog…`) or oversized keys and values are skipped, at most 100 kept. */
function pubsubAttributes(metadata: Record<string, string>): Record<string, string> {
  const attributes: Record<string, string> = {}
  let count = 0
  for (const [name, value] of Object.entries(metadata)) {
    if (count === maxAttributes) break
    // Pub/Sub rejects the whole publish for one bad attribute, so a bad one is dropped instead.
    if (name === '' || /^goog/i.test(name) || Buffer.byteLength(name) > 256 || typeof value !== 'string' || Buffer.byteLength(value) > 1024) continue
    attributes[name] = value
    count++
  }
  return attributes
}

/** gRPC status code -> what went wrong. */
const grpcKinds: Record<number, ErrorKind> = {
  3: 'rejected', // INVALID_ARGUMENT
  4: 'timeout', // DEADLINE_EXCEEDED
  5: 'not_found', // NOT_FOUND
  7: 'authentication', // PERMISSION_DENIED
  8: 'throttled', // RESOURCE_EXHAUSTED
  9: 'rejected', // FAILED_PRECONDITION
  14: 'network', // UNAVAILABLE
  16: 'authentication', // UNAUTHENTICATED
}
const grpcNames = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS', 'UNAUTHENTICATED']

/** Map a gax/gRPC or Google auth error to an ErrorKind and the code to show. */
function classifyPubsubError(err: unknown): { kind: ErrorKind; code: string } {
  const e = (err ?? {}) as { code?: unknown; message?: unknown }
  const message = typeof e.message === 'string' ? e.message : ''
  // Key parsing and token exchange fail before the call; gRPC reports those as UNAVAILABLE ("Getting metadata from plugin failed").
  if (/Getting metadata from plugin failed|invalid_grant|invalid_client|unauthorized_client|DECODER routines|No key or keyFile set|Could not load the default credentials|does not contain a client_email/i.test(message)) {
    return { kind: 'authentication', code: typeof e.code === 'number' ? (grpcNames[e.code] ?? 'AUTH') : 'AUTH' }
  }
  if (typeof e.code === 'number') {
    const kind = grpcKinds[e.code] ?? 'unknown'
    // UNAVAILABLE carries the channel's last error in its text: a refused connect, a name that did not resolve, TLS.
    return { kind: kind === 'network' ? (transportKindInText(message) ?? kind) : kind, code: grpcNames[e.code] ?? String(e.code) }
  }
  const transport = transportErrorKind(err)
  if (transport) return { kind: transport, code: typeof e.code === 'string' ? e.code : 'ERROR' }
  return { kind: 'unknown', code: 'ERROR' }
}

/** A text such as `NOT_FOUND: 5 NOT_FOUND: Topic not found`. */
function describePubsubError(err: unknown, message: string): FailureDescription {
  const { kind, code } = classifyPubsubError(err)
  return { kind, error: message.startsWith(code) || /^\d+ [A-Z_]+:/.test(message) ? message : `${code}: ${message}` }
}

/** The PubSub client options: emulator mode (plaintext, no auth) or a service-account key; and the key to scrub from errors. */
function clientOptions(config: PubsubConfig, keyJson: string, userAgent: string): { options: PubSubModule.ClientConfig; secrets: string[] } {
  const options: PubSubModule.ClientConfig = { projectId: config.project_id }
  // gax hands `grpc.*` options to the channel (the typings do not list them): the user-agent names Outflow.
  Object.assign(options, { 'grpc.primary_user_agent': userAgent })
  if (config.endpoint) options.apiEndpoint = config.endpoint
  if (isEmulatorEndpoint(config.endpoint)) {
    options.emulatorMode = true
    // A fixed universe keeps google-auth from probing for default credentials (it would call the GCE metadata server).
    options.universeDomain = 'googleapis.com'
    return { options, secrets: [] }
  }
  // Checked by pubsubDestinationIssues before we get here: google-auth-library takes it as it is, whatever its type.
  const key = parseKeyJson(keyJson) as Record<string, unknown>
  options.credentials = key as PubSubModule.ClientConfig['credentials']
  return { options, secrets: googleCredentialSecrets(key) }
}

/** The endpoint with its host replaced by an IPv4 address (the SDK splits the endpoint at ":", so IPv6 cannot be pinned). */
function pinnedEndpoint(endpoint: string, address: string): string {
  return endpoint.replace(/^(https?:\/\/)?[A-Za-z0-9.-]+/, `$1${address}`)
}

/** The open client of a publisher, and whether it was pinned to a checked address. */
interface OpenTopic {
  client: PubSubModule.PubSub
  topic: PubSubModule.Topic
  /** The same topic for batches: the messages queued on it go in one Publish call when flushed. */
  batchTopic: PubSubModule.Topic
  pinned: boolean
}

/**
 * A client and its topic. `pin` (a checked IPv4 address of an emulator, which is plaintext) replaces the endpoint host,
 * so the SDK's own DNS (on every reconnect) cannot be rebound to a private address; a *.googleapis.com client keeps the
 * name, which its TLS certificate must match.
 */
function openTopic(sdk: typeof PubSubModule, options: PubSubModule.ClientConfig, config: PubsubConfig, pin: string | undefined): OpenTopic {
  const client = new sdk.PubSub({ ...options, ...(pin && config.endpoint ? { apiEndpoint: pinnedEndpoint(config.endpoint, pin) } : {}) })
  const topic = client.topic(config.topic, {
    // One message per Publish call, sent at once: each delivery is its own attempt.
    batching: { maxMessages: 1, maxMilliseconds: 0 },
    // The delivery pipeline owns retries; the SDK's own (up to 10 minutes) would hide failures.
    gaxOpts: { retry: null },
  })
  // Limits above what a call is given (see batchLimits): the SDK sends a call when it is flushed.
  const batchTopic = client.topic(config.topic, { batching: { maxMessages: 1000, maxBytes: 9 * 1024 ** 2, maxMilliseconds: 60_000 }, gaxOpts: { retry: null } })
  return { client, topic, batchTopic, pinned: pin !== undefined }
}

/** The messages of one Publish call: at most 1,000, and 8 MiB of data and attributes (the API takes 10 MB). */
const batchLimits: CallLimits = { entries: 1000, bytes: 8 * 1024 ** 2 }

/** Queue messages on the batch topic and flush them as one Publish call, acknowledged all or nothing. */
function publishCall({ batchTopic }: OpenTopic, messages: { data: Buffer; attributes: Record<string, string> }[], signal: AbortSignal, secrets: string[]): Promise<AttemptResult[]> {
  const ids = messages.map((message) => batchTopic.publishMessage(message))
  // Each message's own promise carries the call's outcome.
  batchTopic.flush().catch(() => {})
  const sent = (id: string): AttemptResult => ({ ok: true, response_status_code: null, response_body: JSON.stringify({ message_id: id }) })
  return Promise.all(ids.map((id) => untilAborted(id, signal).then(sent, (err: unknown) => failureOf(err, describePubsubError, { signal, secrets }))))
}

/** A batch in Publish calls one after the other, in order; an ordered destination's batch stops at a failed call. */
function publishAll(open: OpenTopic, messages: DeliveryMessage[], signal: AbortSignal, secrets: string[]): Promise<AttemptResult[]> {
  const options = messages.map((message) => ({ data: Buffer.from(jsonBody(message), 'utf8'), attributes: pubsubAttributes(message.metadata) }))
  const sizes = options.map(({ data, attributes }) => data.length + Object.entries(attributes).reduce((n, [k, value]) => n + Buffer.byteLength(k) + Buffer.byteLength(value), 0))
  const ordered = messages.some((m) => m.ordering_key !== undefined)
  return sendCalls(options, splitCalls(sizes, batchLimits), (part) => publishCall(open, part, signal, secrets), ordered)
}

/** Google Cloud Pub/Sub: one Publish per delivery (several per call for a batch), data = data JSON, attributes = metadata. */
export const cloudzPubsub: DestinationTypeDefinition = {
  type: 'cloudz_pubsub',
  validate: pubsubDestinationIssues,
  label: 'Google Cloud Pub/Sub',
  description: 'Publish events as messages to a Google Cloud Pub/Sub topic.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  configRequired: true,
  credentialsRequired: true,
  packages: ['@google-cloud/pubsub'],
  target: (config) => (typeof config.project_id === 'string' && typeof config.topic === 'string' ? `${config.project_id}/${config.topic}` : undefined),
  /** The Cloud Console page of the topic; none for an emulator. */
  targetUrl(config) {
    if (typeof config.project_id !== 'string' || typeof config.topic !== 'string') return undefined
    if (isEmulatorEndpoint(typeof config.endpoint === 'string' ? config.endpoint : undefined)) return undefined
    return `https://console.cloud.google.com/cloudpubsub/topic/detail/${encodeURIComponent(config.topic)}?project=${encodeURIComponent(config.project_id)}`
  },
  async createPublisher(destination, context): Promise<Publisher> {
    const config = parseStored('cloudz_pubsub', ConfigSchema, destination.config, 'config')
    const { service_account_json: keyJson } = parseStored('cloudz_pubsub', CredentialsSchema, destination.credentials, 'credentials')
    const sdk = await loadSdk()
    const issues = await pubsubDestinationIssues(config, { service_account_json: keyJson })
    if (issues) throw new OutflowError('validation', 'invalid cloudz_pubsub credentials', { data: issues })
    const { options, secrets } = clientOptions(config, keyJson, context.userAgent)
    const emulator = isEmulatorEndpoint(config.endpoint)
    // The endpoint host is tenant input (without one the SDK calls Google). IPv4 only for an emulator: its client is
    // pinned to one of them.
    const checkHost = hostChecker(config.endpoint === undefined ? undefined : endpointHost(config.endpoint), context, emulator ? 4 : 0)
    // Opened by the first publish (and again after a pinned client failed), with the addresses just checked.
    const connection = lazyConnection({ open: (_signal, pin: string | undefined) => openTopic(sdk, options, config, pin), close: (open: OpenTopic) => open.client.close() })

    return {
      async publish(message, { signal }) {
        const host = await checkedHost(connection, checkHost)
        if ('failure' in host) return host.failure
        const send = async ({ topic }: OpenTopic): Promise<AttemptResult> => {
          const data = Buffer.from(jsonBody(message), 'utf8')
          // The SDK takes no signal: the attempt stops waiting at its deadline, and the call's late outcome is ignored.
          const messageId = await untilAborted(topic.publishMessage({ data, attributes: pubsubAttributes(message.metadata) }), signal)
          return { ok: true, response_status_code: null, response_body: JSON.stringify({ message_id: messageId }) }
        }
        return sendOver(connection, emulator ? host.addresses?.[0]?.address : undefined, send, {
          signal,
          secrets,
          describe: describePubsubError,
          // A pinned client resolves again on the next publish: the emulator may have moved.
          drop: (result, current) => current.pinned && (isConnectionFailure(result.error_kind) || result.error_kind === 'timeout'),
        })
      },
      async publishBatch(messages, { signal }) {
        const host = await checkedHost(connection, checkHost)
        if ('failure' in host) return messages.map(() => host.failure)
        const pin = emulator ? host.addresses?.[0]?.address : undefined
        return sendBatchOver(connection, pin, messages.length, (open) => publishAll(open, messages, signal, secrets), {
          signal,
          secrets,
          describe: describePubsubError,
          drop: (result, current) => current.pinned && (isConnectionFailure(result.error_kind) || result.error_kind === 'timeout'),
        })
      },
      close: () => connection.close(),
    }
  },
}
