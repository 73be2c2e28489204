import type * as Kinesis from '@aws-sdk/client-kinesis'
import type * as SmithyHttp from '@smithy/node-http-handler'
import * as v from 'valibot'
import { awsCredentialFields, awsCredentials, AwsCredentialsSchema, AwsEndpointSchema, awsRegionField, AwsRegionSchema, awsFallbackKind, awsRequestHandler } from './aws.js'
import { privateEndpointError } from '../net/endpoint-guard.js'
import { loadPeer } from '../load-peer.js'
import { renderForAttempt, renderTemplate, TemplateSchema, templateSubject } from './templates.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import { errorCodes } from '../net/transport-error.js'
import { failureOf, type DescribeError, type FailureDescription } from './failure.js'
import { awsBatchCall, sendCalls, sendPrepared, splitCalls, type CallLimits } from './batch-calls.js'
import type { DeliveryMessage, DestinationTypeDefinition, PublishOptions, Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'

/** Kinesis limits a partition key to 256 Unicode characters. */
const MAX_PARTITION_KEY_CHARS = 256

const streamPattern = '^[a-zA-Z0-9_.-]{1,128}$'

const ConfigSchema = v.strictObject(
  {
    stream_name: v.pipe(v.string('must be a string'), v.regex(new RegExp(streamPattern), 'must be 1–128 letters, digits, "_", "." or "-"')),
    region: AwsRegionSchema,
    endpoint: v.optional(AwsEndpointSchema),
    partition_key_template: v.optional(TemplateSchema),
  },
  'unexpected field',
)

type KinesisConfig = v.InferOutput<typeof ConfigSchema>

const configFields: FieldSpec[] = [
  { key: 'stream_name', type: 'text', label: 'Stream name', description: 'The name of an existing data stream.', required: true, sensitive: false, pattern: streamPattern, minlength: 1, maxlength: 128 },
  awsRegionField('the stream'),
  {
    key: 'endpoint',
    type: 'text',
    label: 'Endpoint',
    description: 'The URL of a Kinesis-compatible service or emulator. Leave empty for AWS.',
    required: false,
    sensitive: false,
    pattern: '^https?://.+',
  },
  {
    key: 'partition_key_template',
    type: 'text',
    label: 'Partition key template',
    description:
      'A JMESPath expression over { id, topic, time, metadata, data } giving the partition key of each record, e.g. data.customer_id (records with one key keep their order). Default: the event id.',
    required: false,
    sensitive: false,
  },
]

const instructions = `## Deliver events to an Amazon Kinesis data stream

1. Create the data stream (or pick an existing one) and note its **region**.
2. Create an IAM user or role whose policy allows \`kinesis:PutRecord\` (and \`kinesis:PutRecords\`, for a
   destination with a \`batch\` policy) on the stream, and an access
   key for it. Temporary credentials also need the **session token**. Encrypted streams also need
   \`kms:GenerateDataKey\` on their key.
3. Enter the stream name, region and credentials. For a Kinesis-compatible service, also enter its
   **endpoint** URL.
4. Optionally set a **partition key template**: a JMESPath expression over
   \`{ id, topic, time, metadata, data }\` such as \`data.customer_id\`. Records with the same key go to
   the same shard, in order. By default the event id is used, which spreads records evenly.

Each event becomes one record whose data is the UTF-8 JSON document \`{ "metadata": { … }, "data": … }\`:
the event metadata (\`event-id\`, \`topic\`, \`timestamp\`, …) and the event \`data\`.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round"><path d="M3 7c3 0 3-2 6-2s3 2 6 2 3-2 6-2"/><path d="M3 12c3 0 3-2 6-2s3 2 6 2 3-2 6-2"/><path d="M3 17c3 0 3-2 6-2s3 2 6 2 3-2 6-2"/></svg>'

const authenticationErrors = [
  'UnrecognizedClientException',
  'InvalidSignatureException',
  'AccessDeniedException',
  'ExpiredTokenException',
  'IncompleteSignatureException',
  'MissingAuthenticationTokenException',
  'KMSAccessDeniedException',
]
const notFoundErrors = ['ResourceNotFoundException', 'KMSNotFoundException']
const throttledErrors = ['ProvisionedThroughputExceededException', 'LimitExceededException', 'ThrottlingException', 'KMSThrottlingException']

/** Map an SDK error to what went wrong. Kinesis answers 400 for most faults, so the error name decides first. */
function describeKinesisError(err: unknown, message: string, stream: string): FailureDescription {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }
  const name = e?.name ?? 'Error'
  const status = e?.$metadata?.httpStatusCode
  const codes = errorCodes(err)
  let kind: ErrorKind
  if (codes.includes('ERR_OUTFLOW_SSRF')) kind = 'ssrf'
  else if (authenticationErrors.includes(name) || status === 401 || status === 403) kind = 'authentication'
  else if (notFoundErrors.includes(name) || status === 404) kind = 'not_found'
  else if (throttledErrors.includes(name) || status === 429) kind = 'throttled'
  else if (name === 'TimeoutError' || name === 'AbortError' || codes.some((c) => c === 'ETIMEDOUT' || c === 'ECONNABORTED')) kind = 'timeout'
  else kind = awsFallbackKind(err, status)
  const text = e?.message && e.message !== 'UnknownError' ? message : `HTTP ${status ?? 'error'}`
  const detail = kind === 'not_found' && name === 'ResourceNotFoundException' && !text.includes(stream) ? ` (stream ${stream})` : ''
  return { kind, status, error: `${name === 'Error' ? '' : `${name}: `}${text}${detail}` }
}

/** The PutRecord(s) fields of one delivery, or the failed attempt of a partition key that cannot be made. */
function kinesisRecord(config: KinesisConfig, message: DeliveryMessage): { PartitionKey: string; Data: Buffer } | AttemptResult {
  const template = config.partition_key_template
  const partitionKey = renderForAttempt('partition_key_template', () => (template ? renderTemplate(template, templateSubject(message)) : message.id))
  if (typeof partitionKey !== 'string') return partitionKey
  if ([...partitionKey].length > MAX_PARTITION_KEY_CHARS) {
    return { ok: false, error_kind: 'configuration', error: `the partition key is longer than ${MAX_PARTITION_KEY_CHARS} characters` }
  }
  return { PartitionKey: partitionKey, Data: Buffer.from(JSON.stringify({ metadata: message.metadata, data: message.data ?? null }), 'utf8') }
}

/** The receipt of a written record. */
function recordResult(stream: string, partitionKey: string, status: number, out: { ShardId?: string; SequenceNumber?: string }): AttemptResult {
  const receipt = { stream, partition_key: partitionKey, shard_id: out.ShardId ?? null, sequence_number: out.SequenceNumber ?? null }
  return { ok: true, response_status_code: status, response_body: JSON.stringify(receipt) }
}

/** What a PutRecords call needs besides its records. */
interface KinesisTarget {
  sdk: typeof Kinesis
  client: Kinesis.KinesisClient
  config: KinesisConfig
  describe: DescribeError
  secrets: (string | undefined)[]
}

/** PutRecords takes at most 500 records of 5 MiB together, each of at most 1 MiB (data and partition key). */
const batchLimits: CallLimits = { entries: 500, bytes: 5 * 1024 * 1024, entryBytes: 1024 * 1024 }

/** A record PutRecords refused (its `ErrorCode`), classified as the same error of a PutRecord would be. */
function recordFailure(target: KinesisTarget, entry: Kinesis.PutRecordsResultEntry, status: number): AttemptResult {
  const err = { name: entry.ErrorCode, message: entry.ErrorMessage ?? entry.ErrorCode, $metadata: { httpStatusCode: status } }
  const result = failureOf(err, target.describe, { signal: new AbortController().signal, secrets: target.secrets })
  // The service failing on its side for this record: worth a retry, like an EventBridge InternalFailure entry.
  return { ...result, ...(entry.ErrorCode === 'InternalFailure' ? { error_kind: 'unavailable' } : {}), response_status_code: status }
}

/** One PutRecords call: one result per record, in order; a failure of the whole call is every record's result. */
async function putRecords(target: KinesisTarget, records: { PartitionKey: string; Data: Buffer }[], signal: AbortSignal): Promise<AttemptResult[]> {
  const { sdk, client, config } = target
  return awsBatchCall(
    records.length,
    () => client.send(new sdk.PutRecordsCommand({ StreamName: config.stream_name, Records: records }), { abortSignal: signal }),
    (out, status) =>
      records.map((record, i) => {
        const entry = out.Records?.[i]
        if (!entry) return { ok: false, error_kind: 'unknown', error: `Kinesis answered nothing for record ${i}`, response_status_code: status }
        return entry.ErrorCode ? recordFailure(target, entry, status) : recordResult(config.stream_name, record.PartitionKey, status, entry)
      }),
    (err) => failureOf(err, target.describe, { signal, secrets: target.secrets }),
  )
}

/** Several deliveries in PutRecords calls of at most 500 records and 5 MiB; a message without a partition key fails alone. */
async function publishKinesisBatch(target: KinesisTarget, messages: DeliveryMessage[], { signal }: PublishOptions): Promise<AttemptResult[]> {
  const early = new Map<number, AttemptResult>()
  const sent: number[] = []
  const records: { PartitionKey: string; Data: Buffer }[] = []
  messages.forEach((message, i) => {
    const record = kinesisRecord(target.config, message)
    if ('PartitionKey' in record) (sent.push(i), records.push(record))
    else early.set(i, record)
  })
  return sendPrepared({ count: messages.length, early, sent, entries: records }, false, (part) =>
    sendCalls(part, splitCalls(part.map((r) => r.Data.length + Buffer.byteLength(r.PartitionKey)), batchLimits), (call) => putRecords(target, call, signal), false),
  )
}

/** Kinesis data streams: one record per event, via PutRecord (PutRecords for a batch). */
export const cloudxKinesis: DestinationTypeDefinition = {
  type: 'cloudx_kinesis',
  label: 'Amazon Kinesis',
  description: 'Put each event as a record on an Amazon Kinesis data stream.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: awsCredentialFields('kinesis:PutRecord (and kinesis:PutRecords for batches) on the stream'),
  configSchema: ConfigSchema,
  credentialsSchema: AwsCredentialsSchema,
  /** Kinesis refuses a record (data and partition key) over 1 MiB. */
  maxMessageBytes: 1024 * 1024,
  configRequired: true,
  credentialsRequired: true,
  packages: ['@aws-sdk/client-kinesis'],

  target(config) {
    return typeof config.stream_name === 'string' ? config.stream_name : undefined
  },

  targetUrl(config) {
    const { stream_name: stream, region, endpoint } = config as Partial<KinesisConfig>
    if (!stream) return undefined
    if (endpoint) return endpoint
    const r = encodeURIComponent(region ?? 'us-east-1')
    return `https://${r}.console.aws.amazon.com/kinesis/home?region=${r}#/streams/details/${encodeURIComponent(stream)}/monitoring`
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config: KinesisConfig = v.parse(ConfigSchema, destination.config)
    const credentials = v.parse(AwsCredentialsSchema, destination.credentials)
    const sdk = await loadPeer<typeof Kinesis>('@aws-sdk/client-kinesis', 'cloudx_kinesis destinations')
    const refused = privateEndpointError(config.endpoint, context)
    // The Kinesis client speaks HTTP/2 by default, which AWS serves but emulators and compatible services
    // mostly do not; custom endpoints get the SDK's HTTP/1.1 handler (with the private-network guard).
    const requestHandler = config.endpoint
      ? new (await loadPeer<typeof SmithyHttp>('@smithy/node-http-handler', 'cloudx_kinesis destinations')).NodeHttpHandler(awsRequestHandler(config.endpoint, context))
      : { disableConcurrentStreams: true }
    const client = new sdk.KinesisClient({
      region: config.region,
      credentials: awsCredentials(credentials),
      ...(config.endpoint ? { endpoint: config.endpoint } : {}),
      // The engine owns the retry schedule; SDK retries would only stretch one attempt past its timeout.
      maxAttempts: 1,
      requestHandler,
    })

    const describe = (err: unknown, message: string) => describeKinesisError(err, message, config.stream_name)

    const secrets = [credentials.secret, credentials.session]
    const target: KinesisTarget = { sdk, client, config, describe, secrets }

    const publisher: Publisher = {
      async publish(message, { signal }) {
        if (refused) return { ok: false, error_kind: 'ssrf', error: refused }
        const record = kinesisRecord(config, message)
        if (!('PartitionKey' in record)) return record
        try {
          const output = await client.send(new sdk.PutRecordCommand({ StreamName: config.stream_name, ...record }), { abortSignal: signal })
          return recordResult(config.stream_name, record.PartitionKey, output.$metadata.httpStatusCode ?? 200, output)
        } catch (err) {
          return failureOf(err, describe, { signal, secrets })
        }
      },

      async publishBatch(messages, options) {
        if (refused) return messages.map(() => ({ ok: false, error_kind: 'ssrf', error: refused }))
        // PutRecords does not keep the order of its records: an ordered destination's batch goes one PutRecord at a time.
        if (messages.some((m) => m.ordering_key !== undefined)) {
          return sendCalls(messages, messages.map((_, i): [number, number] => [i, i + 1]), async ([message]) => [await publisher.publish(message!, options)], true)
        }
        return publishKinesisBatch(target, messages, options)
      },

      async close() {
        client.destroy()
      },
    }
    return publisher
  },
}
