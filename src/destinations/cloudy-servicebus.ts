import type { LookupAddress } from 'node:dns'
import type * as ServiceBus from '@azure/service-bus'
import * as v from 'valibot'
import { hostChecker } from '../net/endpoint-guard.js'
import { loadPeer } from '../load-peer.js'
import { isConnectionFailure, transportErrorKind, transportKindInText } from '../net/transport-error.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import { failureOf, type FailureDescription } from './failure.js'
import { sendCalls } from './batch-calls.js'
import { checkedHost, lazyConnection, sendBatchOver, sendOver } from './lazy-connection.js'
import type { DeliveryMessage, DestinationTypeDefinition, Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { parsedBy, parseStored } from './settings.js'

/** Queue and topic names: letters, digits, `. - _ /` (nested paths), 1–260 characters, not starting or ending with a separator. */
const entityNamePattern = /^[A-Za-z0-9]([A-Za-z0-9._/-]{0,258}[A-Za-z0-9_])?$/
const endpointPattern = /^sb:\/\/([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?\/?$/
const knownKeys = new Set(['Endpoint', 'SharedAccessKeyName', 'SharedAccessKey', 'SharedAccessSignature', 'EntityPath', 'UseDevelopmentEmulator'])

/** The parts of a Service Bus connection string, by key. */
type ConnectionParts = Map<string, string>

/** Parse and check a connection string; returns an error message (never echoing a key) instead of throwing. */
function parseConnectionString(text: string): ConnectionParts | string {
  const parts: ConnectionParts = new Map()
  for (const raw of text.trim().split(';')) {
    const part = raw.trim()
    if (part === '') continue
    const eq = part.indexOf('=')
    if (eq <= 0) return 'must be a list of Key=Value pairs separated by ";"'
    const key = part.slice(0, eq).trim()
    if (!knownKeys.has(key)) return `unknown key "${key.slice(0, 40)}"; expected Endpoint, SharedAccessKeyName, SharedAccessKey (or SharedAccessSignature), EntityPath, UseDevelopmentEmulator`
    parts.set(key, part.slice(eq + 1).trim())
  }
  const endpoint = parts.get('Endpoint')
  if (!endpoint) return 'must contain Endpoint=sb://<namespace>.servicebus.windows.net/'
  if (!endpointPattern.test(endpoint)) return 'Endpoint must be sb://<host>[:port]/'
  const emulator = parts.get('UseDevelopmentEmulator')
  if (emulator !== undefined && emulator !== 'true' && emulator !== 'false') return 'UseDevelopmentEmulator must be true or false'
  const sas = parts.get('SharedAccessSignature')
  if (sas !== undefined) {
    if (parts.has('SharedAccessKey') || parts.has('SharedAccessKeyName')) return 'must not contain both SharedAccessSignature and SharedAccessKey'
    if (!sas.startsWith('SharedAccessSignature ')) return 'SharedAccessSignature must be a token starting with "SharedAccessSignature sr="'
    return parts
  }
  if (!parts.get('SharedAccessKeyName') || !parts.get('SharedAccessKey')) return 'must contain SharedAccessKeyName and SharedAccessKey'
  return parts
}

const ConfigSchema = v.strictObject(
  {
    name: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.maxLength(260, 'must be at most 260 characters'),
      v.regex(entityNamePattern, 'must be a queue or topic name: letters, digits, ".", "-", "_" and "/"'),
    ),
  },
  'unexpected field',
)

const CredentialsSchema = v.strictObject(
  {
    connection_string: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.maxLength(4096, 'must be at most 4096 characters'),
      parsedBy(parseConnectionString),
    ),
  },
  'unexpected field',
)

type ServiceBusConfig = v.InferOutput<typeof ConfigSchema>

const configFields: FieldSpec[] = [
  {
    key: 'name',
    type: 'text',
    label: 'Queue or topic',
    description: 'The name of the queue or topic that receives the events. It must already exist.',
    required: true,
    sensitive: false,
    minlength: 1,
    maxlength: 260,
    pattern: entityNamePattern.source,
  },
]

const credentialFields: FieldSpec[] = [
  {
    key: 'connection_string',
    type: 'text',
    label: 'Connection string',
    description:
      'A connection string of a shared access policy with the Send claim: Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=<policy>;SharedAccessKey=<key>. For the local emulator add UseDevelopmentEmulator=true.',
    required: true,
    sensitive: true,
    minlength: 1,
    maxlength: 4096,
  },
]

const instructions = `## Deliver events to Azure Service Bus

1. Create the **queue** or **topic** in your Service Bus namespace (Outflow does not create it).
2. Under *Shared access policies* of the queue/topic (or of the namespace), add a policy with the
   **Send** claim and copy its **primary connection string**:
   \`Endpoint=sb://<namespace>.servicebus.windows.net/;SharedAccessKeyName=<policy>;SharedAccessKey=<key>\`.
   A policy on the queue/topic itself adds \`EntityPath=<name>\`, which must match the name below.
3. Enter the queue or topic name and the connection string.

For the Service Bus emulator use its connection string, which ends with \`UseDevelopmentEmulator=true\`
(plain AMQP on port 5672, without TLS: use it only for local development).

Each event is sent as one message: the body is the event \`data\` as JSON
(\`content-type: application/json\`), \`messageId\` is the event id (so duplicate detection drops
redeliveries), \`subject\` is the topic, and the event metadata (\`event-id\`, \`topic\`,
\`timestamp\`, …) is sent as application properties.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><path d="M3 8l9-5 9 5v8l-9 5-9-5z"/><path d="M7 12h7M11 9l3 3-3 3"/></svg>'

const codeKinds: Record<string, ErrorKind> = {
  UnauthorizedAccess: 'authentication',
  MessagingEntityNotFound: 'not_found',
  MessagingEntityDisabled: 'configuration',
  ServiceBusy: 'throttled',
  QuotaExceeded: 'throttled',
  ServiceCommunicationProblem: 'network',
  ServiceTimeout: 'timeout',
  MessageSizeExceeded: 'rejected',
}

/** Which connection failure an error is (its codes, else its text); `network` when neither says more. */
function connectionKind(err: unknown, message: string): ErrorKind {
  return transportErrorKind(err) ?? transportKindInText(message) ?? 'network'
}

/** Map an SDK error to an ErrorKind and the code to show. */
function classifyServiceBusError(err: unknown): { kind: ErrorKind; code: string } {
  const e = (err ?? {}) as { name?: unknown; code?: unknown; message?: unknown }
  const code = typeof e.code === 'string' ? e.code : typeof e.name === 'string' ? e.name : 'Error'
  const message = typeof e.message === 'string' ? e.message : ''
  if (e.name === 'ServiceBusError') {
    const kind = codeKinds[code]
    // ServiceCommunicationProblem wraps the socket error: it says whether DNS, TLS or the connect failed.
    if (kind === 'network') return { kind: connectionKind(err, message), code }
    if (kind) return { kind, code }
    // A socket or TLS failure keeps its own code (e.g. DEPTH_ZERO_SELF_SIGNED_CERT) on a ServiceBusError.
    const transport = transportErrorKind(err)
    if (transport) return { kind: transport, code }
    // GeneralError carries the AMQP condition in its message.
    if (/unauthorized|InvalidSignature|ExpiredToken/i.test(message)) return { kind: 'authentication', code }
    if (/not-found|could not be found/i.test(message)) return { kind: 'not_found', code }
    return { kind: 'unknown', code }
  }
  if (e.name === 'AbortError' || e.name === 'TimeoutError' || e.name === 'OperationTimeoutError') return { kind: 'timeout', code: String(e.name) }
  if (transportErrorKind(err) || /ECONNREFUSED|ECONNRESET|ENOTFOUND|socket/i.test(message)) return { kind: connectionKind(err, message), code }
  // Thrown synchronously by the SDK for a connection string or name it cannot use (e.g. EntityPath mismatch).
  if (e.name === 'TypeError' || /connection string|EntityPath|queue or topic name/i.test(message)) return { kind: 'configuration', code }
  return { kind: 'unknown', code }
}

/** The whole connection string and the key or SAS token in it: none of them may be recorded. */
function connectionSecrets(connectionString: string): (string | undefined)[] {
  const parts = parseConnectionString(connectionString)
  return [connectionString, ...(typeof parts === 'string' ? [] : [parts.get('SharedAccessKey'), parts.get('SharedAccessSignature')])]
}

/** A short text such as `MessagingEntityNotFound: …`. */
function describeServiceBusError(err: unknown, message: string): FailureDescription {
  const { kind, code } = classifyServiceBusError(err)
  const error =
    isConnectionFailure(kind) ? `could not reach Service Bus: ${message}` : kind === 'timeout' ? `Service Bus did not answer in time: ${message}` : `${code}: ${message}`
  return { kind, error }
}

/** One client and one sender, opened by the first publish and kept for the next ones. */
interface Connection {
  client: ServiceBus.ServiceBusClient
  sender: ServiceBus.ServiceBusSender
}

/** Where a connection string points: the `Endpoint` host and port, and whether it is the plaintext emulator. */
interface Namespace {
  hostname: string
  port: number
  emulator: boolean
}

/** The namespace of a validated connection string. */
function namespaceOf(connectionString: string): Namespace {
  const parts = parseConnectionString(connectionString)
  if (typeof parts === 'string') throw new Error(`connection_string ${parts}`)
  const url = new URL(parts.get('Endpoint') ?? '')
  const emulator = parts.get('UseDevelopmentEmulator') === 'true'
  return { hostname: url.hostname, port: url.port ? Number(url.port) : emulator ? 5672 : 5671, emulator }
}

/** What a publisher opens its client with. */
interface SenderTarget {
  connectionString: string
  /** The queue or topic. */
  name: string
  namespace: Namespace
  userAgent: string
}

/**
 * A client and its sender. A plaintext emulator client is pinned to an address just `checked`, so the SDK's own DNS
 * (on every reconnect) cannot be rebound to a private one; a TLS client keeps the name, which its certificate must match.
 * Throws for a connection string the SDK refuses, which the publish that asked records as a failed attempt.
 */
function openSender(sdk: typeof ServiceBus, { connectionString, name, namespace, userAgent }: SenderTarget, checked: LookupAddress[] | undefined): Connection {
  const pinned = namespace.emulator ? checked?.[0]?.address : undefined
  const client = new sdk.ServiceBusClient(connectionString, {
    // The delivery pipeline owns retries; one try, bounded by the attempt's deadline (each send's abortSignal), fails fast.
    retryOptions: { maxRetries: 0 },
    userAgentOptions: { userAgentPrefix: userAgent },
    ...(pinned ? { customEndpointAddress: `sb://${pinned}:${namespace.port}` } : {}),
  })
  try {
    return { client, sender: client.createSender(name) }
  } catch (err) {
    void client.close().catch(() => {})
    throw err
  }
}

