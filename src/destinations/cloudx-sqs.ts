import type * as Sqs from '@aws-sdk/client-sqs'
import * as v from 'valibot'
import { awsCredentialFields, awsCredentials, AwsCredentialsSchema, awsFallbackKind, awsRequestHandler } from './aws.js'
import { errorCodes, isConnectionFailure } from '../net/transport-error.js'
import { failureOf, type FailureDescription } from './failure.js'
import { awsBatchCall, sendCalls, splitCalls, type CallLimits } from './batch-calls.js'
import type { AttemptResult } from '../model/attempt-result.js'
import { privateHostError } from '../net/endpoint-guard.js'
import { loadPeer } from '../load-peer.js'
import type { ErrorKind } from '../model/attempt-result.js'
import { jsonBody, type DeliveryMessage, type DestinationTypeDefinition, type PublishOptions, type Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { parsedBy, parseStored } from './settings.js'

const queueNamePattern = /^[A-Za-z0-9_-]{1,80}(\.fifo)?$/
const regionPattern = /^[a-z]{2}(-[a-z]+)+-\d{1,2}$/
/** SQS message attribute names: letters, digits, `_ - .`; no leading/trailing or doubled dots; no `AWS.`/`Amazon.` prefix. */
const attributeNamePattern = /^(?!(aws|amazon)\.)(?!.*\.\.)[A-Za-z0-9_-]([A-Za-z0-9_.-]{0,254}[A-Za-z0-9_-])?$/i
/** Characters SQS accepts in bodies and attribute values (the XML 1.0 character set). */
const sqsTextPattern = /^[\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]*$/u
const maxAttributes = 10

/** Parse `queue_url`; returns an error message instead of throwing so the schema can report it. */
function parseQueueUrl(text: string): URL | string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return 'must be a URL such as https://sqs.us-east-1.amazonaws.com/123456789012/orders'
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an http:// or https:// URL'
  // config is returned unmasked: keys belong in the masked credentials.
  if (url.username || url.password) return 'must not contain a user name or password: put the keys in credentials'
  if (url.search || url.hash) return 'must not contain query parameters or a fragment'
  const name = url.pathname.split('/').at(-1) ?? ''
  if (!queueNamePattern.test(name)) return 'must end with the queue name (1–80 letters, digits, "-" or "_", optionally ".fifo")'
  return url
}

/** The region in an AWS queue host (`sqs.eu-west-1.amazonaws.com`, `eu-west-1.queue.amazonaws.com`, VPC endpoints), if any. */
export function regionFromQueueUrl(queueUrl: string): string | undefined {
  const parsed = parseQueueUrl(queueUrl)
  if (typeof parsed === 'string' || !/\.amazonaws\.com(\.cn)?$/.test(parsed.hostname)) return undefined
  return parsed.hostname.split('.').find((label) => regionPattern.test(label))
}

/** The queue name: the last path segment of the queue URL. */
function queueName(queueUrl: string): string {
  return new URL(queueUrl).pathname.split('/').at(-1) ?? queueUrl
}

function httpUrlCheck(message: string) {
  return v.check<string, string>((s) => {
    try {
      const u = new URL(s)
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password
    } catch {
      return false
    }
  }, message)
}

const ConfigSchema = v.strictObject(
  {
    queue_url: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), parsedBy(parseQueueUrl)),
    region: v.optional(v.pipe(v.string('must be a string'), v.regex(regionPattern, 'must be an AWS region such as us-east-1'))),
    endpoint: v.optional(v.pipe(v.string('must be a string'), httpUrlCheck('must be an http:// or https:// URL without credentials'))),
  },
  'unexpected field',
)

type SqsConfig = v.InferOutput<typeof ConfigSchema>

const configFields: FieldSpec[] = [
  {
    key: 'queue_url',
    type: 'text',
    label: 'Queue URL',
    description: 'The URL of the queue, as shown in the SQS console, e.g. https://sqs.us-east-1.amazonaws.com/123456789012/orders.',
    required: true,
    sensitive: false,
    pattern: '^https?://[^\\s?#@]+/[A-Za-z0-9_-]{1,80}(\\.fifo)?$',
  },
  {
    key: 'region',
    type: 'text',
    label: 'Region',
    description: 'The AWS region of the queue. By default it is read from the queue URL (sqs.<region>.amazonaws.com), else us-east-1.',
    required: false,
    sensitive: false,
    pattern: '^[a-z]{2}(-[a-z]+)+-\\d{1,2}$',
  },
  {
    key: 'endpoint',
    type: 'text',
    label: 'Endpoint',
    description: 'Overrides the SQS endpoint, e.g. http://localhost:4566 for LocalStack or ElasticMQ. Leave empty for AWS.',
    required: false,
    sensitive: false,
    pattern: '^https?://\\S+$',
  },
]

