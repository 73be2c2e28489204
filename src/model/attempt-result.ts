import * as v from 'valibot'

/** Why an attempt failed, recorded on the attempt so the log says why. */
export const ErrorKindSchema = v.picklist(['authentication', 'not_found', 'throttled', 'network', 'timeout', 'rejected', 'ssrf', 'configuration', 'unknown'])
export type ErrorKind = v.InferOutput<typeof ErrorKindSchema>

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
export type AttemptResult = v.InferOutput<typeof AttemptResultSchema>