async function closeSender({ client, sender }: Connection): Promise<void> {
  await sender.close().catch(() => {})
  await client.close()
}

/** The Service Bus message of one delivery: the data as the JSON body, the metadata as application properties. */
function serviceBusMessage(message: DeliveryMessage): ServiceBus.ServiceBusMessage {
  return { body: message.data, contentType: 'application/json', messageId: message.id, subject: message.topic, applicationProperties: message.metadata }
}

/** The attempt of a message the service took. */
function sentResult(message: DeliveryMessage): AttemptResult {
  return { ok: true, response_status_code: null, response_body: JSON.stringify({ message_id: message.id }) }
}

/**
 * Fill message batches in order, as large as the link takes: a message that does not fit starts the next batch; one
 * too large for any batch is sent alone (`undefined`), so it fails as a single send would. Index ranges and batches.
 */
async function fillBatches(sender: ServiceBus.ServiceBusSender, messages: DeliveryMessage[], signal: AbortSignal) {
  const calls: [number, number][] = []
  const batches: (ServiceBus.ServiceBusMessageBatch | undefined)[] = []
  let batch: ServiceBus.ServiceBusMessageBatch | undefined
  for (let i = 0; i < messages.length; i++) {
    if (batch?.tryAddMessage(serviceBusMessage(messages[i]!))) {
      calls[calls.length - 1]![1] = i + 1
      continue
    }
    batch = await sender.createMessageBatch({ abortSignal: signal })
    const fits = batch.tryAddMessage(serviceBusMessage(messages[i]!))
    calls.push([i, i + 1])
    batches.push(fits ? batch : undefined)
    if (!fits) batch = undefined
  }
  return { calls, batches }
}