const instructions = `## Deliver events to an Amazon SQS queue

1. Create the queue (standard or FIFO) in the SQS console and copy its **URL**
   (\`https://sqs.<region>.amazonaws.com/<account>/<name>\`).
2. Create an IAM user (or role) whose policy allows \`sqs:SendMessage\` on that queue
   (and \`kms:GenerateDataKey\`/\`kms:Decrypt\` if the queue uses a customer-managed KMS key).
3. Enter the queue URL and the access key ID and secret access key. The region is read from the
   URL; set it only when the URL does not contain it.

Each event is sent as one message: the body is the event \`data\` as JSON, and the event metadata
(\`event-id\`, \`topic\`, \`timestamp\`, …) is sent as String message attributes. SQS allows 10
attributes per message; names it does not accept are skipped and the first 10 are kept.
A FIFO queue (\`.fifo\`) receives all events of the destination in one message group, deduplicated
by event id.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><path d="M4 7h16v10H4z"/><path d="M8 7v10M12 7v10M16 7v10"/><path d="M2 12h2M20 12h2"/></svg>'

/** Metadata as SQS String attributes: invalid names and values are skipped, the first 10 valid ones kept in order. */
function sqsAttributes(metadata: Record<string, string>): Record<string, Sqs.MessageAttributeValue> {
  const attributes: Record<string, Sqs.MessageAttributeValue> = {}
  let count = 0
  for (const [name, value] of Object.entries(metadata)) {
    if (count === maxAttributes) break
    // SQS rejects the whole message for one bad attribute, so a bad one is dropped instead.
    if (!attributeNamePattern.test(name) || typeof value !== 'string' || value === '' || !sqsTextPattern.test(value)) continue
    attributes[name] = { DataType: 'String', StringValue: value }
    count++
  }
  return attributes
}

const authCodes = new Set([
  'InvalidClientTokenId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'AccessDeniedException',
  'UnrecognizedClient',
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'IncompleteSignature',
  'MissingAuthenticationToken',
  'MissingAuthenticationTokenException',
  'ExpiredToken',
  'ExpiredTokenException',
  'InvalidSecurity',
  'KmsAccessDenied',
  'KMS.AccessDeniedException',
])
const notFoundCodes = new Set(['QueueDoesNotExist', 'AWS.SimpleQueueService.NonExistentQueue', 'NonExistentQueue', 'KmsNotFound', 'KMS.NotFoundException'])
const throttledCodes = new Set(['Throttling', 'ThrottlingException', 'RequestThrottled', 'KmsThrottled', 'KMS.ThrottlingException', 'OverLimit'])
const rejectedCodes = new Set([
  'InvalidMessageContents',
  'InvalidParameterValue',
  'InvalidAttributeName',
  'InvalidAttributeValue',
  'InvalidParameterCombination',
  'MissingParameter',
  'UnsupportedOperation',
  'AWS.SimpleQueueService.UnsupportedOperation',
  'KmsDisabled',
  'KmsInvalidState',
  'KmsInvalidKeyUsage',
  'KmsOptInRequired',
])

interface SdkError {
  name?: unknown
  code?: unknown
  Code?: unknown
  Error?: { Code?: unknown }
  message?: unknown
  $metadata?: { httpStatusCode?: number }
}

/** Map an SDK error (service error, socket error, timeout) to an ErrorKind and the code to show. */
function classifySqsError(err: unknown): { kind: ErrorKind; code: string } {
  const e = (err ?? {}) as SdkError
  const codes = [e.name, e.Error?.Code, e.Code, e.code].filter((c): c is string => typeof c === 'string' && c !== '')
  const status = e.$metadata?.httpStatusCode
  const message = typeof e.message === 'string' ? e.message : ''
  const code = codes.find((c) => c !== 'Error' && c !== 'SQSServiceException') ?? codes[0] ?? 'Error'
  const has = (set: Set<string>) => codes.some((c) => set.has(c))
  if (errorCodes(err).includes('ERR_OUTFLOW_SSRF')) return { kind: 'ssrf', code: 'ERR_OUTFLOW_SSRF' }
  if (has(authCodes) || status === 401 || status === 403) return { kind: 'authentication', code }
  if (has(notFoundCodes)) return { kind: 'not_found', code }
  if (has(throttledCodes) || status === 429) return { kind: 'throttled', code }
  if (has(rejectedCodes) || /too (long|large)|exceed/i.test(message) || status === 413) return { kind: 'rejected', code }
  if (codes.some((c) => c === 'TimeoutError' || c === 'AbortError' || c === 'ETIMEDOUT' || c === 'RequestTimeout')) return { kind: 'timeout', code }
  if (status === undefined && /socket hang up/i.test(message)) return { kind: 'network', code }
  return { kind: awsFallbackKind(err, status), code }
}

/** A short text such as `QueueDoesNotExist: The specified queue does not exist.`, with the service's answer when there was one. */
function describeSqsError(err: unknown, message: string): FailureDescription {
  const { kind, code } = classifySqsError(err)
  const status = (err as SdkError | null)?.$metadata?.httpStatusCode
  const error =
    kind === 'ssrf' ? message : isConnectionFailure(kind) ? `could not reach SQS: ${message}` : kind === 'timeout' ? `SQS did not answer in time: ${message}` : `${code}: ${message}`
  return { kind, error, status, body: status === undefined ? undefined : JSON.stringify({ code, message }) }
}

/** The SendMessage input for one delivery. */
function sendMessageInput(config: SqsConfig, message: DeliveryMessage): Sqs.SendMessageCommandInput {
  const input: Sqs.SendMessageCommandInput = {
    QueueUrl: config.queue_url,
    MessageBody: jsonBody(message),
    MessageAttributes: sqsAttributes(message.metadata),
  }
  if (queueName(config.queue_url).endsWith('.fifo')) {
    // FIFO queues require a group; one group per destination keeps its events in order, the event id deduplicates retries.
    input.MessageGroupId = message.destination_id
    input.MessageDeduplicationId = message.id
  }
  return input
}

/** SendMessageBatch takes at most 10 entries of 256 KiB together. */
const batchLimits: CallLimits = { entries: 10, bytes: 256 * 1024 }

/** The bytes SQS counts against its limits: the body and each attribute's name, type and value. */
function sqsSize(input: Sqs.SendMessageCommandInput): number {
  const attributes = Object.entries(input.MessageAttributes ?? {})
  return Buffer.byteLength(input.MessageBody ?? '') + attributes.reduce((n, [name, a]) => n + Buffer.byteLength(name) + Buffer.byteLength(a.DataType ?? '') + Buffer.byteLength(a.StringValue ?? ''), 0)
}

/** The receipt of a sent message, as a single SendMessage records it. */
function sentResult(status: number, messageId: string | undefined, sequenceNumber: string | undefined): AttemptResult {
  const body: Record<string, string> = { message_id: messageId ?? '' }
  if (sequenceNumber) body.sequence_number = sequenceNumber
  return { ok: true, response_status_code: status, response_body: JSON.stringify(body) }
}

/** A `Failed` entry of SendMessageBatch, classified as the same error of a single SendMessage would be. */
function entryFailure(entry: Sqs.BatchResultErrorEntry, status: number, secrets: (string | undefined)[]): AttemptResult {
  // The call itself succeeded: the entry's code, and whose fault it was, say what went wrong.
  const err = { name: entry.Code, message: entry.Message ?? entry.Code, $metadata: { httpStatusCode: entry.SenderFault ? 400 : 500 } }
  return { ...failureOf(err, describeSqsError, { signal: new AbortController().signal, secrets }), response_status_code: status }
}

/** What a SendMessageBatch call needs besides its entries. */
interface SqsBatchTarget {
  sdk: typeof Sqs
  client: Sqs.SQSClient
  queueUrl: string
  secrets: (string | undefined)[]
}

/** One SendMessageBatch call: one result per input, in order; a failure of the whole call is every entry's result. */
async function sendBatchCall({ sdk, client, queueUrl, secrets }: SqsBatchTarget, inputs: Sqs.SendMessageCommandInput[], signal: AbortSignal): Promise<AttemptResult[]> {
  const entries = inputs.map(({ QueueUrl: _url, ...entry }, i) => ({ ...entry, Id: `m${i}` }))
  return awsBatchCall(
    entries.length,
    () => client.send(new sdk.SendMessageBatchCommand({ QueueUrl: queueUrl, Entries: entries }), { abortSignal: signal }),
    (out, status) => {
      const sent = new Map((out.Successful ?? []).map((e) => [e.Id, e]))
      const failed = new Map((out.Failed ?? []).map((e) => [e.Id, e]))
      return entries.map(({ Id }) => {
        const ok = sent.get(Id)
        if (ok) return sentResult(status, ok.MessageId, ok.SequenceNumber)
        const refused = failed.get(Id)
        return refused ? entryFailure(refused, status, secrets) : { ok: false, error_kind: 'unknown', error: `SQS answered nothing for entry ${Id}`, response_status_code: status }
      })
    },
    (err) => failureOf(err, describeSqsError, { signal, secrets }),
  )
}

/** Several deliveries in SendMessageBatch calls of at most 10 entries and 256 KiB, in order (a FIFO queue stops at a failure). */
function publishSqsBatch(target: SqsBatchTarget, config: SqsConfig, messages: DeliveryMessage[], { signal }: PublishOptions): Promise<AttemptResult[]> {
  const inputs = messages.map((message) => sendMessageInput(config, message))
  const ordered = queueName(config.queue_url).endsWith('.fifo') || messages.some((m) => m.ordering_key !== undefined)
  return sendCalls(inputs, splitCalls(inputs.map(sqsSize), batchLimits), (part) => sendBatchCall(target, part, signal), ordered)
}

/** Amazon SQS: one SendMessage per delivery (SendMessageBatch for a batch), body = data JSON, attributes = metadata. */
export const cloudxSqs: DestinationTypeDefinition = {
  type: 'cloudx_sqs',
  label: 'Amazon SQS',
  description: 'Send events as messages to an Amazon SQS queue (standard or FIFO).',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: awsCredentialFields('to call sqs:SendMessage on the queue'),
  configSchema: ConfigSchema,
  credentialsSchema: AwsCredentialsSchema,
  /** SQS refuses a message (body and attributes) over 256 KiB. */
  maxMessageBytes: 256 * 1024,
  configRequired: true,
  credentialsRequired: true,
  packages: ['@aws-sdk/client-sqs'],
  target: (config) => (typeof config.queue_url === 'string' ? queueName(config.queue_url) : undefined),
  targetUrl: (config) => (typeof config.queue_url === 'string' ? config.queue_url : undefined),
  async createPublisher(destination, context): Promise<Publisher> {
    const config = parseStored('cloudx_sqs', ConfigSchema, destination.config, 'config')
    const credentials = parseStored('cloudx_sqs', AwsCredentialsSchema, destination.credentials, 'credentials')
    const sdk = await loadPeer<typeof Sqs>('@aws-sdk/client-sqs', 'cloudx_sqs destinations')
    // Always explicit: the queue URL's own host is where AWS wants the call, and AWS_ENDPOINT_URL* of the host must not redirect it.
    const endpoint = config.endpoint ?? new URL(config.queue_url).origin
    // Both hosts are tenant input. Names are checked at connect time by the request handler's lookup (on the addresses
    // the socket uses, so DNS rebinding cannot slip through); literals skip DNS, so they are judged here, once.
    const refused = privateHostError(new URL(endpoint).hostname, context) ?? privateHostError(new URL(config.queue_url).hostname, context)
    const client = new sdk.SQSClient({
      region: config.region ?? regionFromQueueUrl(config.queue_url) ?? 'us-east-1',
      endpoint,
      credentials: awsCredentials(credentials),
      // The delivery pipeline owns retries and their schedule.
      maxAttempts: 1,
      requestHandler: awsRequestHandler(endpoint, context),
      customUserAgent: context.userAgent,
    })
    let closed = false
    return {
      async publish(message, { signal }) {
        if (closed) return { ok: false, error_kind: 'unknown', error: 'the publisher is closed' }
        if (refused) return { ok: false, error_kind: 'ssrf', error: refused }
        try {
          const out = await client.send(new sdk.SendMessageCommand(sendMessageInput(config, message)), { abortSignal: signal })
          const body: Record<string, string> = { message_id: out.MessageId ?? '' }
          if (out.SequenceNumber) body.sequence_number = out.SequenceNumber
          return { ok: true, response_status_code: out.$metadata.httpStatusCode ?? 200, response_body: JSON.stringify(body) }
        } catch (err) {
          return failureOf(err, describeSqsError, { signal, secrets: [credentials.secret, credentials.session] })
        }
      },
      async publishBatch(messages, options) {
        if (closed) return messages.map(() => ({ ok: false, error_kind: 'unknown', error: 'the publisher is closed' }))
        if (refused) return messages.map(() => ({ ok: false, error_kind: 'ssrf', error: refused }))
        return publishSqsBatch({ sdk, client, queueUrl: config.queue_url, secrets: [credentials.secret, credentials.session] }, config, messages, options)
      },
      async close() {
        if (closed) return
        closed = true
        client.destroy()
      },
    }
  },
}
