import type * as EventBridge from '@aws-sdk/client-eventbridge'
import * as v from 'valibot'
import { awsCredentialFields, awsCredentials, AwsCredentialsSchema, AwsEndpointSchema, awsFallbackKind, awsRequestHandler } from './aws.js'
import { errorCodes, isConnectionFailure } from '../net/transport-error.js'
import { privateEndpointError } from '../net/endpoint-guard.js'
import { loadPeer } from '../load-peer.js'
import type { ErrorKind } from '../model/attempt-result.js'
import { failureOf, type FailureDescription } from './failure.js'
import type { AttemptResult } from '../model/attempt-result.js'
import type { DeliveryMessage, DestinationTypeDefinition, PublishOptions, Publisher } from './types.js'
import { awsBatchCall, sendCalls, sendPrepared, splitCalls, type CallLimits } from './batch-calls.js'
import type { FieldSpec } from '../model/destination-type.js'
import { parseStored } from './settings.js'

const busNamePattern = '^[A-Za-z0-9/_.-]{1,256}$'
const busArnPattern = /^arn:aws[a-z-]*:events:([a-z0-9-]+):\d{12}:event-bus\/[A-Za-z0-9/_.-]{1,256}$/
const regionPattern = '^[a-z]{2}(-[a-z]+)+-\\d{1,2}$'
/** EventBridge refuses sources starting with `aws.` (AWS services' own events). */
const sourcePattern = '^(?!aws\\.)[A-Za-z0-9._/-]{1,256}$'
/** EventBridge's limit on one entry: the detail, detail type, source and the rest together. */
const maxEntryBytes = 256 * 1024

const ConfigSchema = v.strictObject(
  {
    event_bus: v.pipe(
      v.string('must be a string'),
      v.check((bus) => busArnPattern.test(bus) || new RegExp(busNamePattern).test(bus), 'must be an event bus name (1–256 letters, digits, "/", "_", ".", "-") or an event bus ARN'),
    ),
    region: v.optional(v.pipe(v.string('must be a string'), v.regex(new RegExp(regionPattern), 'must be an AWS region such as us-east-1'))),
    endpoint: v.optional(AwsEndpointSchema),
    source: v.pipe(v.string('must be a string'), v.regex(new RegExp(sourcePattern), 'must be 1–256 letters, digits, ".", "_", "/" or "-", not starting with "aws."')),
  },
  'unexpected field',
)

type EventBridgeConfig = v.InferOutput<typeof ConfigSchema>

const configFields: FieldSpec[] = [
  {
    key: 'event_bus',
    type: 'text',
    label: 'Event bus',
    description: 'The name of the event bus (default, or a custom bus) or its ARN, e.g. arn:aws:events:us-east-1:123456789012:event-bus/orders.',
    required: true,
    sensitive: false,
    minlength: 1,
  },
  { key: 'region', type: 'text', label: 'Region', description: 'The region of the bus. Default: the one in the ARN, else us-east-1.', required: false, sensitive: false, pattern: regionPattern },
  { key: 'endpoint', type: 'text', label: 'Endpoint', description: 'The URL of an EventBridge-compatible service or emulator. Leave empty for AWS.', required: false, sensitive: false, pattern: '^https?://.+' },
  {
    key: 'source',
    type: 'text',
    label: 'Source',
    description: 'The source of every event on the bus, e.g. com.example.orders (rules match on it). It must not start with "aws.".',
    required: true,
    sensitive: false,
    pattern: sourcePattern,
    minlength: 1,
    maxlength: 256,
  },
]

