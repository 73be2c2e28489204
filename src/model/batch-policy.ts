import * as v from 'valibot'

/** The most events one batch carries. */
export const maxBatchEvents = 1000
/** The largest `max_bytes` of a batch: 10 MiB. */
export const maxBatchBytes = 10 * 1024 ** 2
/** The longest a delivery waits for its batch to fill: 60 s. */
export const maxBatchWaitMs = 60_000

const integer = (min: number, max: number) => {
  const message = `must be an integer between ${min} and ${max}`
  return v.pipe(v.number(message), v.integer(message), v.minValue(min, message), v.maxValue(max, message))
}

const formatSchema = v.picklist(['cloudevents', 'json'], 'must be "cloudevents" or "json"')

/**
 * Opt-in batched delivery of a destination (an addition to the spec's fields): deliveries due together go out in
 * one request of up to `max_events` events and `max_bytes` bytes, waiting at most `max_wait_ms` for a batch to
 * fill. Webhooks get one POST (`format`: a CloudEvents batch, `application/cloudevents-batch+json`, or a plain JSON
 * array), signed as one body and acknowledged all or nothing; queue types use their batch APIs. The attempt log,
 * retries and metrics stay per event. Absent: one event per request.
 */
export const BatchPolicySchema = v.pipe(
  v.strictObject(
    {
      max_events: integer(1, maxBatchEvents),
      max_bytes: v.optional(integer(1024, maxBatchBytes)),
      max_wait_ms: v.optional(integer(0, maxBatchWaitMs)),
      format: v.optional(formatSchema),
    },
    'unexpected field',
  ),
  v.description(
    `Batched delivery: up to \`max_events\` (1–${maxBatchEvents}) events and \`max_bytes\` (default 1 MiB) per request, a delivery waiting at most \`max_wait_ms\` (default 1000) for its batch to fill. Webhooks: one POST whose body is a CloudEvents batch (\`format: "cloudevents"\`, the default, \`application/cloudevents-batch+json\`) or a JSON array of events (\`"json"\`), signed as one body, acknowledged all or nothing. Queue types use their batch APIs; entries a queue refuses are retried alone. The attempt log stays per event.`,
  ),
)
export type BatchPolicy = v.InferOutput<typeof BatchPolicySchema>

/**
 * A PATCH of a destination's `batch`: merge-patched into the current policy (a field's null removes it), and the
 * result checked as a whole against BatchPolicySchema.
 */
export const BatchPolicyPatchSchema = v.pipe(
  v.strictObject(
    {
      max_events: v.optional(v.nullable(integer(1, maxBatchEvents))),
      max_bytes: v.optional(v.nullable(integer(1024, maxBatchBytes))),
      max_wait_ms: v.optional(v.nullable(integer(0, maxBatchWaitMs))),
      format: v.optional(v.nullable(formatSchema)),
    },
    'unexpected field',
  ),
  v.description('Merge-patched into the destination\'s batch policy (a field set to null goes back to its default; max_events cannot be removed), then checked whole. `"batch": null` removes the policy.'),
)

/** `max_bytes` when a policy leaves it out: 1 MiB. */
export const defaultBatchBytes = 1024 ** 2
/** `max_wait_ms` when a policy leaves it out: 1 s. */
export const defaultBatchWaitMs = 1_000
