import { OutflowError } from '../errors.js'
import { PeerLoadError } from '../load-peer.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import { attemptResultFromError } from '../net/http-client.js'

/** What a destination type makes of an error its SDK threw: the kind from its own tables, and the text to record. */
export interface FailureDescription {
  kind: ErrorKind
  error: string
  /** The status of the service's answer, when there was one. */
  status?: number
  /** A short body to record, e.g. `{ code, message }` of a service error. */
  body?: string
}

/** Turns an SDK error into a description; `message` is the error's text with the secrets already removed. */
export type DescribeError = (err: unknown, message: string) => FailureDescription

export interface FailureOptions {
  /** The attempt's deadline: once it has aborted, the failure is a timeout whatever the SDK made of it. */
  signal: AbortSignal
  /** Credential values that must never be recorded. */
  secrets?: readonly (string | undefined)[]
}

/** Shorter values would mangle ordinary words if replaced; real secrets are longer. */
const minSecretLength = 4

/** The text of a thrown value: its `message` when it has one, else the value as a string. */
function messageOf(err: unknown): string {
  const message = (err as { message?: unknown } | null)?.message
  return typeof message === 'string' ? message : String(err)
}

function scrub(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text
  for (const secret of secrets) if (secret && secret.length >= minSecretLength) out = out.split(secret).join('****')
  // A PEM block (a private key) can surface in key parsing errors: never record one.
  return out.replace(/-----BEGIN [^-]+-----[\s\S]*?(-----END [^-]+-----|$)/g, '****')
}

/**
 * The failed attempt of an error thrown while publishing: a `timeout` once the attempt's deadline has aborted,
 * else what `describe` (the type's own error tables) makes of it. No secret reaches the recorded text.
 *
 * @example
 * catch (err) {
 *   return failureOf(err, describeSqsError, { signal, secrets: [credentials.secret, credentials.session] })
 * }
 */
export function failureOf(err: unknown, describe: DescribeError, { signal, secrets = [] }: FailureOptions): AttemptResult {
  if (signal.aborted) {
    return { ok: false, error_kind: 'timeout', error: scrub(messageOf(signal.reason), secrets), response_status_code: null, response_body: null }
  }
  const { kind, error, status, body } = describe(err, scrub(messageOf(err), secrets))
  return {
    ok: false,
    error_kind: kind,
    error: scrub(error, secrets),
    response_status_code: status ?? null,
    response_body: body === undefined ? null : scrub(body, secrets),
  }
}

/**
 * The failed attempt of an error thrown before anything was sent: the type's package missing (`sdk_missing`), its
 * stored settings rejected by its own schemas (`configuration`), or a `DeliveryError` of its kind.
 *
 * @example
 * catch (err) { result = failureBeforeSending(err) } // PeerLoadError -> { ok: false, error_kind: 'sdk_missing', error: '… npm install amqplib' }
 */
export function failureBeforeSending(err: unknown): AttemptResult {
  const failed = { ok: false, response_status_code: null, response_headers: null, response_body: null } as const
  if (err instanceof PeerLoadError) return { ...failed, error_kind: 'sdk_missing', error: err.message }
  if (err instanceof OutflowError && err.code === 'validation') {
    const fields = Object.entries(err.data ?? {}).map(([field, why]) => `${field} ${why}`)
    return { ...failed, error_kind: 'configuration', error: fields.length ? `${err.message}: ${fields.join('; ')}` : err.message }
  }
  return attemptResultFromError(err)
}