const instructions = `## Deliver events to an Amazon EventBridge event bus

1. Pick the **event bus** (\`default\` or a custom bus) and note its name or ARN and its region.
2. Create an IAM user or role whose policy allows \`events:PutEvents\` on the bus, and an access key for it.
   Temporary credentials also need the **session token**.
3. Enter the bus, the **source** your rules will match on (e.g. \`com.example.orders\`), and the credentials.

Each event becomes one PutEvents entry: \`Source\` is the destination's source, \`DetailType\` the event topic,
\`Time\` the event time, and \`Detail\` the JSON document \`{ "metadata": { … }, "data": … }\` (the event metadata —
\`event-id\`, \`topic\`, \`timestamp\`, … — and the event \`data\`). An attempt succeeds once EventBridge accepts the
entry; an entry it fails (\`FailedEntryCount\` > 0, e.g. \`ThrottlingException\` or \`InternalFailure\`) is a failed
attempt, retried on the destination's schedule. Entries are limited to 256 KB.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><rect x="9" y="9" width="6" height="6" rx="1"/><path d="M3 6h3M3 12h6M3 18h3M15 12h6M18 6h3M18 18h3M6 6l3 4M6 18l3-4M18 6l-3 4M18 18l-3-4"/></svg>'

const authenticationErrors = new Set([
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'AccessDeniedException',
  'NotAuthorizedForSourceException',
  'ExpiredTokenException',
  'IncompleteSignature',
  'MissingAuthenticationTokenException',
  'KMSAccessDeniedException',
])
const notFoundErrors = new Set(['ResourceNotFoundException'])
const throttledErrors = new Set(['ThrottlingException', 'LimitExceededException'])
const unavailableErrors = new Set(['InternalFailure', 'InternalException', 'ServiceUnavailable'])
const rejectedErrors = new Set(['ValidationException', 'InvalidArgument', 'MalformedDetail', 'InvalidEventPatternException', 'SerializationException'])

/** The kind of an error code, from a thrown service error or a failed entry. */
function kindOfCode(code: string): ErrorKind | undefined {
  if (authenticationErrors.has(code)) return 'authentication'
  if (notFoundErrors.has(code)) return 'not_found'
  if (throttledErrors.has(code)) return 'throttled'
  if (unavailableErrors.has(code)) return 'unavailable'
  if (rejectedErrors.has(code)) return 'rejected'
  return undefined
}

function describeEventBridgeError(err: unknown, message: string): FailureDescription {
  const e = err as { name?: string; $metadata?: { httpStatusCode?: number } }
  const name = e?.name ?? 'Error'
  const status = e?.$metadata?.httpStatusCode
  let kind: ErrorKind
  if (errorCodes(err).includes('ERR_OUTFLOW_SSRF')) kind = 'ssrf'
  else if (kindOfCode(name)) kind = kindOfCode(name)!
  else if (status === 401 || status === 403) kind = 'authentication'
  else if (status === 429) kind = 'throttled'
  else if (name === 'TimeoutError' || name === 'AbortError') kind = 'timeout'
  else kind = awsFallbackKind(err, status)
  const error = isConnectionFailure(kind) ? `could not reach EventBridge: ${message}` : `${name === 'Error' ? '' : `${name}: `}${message}`
  return { kind, error, status, body: status === undefined ? undefined : JSON.stringify({ code: name, message }) }
}

/** A failed attempt of an entry EventBridge did not take (the call itself answered 200). */
function failedEntry(entry: EventBridge.PutEventsResultEntry | undefined, status: number): AttemptResult {
  const code = entry?.ErrorCode ?? 'UnknownError'
  const message = entry?.ErrorMessage ?? 'the entry was not accepted'
  return {
    ok: false,
    error_kind: kindOfCode(code) ?? 'unknown',
    error: `EventBridge failed the entry: ${code}: ${message}`,
    response_status_code: status,
    response_body: JSON.stringify({ failed_entry_count: 1, error_code: code, error_message: message }),
  }
}

/** The PutEvents entry of one delivery: the topic as detail type, `{ metadata, data }` as detail. */
function putEventsEntry(config: EventBridgeConfig, message: DeliveryMessage): EventBridge.PutEventsRequestEntry {
  return {
    EventBusName: config.event_bus,
    Source: config.source,
    DetailType: message.topic,
    Time: message.time,
    Detail: JSON.stringify({ metadata: message.metadata, data: message.data ?? null }),
  }
}

/** The bytes EventBridge counts for an entry (its Time counts 14). */
function entrySize(entry: EventBridge.PutEventsRequestEntry): number {
  return Buffer.byteLength(entry.Detail!) + Buffer.byteLength(entry.DetailType!) + Buffer.byteLength(entry.Source!) + 14
}

/** PutEvents takes at most 10 entries of 256 KiB together. */
const batchLimits: CallLimits = { entries: 10, bytes: maxEntryBytes }

/** What a PutEvents call needs besides its entries. */
interface EventBridgeTarget {
  sdk: typeof EventBridge
  client: EventBridge.EventBridgeClient
  config: EventBridgeConfig
  secrets: (string | undefined)[]
}

/** One PutEvents call: one result per entry, in order; a failure of the whole call is every entry's result. */
async function putEvents({ sdk, client, config, secrets }: EventBridgeTarget, entries: EventBridge.PutEventsRequestEntry[], signal: AbortSignal): Promise<AttemptResult[]> {
  return awsBatchCall(
    entries.length,
    () => client.send(new sdk.PutEventsCommand({ Entries: entries }), { abortSignal: signal }),
    // PutEvents answers 200 even when it took none of the entries: each carries its own error code.
    (output, status) =>
      entries.map((_, i) => {
        const result = output.Entries?.[i]
        if (!result?.EventId || result.ErrorCode) return failedEntry(result, status)
        return { ok: true, response_status_code: status, response_body: JSON.stringify({ event_id: result.EventId, event_bus: config.event_bus }) }
      }),
    (err) => failureOf(err, describeEventBridgeError, { signal, secrets }),
  )
}

/** The region to sign for: configured, else the bus ARN's, else us-east-1. */
function regionOf(config: EventBridgeConfig): string {
  return config.region ?? busArnPattern.exec(config.event_bus)?.[1] ?? 'us-east-1'
}

/** Amazon EventBridge: one PutEvents entry per delivery, detail `{ metadata, data }`, failed entries are failed attempts. */
export const awsEventbridge: DestinationTypeDefinition = {
  type: 'aws_eventbridge',
  label: 'Amazon EventBridge',
  description: 'Put each event on an Amazon EventBridge event bus, with the topic as its detail type.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: awsCredentialFields('to call events:PutEvents on the event bus'),
  configSchema: ConfigSchema,
  credentialsSchema: AwsCredentialsSchema,
  maxMessageBytes: maxEntryBytes,
  configRequired: true,
  credentialsRequired: true,
  packages: ['@aws-sdk/client-eventbridge'],

  target(config) {
    return typeof config.event_bus === 'string' ? (config.event_bus.split('/').at(-1) ?? config.event_bus) : undefined
  },

  targetUrl(config) {
    const parsed = v.safeParse(ConfigSchema, config)
    if (!parsed.success) return undefined
    if (parsed.output.endpoint) return parsed.output.endpoint
    const region = encodeURIComponent(regionOf(parsed.output))
    const name = encodeURIComponent(parsed.output.event_bus.split('event-bus/').at(-1)!)
    return `https://${region}.console.aws.amazon.com/events/home?region=${region}#/eventbus/${name}`
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config = parseStored('aws_eventbridge', ConfigSchema, destination.config, 'config')
    const credentials = parseStored('aws_eventbridge', AwsCredentialsSchema, destination.credentials, 'credentials')
    const sdk = await loadPeer<typeof EventBridge>('@aws-sdk/client-eventbridge', 'aws_eventbridge destinations')
    const refused = privateEndpointError(config.endpoint, context)
    const client = new sdk.EventBridgeClient({
      region: regionOf(config),
      credentials: awsCredentials(credentials),
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      // The delivery pipeline owns retries and their schedule.
      maxAttempts: 1,
      requestHandler: awsRequestHandler(config.endpoint, context),
      customUserAgent: context.userAgent,
    })
    let closed = false
    const secrets = [credentials.secret, credentials.session]
    const target: EventBridgeTarget = { sdk, client, config, secrets }
    /** Every delivery, one or a batch: PutEvents calls of at most 10 entries and 256 KiB, each entry its own result. */
    const publishBatch = async (messages: DeliveryMessage[], { signal }: PublishOptions): Promise<AttemptResult[]> => {
      if (closed) return messages.map(() => ({ ok: false, error_kind: 'configuration', error: 'the publisher is closed' }))
      if (refused) return messages.map(() => ({ ok: false, error_kind: 'ssrf', error: refused }))
      const early = new Map<number, AttemptResult>()
      const sent: number[] = []
      const entries: EventBridge.PutEventsRequestEntry[] = []
      messages.forEach((message, i) => {
        const entry = putEventsEntry(config, message)
        const size = entrySize(entry)
        if (size > maxEntryBytes) early.set(i, { ok: false, error_kind: 'rejected', error: `the entry is ${size} bytes; EventBridge takes at most ${maxEntryBytes}` })
        else (sent.push(i), entries.push(entry))
      })
      const ordered = messages.some((m) => m.ordering_key !== undefined)
      return sendPrepared({ count: messages.length, early, sent, entries }, ordered, (part) =>
        sendCalls(part, splitCalls(part.map(entrySize), batchLimits), (call) => putEvents(target, call, signal), ordered),
      )
    }

    return {
      async publish(message, { signal }) {
        const [result] = await publishBatch([message], { signal })
        return result!
      },

      publishBatch,

      async close() {
        if (closed) return
        closed = true
        client.destroy()
      },
    }
  },
}
