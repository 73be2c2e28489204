import type * as S3 from '@aws-sdk/client-s3'
import * as v from 'valibot'
import { privateEndpointError } from '../net/endpoint-guard.js'
import { awsCredentialFields, awsCredentials, AwsCredentialsSchema, AwsEndpointSchema, awsRegionField, AwsRegionSchema, awsFallbackKind, awsRequestHandler } from './aws.js'
import { loadPeer } from '../load-peer.js'
import { renderForAttempt, renderTemplate, TemplateSchema, templateSubject } from './templates.js'
import type { ErrorKind } from '../model/attempt-result.js'
import { errorCodes } from '../net/transport-error.js'
import { failureOf, type FailureDescription } from './failure.js'
import { jsonBody, type DeliveryMessage, type DestinationTypeDefinition, type Publisher } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'

/** Storage classes PutObject accepts (the SDK enum also lists transition-only classes such as FSX_*). */
export const s3StorageClasses = [
  'STANDARD',
  'REDUCED_REDUNDANCY',
  'STANDARD_IA',
  'ONEZONE_IA',
  'INTELLIGENT_TIERING',
  'GLACIER',
  'GLACIER_IR',
  'DEEP_ARCHIVE',
  'OUTPOSTS',
  'SNOW',
  'EXPRESS_ONEZONE',
] as const

/** S3 object keys are at most 1024 bytes of UTF-8. */
const MAX_KEY_BYTES = 1024

const bucketPattern = '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$'

const ConfigSchema = v.strictObject(
  {
    bucket: v.pipe(v.string('must be a string'), v.regex(new RegExp(bucketPattern), 'must be a valid bucket name (3–63 lower-case letters, digits, "." and "-")')),
    region: AwsRegionSchema,
    key_template: v.optional(TemplateSchema),
    storage_class: v.optional(v.picklist(s3StorageClasses, `must be one of ${s3StorageClasses.join(', ')}`)),
    endpoint: v.optional(AwsEndpointSchema),
  },
  'unexpected field',
)

type S3Config = v.InferOutput<typeof ConfigSchema>

const configFields: FieldSpec[] = [
  { key: 'bucket', type: 'text', label: 'Bucket', description: 'The name of an existing bucket.', required: true, sensitive: false, pattern: bucketPattern, minlength: 3, maxlength: 63 },
  awsRegionField('the bucket'),
  {
    key: 'key_template',
    type: 'text',
    label: 'Object key template',
    description:
      "A JMESPath expression over { id, topic, time, metadata, data } giving each object's key, e.g. join('/', [topic, id]). Default: <topic>/<time>_<id>.json.",
    required: false,
    sensitive: false,
  },
  {
    key: 'storage_class',
    type: 'text',
    label: 'Storage class',
    description: `The storage class of new objects: ${s3StorageClasses.join(', ')}. Default: the bucket's default (STANDARD).`,
    required: false,
    sensitive: false,
    pattern: `^(${s3StorageClasses.join('|')})$`,
  },
  {
    key: 'endpoint',
    type: 'text',
    label: 'Endpoint',
    description: 'The URL of an S3-compatible service (MinIO, R2, an emulator). Path-style addressing is used when set. Leave empty for AWS.',
    required: false,
    sensitive: false,
    pattern: '^https?://.+',
  },
]

const instructions = `## Deliver events to an S3 bucket

1. Create the bucket (or pick an existing one) and note its **region**.
2. Create an IAM user or role whose policy allows \`s3:PutObject\` on \`arn:aws:s3:::<bucket>/*\`, and an
   access key for it. Temporary credentials also need the **session token**.
3. Enter the bucket, region and credentials. For an S3-compatible service, also enter its **endpoint** URL.
4. Optionally choose a **storage class** and an **object key template**: a JMESPath expression over
   \`{ id, topic, time, metadata, data }\`, for example \`join('/', [topic, id])\` or
   \`join('', [data.customer_id, '/', id, '.json'])\`. By default each event is stored as
   \`<topic>/<time>_<id>.json\`.

Each event becomes one object: the body is the event \`data\` as JSON (\`content-type: application/json\`)
and the event metadata (\`event-id\`, \`topic\`, \`timestamp\`, …) is stored as object metadata
(\`x-amz-meta-*\`).`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linejoin="round"><path d="M4 6c0-1.7 3.6-3 8-3s8 1.3 8 3l-2 13c0 1.1-2.7 2-6 2s-6-.9-6-2z"/><path d="M4 6c0 1.7 3.6 3 8 3s8-1.3 8-3"/></svg>'

/** The default key, `<topic>/<time ISO>_<id>.json`. */
function defaultKey(message: DeliveryMessage): string {
  return `${message.topic}/${message.time.toISOString()}_${message.id}.json`
}

/**
 * Object metadata as S3 can carry it: keys become `x-amz-meta-<key>` header names, so characters a
 * header name cannot hold become "-"; non-ASCII values are RFC 2047 encoded, as S3 itself does.
 */