/** A batch in message batches sent one after the other, each accepted all or nothing; an ordered one stops at a failure. */
async function sendBatches(sender: ServiceBus.ServiceBusSender, messages: DeliveryMessage[], signal: AbortSignal, fail: (err: unknown) => AttemptResult): Promise<AttemptResult[]> {
  const { calls, batches } = await fillBatches(sender, messages, signal)
  const ordered = messages.some((m) => m.ordering_key !== undefined)
  return sendCalls(messages, calls, async (part, start) => {
    const batch = batches[calls.findIndex(([first]) => first === start)]
    try {
      await sender.sendMessages(batch ?? serviceBusMessage(part[0]!), { abortSignal: signal })
      return part.map(sentResult)
    } catch (err) {
      const result = fail(err)
      return part.map(() => result)
    }
  }, ordered)
}

/** A broken connection or link is rebuilt by the next attempt rather than trusted to recover. */
const dropAfter = (result: AttemptResult): boolean => result.error_kind !== 'rejected' && result.error_kind !== 'throttled'

/** Azure Service Bus: one message per delivery (message batches for a batch) to a queue or topic, application properties = metadata. */
export const cloudyServicebus: DestinationTypeDefinition = {
  type: 'cloudy_servicebus',
  label: 'Azure Service Bus',
  description: 'Send events as messages to an Azure Service Bus queue or topic.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  /** A Standard-tier namespace refuses a message over 256 KiB (Premium takes more: set `payload` to say so). */
  maxMessageBytes: 256 * 1024,
  configRequired: true,
  credentialsRequired: true,
  packages: ['@azure/service-bus'],
  target: (config) => (typeof config.name === 'string' ? config.name : undefined),
  async createPublisher(destination, context): Promise<Publisher> {
    const config: ServiceBusConfig = parseStored('cloudy_servicebus', ConfigSchema, destination.config, 'config')
    const { connection_string: connectionString } = parseStored('cloudy_servicebus', CredentialsSchema, destination.credentials, 'credentials')
    const sdk = await loadPeer<typeof ServiceBus>('@azure/service-bus', 'cloudy_servicebus destinations')
    const namespace = namespaceOf(connectionString)
    // The Endpoint host is tenant input. IPv4 only for the emulator: its client is pinned, and the SDK cannot be
    // pinned to an IPv6 address.
    const checkHost = hostChecker(namespace.hostname, context, namespace.emulator ? 4 : 0)
    const target: SenderTarget = { connectionString, name: config.name, namespace, userAgent: context.userAgent }
    const connection = lazyConnection({ open: (_signal, checked: LookupAddress[] | undefined) => openSender(sdk, target, checked), close: closeSender })
    const secrets = connectionSecrets(connectionString)

    return {
      async publish(message, { signal }) {
        const host = await checkedHost(connection, checkHost)
        if ('failure' in host) return host.failure
        const send = async ({ sender }: Connection): Promise<AttemptResult> => {
          await sender.sendMessages(serviceBusMessage(message), { abortSignal: signal })
          return sentResult(message)
        }
        return sendOver(connection, host.addresses, send, { signal, secrets, describe: describeServiceBusError, drop: dropAfter })
      },
      async publishBatch(messages, { signal }) {
        const host = await checkedHost(connection, checkHost)
        if ('failure' in host) return messages.map(() => host.failure)
        const fail = (err: unknown) => failureOf(err, describeServiceBusError, { signal, secrets })
        const send = ({ sender }: Connection) => sendBatches(sender, messages, signal, fail)
        return sendBatchOver(connection, host.addresses, messages.length, send, { signal, secrets, describe: describeServiceBusError, drop: dropAfter })
      },
      close: () => connection.close(),
    }
  },
}
