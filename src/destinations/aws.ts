import http from 'node:http'
import https from 'node:https'
import * as v from 'valibot'
import { guardedLookup } from '../net/ssrf.js'
import { transportErrorKind } from '../net/transport-error.js'
import type { ErrorKind } from '../model/attempt-result.js'
import type { FieldSpec } from '../model/destination-type.js'
import type { PublisherContext } from './types.js'

// What the AWS-backed types (cloudx_s3, cloudx_kinesis, cloudx_sqs) share: credentials, regions, endpoints,
// the SDK request handler and error codes.

/** An http(s) endpoint URL of an AWS-compatible service or emulator. */
export const AwsEndpointSchema = v.pipe(
  v.string('must be a string'),
  v.url('must be a URL'),
  v.check((url) => /^https?:\/\//i.test(url), 'must be an http:// or https:// URL'),
)

/** A region name such as us-east-1 (cloudx_s3, cloudx_kinesis); an AWS-compatible service may name its own. */
const regionPattern = '^[a-z0-9]+(-[a-z0-9]+)*$'

/** The `region` setting of cloudx_s3 and cloudx_kinesis. */
export const AwsRegionSchema = v.pipe(v.string('must be a string'), v.regex(new RegExp(regionPattern), 'must be a region name such as us-east-1'))

/** The field of `AwsRegionSchema`; `of` names what is in the region, e.g. `the bucket`. */
export function awsRegionField(of: string): FieldSpec {
  return { key: 'region', type: 'text', label: 'Region', description: `The region of ${of}, e.g. us-east-1.`, required: true, sensitive: false, pattern: regionPattern }
}

/** AWS static credentials `{ key, secret, session? }`, shared by the cloudx types. */
export const AwsCredentialsSchema = v.strictObject(
  {
    key: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), v.maxLength(128, 'must be at most 128 characters'), v.regex(/^\S+$/, 'must not contain white space')),
    secret: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), v.maxLength(1024, 'must be at most 1024 characters')),
    session: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
  },
  'unexpected field',
)

export type AwsCredentials = v.InferOutput<typeof AwsCredentialsSchema>

/** The credential fields of `AwsCredentialsSchema`; `permission` names what the key must be allowed to do. */
export function awsCredentialFields(permission: string): FieldSpec[] {
  return [
    { key: 'key', type: 'text', label: 'Access key ID', description: `The access key ID of an IAM user or role allowed ${permission}.`, required: true, sensitive: false, minlength: 1, maxlength: 128 },
    { key: 'secret', type: 'text', label: 'Secret access key', description: 'The secret access key.', required: true, sensitive: true, minlength: 1, maxlength: 1024 },
    { key: 'session', type: 'text', label: 'Session token', description: 'A session token, for temporary credentials only.', required: false, sensitive: true, minlength: 1 },
  ]
}

/** The SDK `credentials` option of validated credentials. */
export function awsCredentials(credentials: AwsCredentials): { accessKeyId: string; secretAccessKey: string; sessionToken?: string } {
  return {
    accessKeyId: credentials.key,
    secretAccessKey: credentials.secret,
    ...(credentials.session ? { sessionToken: credentials.session } : {}),
  }
}

/**
 * SDK request handler options: sockets that refuse private addresses for tenant-supplied endpoints. The attempt's
 * deadline is the `abortSignal` of each call.
 */
export function awsRequestHandler(endpoint: string | undefined, context: PublisherContext) {
  const guarded = endpoint !== undefined && !context.allowPrivateNetworks
  return {
    httpAgent: new http.Agent({ keepAlive: true, ...(guarded ? { lookup: guardedLookup } : {}) }),
    httpsAgent: new https.Agent({ keepAlive: true, ...(guarded ? { lookup: guardedLookup } : {}) }),
  }
}

/**
 * The kind of an AWS SDK error that the type's own tables of service error codes did not name: without an answer, the
 * socket failure (`dns`, `tls`, `connection_refused`, …); with one, its status class — a 5xx is the service failing
 * (`http_5xx`), a 4xx the service refusing the request (`rejected`).
 *
 * @example
 * awsFallbackKind(err, err.$metadata?.httpStatusCode) // 'http_5xx' for an InternalFailure
 */
export function awsFallbackKind(err: unknown, status: number | undefined): ErrorKind {
  const transport = transportErrorKind(err)
  if (transport === 'ssrf' || (status === undefined && transport)) return transport
  if (status !== undefined && status >= 500 && status < 600) return 'http_5xx'
  if (status !== undefined && status >= 400 && status < 500) return 'rejected'
  return transport ?? 'unknown'
}