function objectMetadata(metadata: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(metadata)) {
    const name = key.toLowerCase().replace(/[^a-z0-9!#$%&'*+.^_`|~-]/g, '-')
    out[name] = /^[\x20-\x7e]*$/.test(value) ? value : `=?UTF-8?B?${Buffer.from(value, 'utf8').toString('base64')}?=`
  }
  return out
}

/** Map an SDK error (service exception or transport failure) to what went wrong. */
function describeS3Error(err: unknown, message: string, bucket: string): FailureDescription {
  const e = err as { name?: string; message?: string; $metadata?: { httpStatusCode?: number } }
  const name = e?.name ?? 'Error'
  const status = e?.$metadata?.httpStatusCode
  const text = e?.message && e.message !== 'UnknownError' ? message : `HTTP ${status ?? 'error'}`
  const codes = errorCodes(err)
  let kind: ErrorKind
  if (codes.includes('ERR_OUTFLOW_SSRF')) kind = 'ssrf'
  else if (['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'ExpiredToken', 'InvalidToken', 'TokenRefreshRequired'].includes(name) || status === 401 || status === 403) kind = 'authentication'
  else if (name === 'NoSuchBucket' || status === 404) kind = 'not_found'
  else if (['SlowDown', 'Throttling', 'ThrottlingException', 'RequestLimitExceeded', 'TooManyRequestsException'].includes(name) || status === 429 || status === 503) kind = 'throttled'
  else if (['PermanentRedirect', 'AuthorizationHeaderMalformed', 'IllegalLocationConstraintException'].includes(name) || status === 301) kind = 'configuration'
  else if (name === 'TimeoutError' || name === 'AbortError' || codes.some((c) => c === 'ETIMEDOUT' || c === 'ECONNABORTED')) kind = 'timeout'
  else kind = awsFallbackKind(err, status)
  const detail = kind === 'configuration' ? ' (check the region and endpoint)' : kind === 'not_found' ? ` (bucket ${bucket})` : ''
  return { kind, status, error: `${name === 'Error' ? '' : `${name}: `}${text}${detail}` }
}

/** Buckets of S3 and S3-compatible services: one object per event, via PutObject. */
export const cloudxS3: DestinationTypeDefinition = {
  type: 'cloudx_s3',
  label: 'Amazon S3',
  description: 'Store each event as a JSON object in an S3 (or S3-compatible) bucket.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: awsCredentialFields('s3:PutObject on the bucket'),
  configSchema: ConfigSchema,
  credentialsSchema: AwsCredentialsSchema,
  configRequired: true,
  credentialsRequired: true,
  packages: ['@aws-sdk/client-s3'],

  target(config) {
    return typeof config.bucket === 'string' ? config.bucket : undefined
  },

  targetUrl(config) {
    const { bucket, region, endpoint } = config as Partial<S3Config>
    if (!bucket) return undefined
    if (endpoint) return `${endpoint.replace(/\/+$/, '')}/${encodeURIComponent(bucket)}`
    return `https://s3.console.aws.amazon.com/s3/buckets/${encodeURIComponent(bucket)}?region=${encodeURIComponent(region ?? 'us-east-1')}`
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config: S3Config = v.parse(ConfigSchema, destination.config)
    const credentials = v.parse(AwsCredentialsSchema, destination.credentials)
    const sdk = await loadPeer<typeof S3>('@aws-sdk/client-s3', 'cloudx_s3 destinations')
    const refused = privateEndpointError(config.endpoint, context)
    const client = new sdk.S3Client({
      region: config.region,
      credentials: awsCredentials(credentials),
      ...(config.endpoint ? { endpoint: config.endpoint, forcePathStyle: true } : {}),
      // The engine owns the retry schedule; SDK retries would only stretch one attempt past its timeout.
      maxAttempts: 1,
      // Optional CRC checksums are not understood by many S3-compatible services; S3 does not need them.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      requestHandler: awsRequestHandler(config.endpoint, context),
    })

    const describe = (err: unknown, message: string) => describeS3Error(err, message, config.bucket)

    return {
      async publish(message, { signal }) {
        if (refused) return { ok: false, error_kind: 'ssrf', error: refused }
        const template = config.key_template
        const key = renderForAttempt('key_template', () => (template ? renderTemplate(template, templateSubject(message)) : defaultKey(message)))
        if (typeof key !== 'string') return key
        if (Buffer.byteLength(key, 'utf8') > MAX_KEY_BYTES) {
          return { ok: false, error_kind: 'configuration', error: `the object key is longer than ${MAX_KEY_BYTES} bytes` }
        }
        try {
          const output = await client.send(
            new sdk.PutObjectCommand({
              Bucket: config.bucket,
              Key: key,
              Body: jsonBody(message),
              ContentType: 'application/json',
              Metadata: objectMetadata(message.metadata),
              ...(config.storage_class ? { StorageClass: config.storage_class } : {}),
            }),
            { abortSignal: signal },
          )
          const receipt = { bucket: config.bucket, key, etag: output.ETag ?? null, version_id: output.VersionId ?? null }
          return { ok: true, response_status_code: output.$metadata.httpStatusCode ?? 200, response_body: JSON.stringify(receipt) }
        } catch (err) {
          return failureOf(err, describe, { signal, secrets: [credentials.secret, credentials.session] })
        }
      },

      async close() {
        client.destroy()
      },
    }
  },
}
