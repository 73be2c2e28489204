import http from 'node:http'
import https from 'node:https'
import * as v from 'valibot'
import { guardedLookup } from '../net/ssrf.js'
import type { FieldSpec } from '../model/destination-type.js'
import type { PublisherContext } from './types.js'

// What the AWS-backed types (cloudx_s3, cloudx_kinesis, cloudx_sqs) share: credentials, endpoints,
// the SDK request handler and error codes.

/** An http(s) endpoint URL of an AWS-compatible service or emulator. */
export const AwsEndpointSchema = v.pipe(
  v.string('must be a string'),
  v.url('must be a URL'),
  v.check((url) => /^https?:\/\//i.test(url), 'must be an http:// or https:// URL'),
)

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

/** Codes of an error and its causes (SDK network errors wrap the socket error). */
export function awsErrorCodes(err: unknown, depth = 0): string[] {
  if (typeof err !== 'object' || err === null || depth > 4) return []
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown }
  const nested = Array.isArray(e.errors) ? e.errors.flatMap((x) => awsErrorCodes(x, depth + 1)) : []
  return [...(typeof e.code === 'string' ? [e.code] : []), ...awsErrorCodes(e.cause, depth + 1), ...nested]
}
