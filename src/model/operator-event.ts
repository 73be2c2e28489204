import * as v from 'valibot'
import { StringMapSchema } from './common.js'
import { ErrorKindSchema } from './attempt-result.js'

// Operator events, Hookdeck Outpost's model: what the engine tells the operator (not the tenants)
// about delivery health. Each is an envelope `{ id, topic, time, tenant_id, data }`; the same object
// is emitted in-process and is the body delivered to the operator sink.

export const alertTopics = ['alert.destination.consecutive_failure', 'alert.destination.disabled', 'alert.attempt.exhausted_retries'] as const
export const attemptTopics = ['attempt.success', 'attempt.failed'] as const
export const operatorTopics = [...alertTopics, ...attemptTopics] as const
export const OperatorTopicSchema = v.picklist(operatorTopics, `must be one of ${operatorTopics.join(', ')}`)
export type OperatorTopic = v.InferOutput<typeof OperatorTopicSchema>

/** The destination an operator event is about: where it sends, never its credentials or headers. */
export const OperatorDestinationSchema = v.object({
  id: v.string(),
  tenant_id: v.string(),
  type: v.string(),
  topics: v.array(v.string()),
  target: v.nullable(v.string()),
  target_url: v.nullable(v.string()),
  created_at: v.string(),
  disabled_at: v.nullable(v.string()),
})

/** The published event, without its `data`: the operator sees ids and metadata, not tenants' payloads. */
export const OperatorEventRefSchema = v.object({
  id: v.string(),
  topic: v.string(),
  time: v.string(),
  metadata: StringMapSchema,
})

/** One attempt, without its response body and headers. */
export const OperatorAttemptSchema = v.object({
  id: v.string(),
  attempt_number: v.number(),
  manual: v.boolean(),
  status: v.picklist(['success', 'failed']),
  response_status_code: v.nullable(v.number()),
  error_kind: v.nullable(ErrorKindSchema),
  error: v.nullable(v.string()),
  duration_ms: v.nullable(v.number()),
  delivered_at: v.string(),
})

/** `attempt.success`, `attempt.failed`, `alert.attempt.exhausted_retries`. */
export const AttemptEventDataSchema = v.object({
  tenant_id: v.string(),
  event: OperatorEventRefSchema,
  attempt: OperatorAttemptSchema,
  destination: OperatorDestinationSchema,
})
export type AttemptEventData = v.InferOutput<typeof AttemptEventDataSchema>

/** `alert.destination.consecutive_failure`: at 50, 70, 90 and 100 % of the threshold. */
export const ConsecutiveFailureDataSchema = v.object({
  ...AttemptEventDataSchema.entries,
  consecutive_failures: v.object({
    current: v.number(),
    /** `alerts.consecutiveFailures` */
    max: v.number(),
    /** The level crossed, in percent of `max`. */
    threshold: v.number(),
  }),
})
export type ConsecutiveFailureData = v.InferOutput<typeof ConsecutiveFailureDataSchema>

/** `alert.destination.disabled`: by the failure threshold, or by a receiver answering 410 Gone. */
export const DestinationDisabledDataSchema = v.object({
  ...AttemptEventDataSchema.entries,
  disabled_at: v.string(),
  reason: v.picklist(['consecutive_failure', 'gone']),
})
export type DestinationDisabledData = v.InferOutput<typeof DestinationDisabledDataSchema>

const envelope = <T extends OperatorTopic, S extends v.GenericSchema>(topic: T, data: S) =>
  v.object({
    id: v.string(),
    topic: v.literal(topic),
    time: v.string(),
    /** The tenant the event is about. */
    tenant_id: v.string(),
    data,
  })

/** Every operator event: `{ id, topic, time, tenant_id, data }`, `data` by topic. */
export const OperatorEventSchema = v.variant('topic', [
  envelope('alert.destination.consecutive_failure', ConsecutiveFailureDataSchema),
  envelope('alert.destination.disabled', DestinationDisabledDataSchema),
  envelope('alert.attempt.exhausted_retries', AttemptEventDataSchema),
  envelope('attempt.success', AttemptEventDataSchema),
  envelope('attempt.failed', AttemptEventDataSchema),
])
export type OperatorEvent = v.InferOutput<typeof OperatorEventSchema>
/** The operator event of one topic. */
export type OperatorEventOf<T extends OperatorTopic> = Extract<OperatorEvent, { topic: T }>
