import * as v from 'valibot'

/**
 * Why an attempt failed, recorded on the attempt so the log says why (docs/delivery.md › Failure kinds). Values are
 * only ever added: rows stored by earlier releases keep their meaning.
 */
export const errorKinds = {
  authentication: 'The receiver refused the credentials: HTTP 401 or 403, a refused login, a denied permission.',
  not_found: 'The receiver or the resource it names does not exist: HTTP 404, an unknown queue, topic, stream, bucket or exchange.',
  throttled: 'The receiver asked to slow down: HTTP 429, a throughput or quota limit.',
  rejected: 'A service refused this message or request: too large, invalid attributes, a broker nack.',
  redirect: 'An HTTP receiver answered with a redirect (3xx), which is not followed.',
  http_4xx: 'An HTTP receiver answered with a 4xx status not named above (400, 405, 410, 413, …).',
  http_5xx: 'The receiver failed on its side: HTTP 5xx (from a webhook, a relay or an AWS service).',
  timeout: 'No complete answer before the attempt deadline (`delivery.timeoutMs`), or the service reported a timeout.',
  dns: 'The host name did not resolve.',
  connection_refused: 'Nothing accepted the connection at that address and port.',
  tls: 'The TLS handshake failed: an untrusted or expired certificate, a name mismatch, no common protocol.',
  network: 'The connection failed or broke otherwise (reset, unreachable network, closed by the peer).',
  ssrf: 'The address is on a private, loopback or link-local network, refused unless `allowPrivateNetworks` is set.',
  configuration: "The destination's settings cannot be used as stored (no signing secret, unreadable credentials, a template that fails).",
  unavailable: 'The service answered but cannot take messages now: a Kafka partition without a leader or enough in-sync replicas, an EventBridge or Kinesis InternalFailure entry.',
  sdk_missing: 'The optional package the destination type needs is not installed (or fails to load) in the delivering process.',
  unknown: 'Anything else.',
} as const

export type ErrorKind = keyof typeof errorKinds

/** `error_kind` of a failed attempt: one of `errorKinds`, each described in the OpenAPI document. */
export const ErrorKindSchema = v.pipe(
  v.picklist(Object.keys(errorKinds) as [ErrorKind, ...ErrorKind[]]),
  v.description(`Why the attempt failed:\n${Object.entries(errorKinds).map(([kind, meaning]) => `- \`${kind}\`: ${meaning}`).join('\n')}`),
)

/** The outcome of one attempt, as a publisher reports it. */
export const AttemptResultSchema = v.object({
  ok: v.boolean(),
  response_status_code: v.optional(v.nullable(v.number())),
  response_body: v.optional(v.nullable(v.string())),
  response_headers: v.optional(v.nullable(v.record(v.string(), v.string()))),
  error_kind: v.optional(v.nullable(ErrorKindSchema)),
  /** Human-readable reason for a failure (never contains secrets). */
  error: v.optional(v.nullable(v.string())),
  /** The receiver asked us to wait this long before the next attempt (Retry-After). */
  retry_after_ms: v.optional(v.number()),
  /** The receiver asked never to be called again (410 Gone): disable the destination. */
  disable: v.optional(v.boolean()),
})
/** What a destination publisher reports for one attempt: success or failure, with the status, answer excerpt and error kind. */
export type AttemptResult = v.InferOutput<typeof AttemptResultSchema>
