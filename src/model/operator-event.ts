import * as v from 'valibot'
import { StringMapSchema } from './common.js'
import { ErrorKindSchema } from './attempt-result.js'

// Operator events, Hookdeck Outpost's model: what the engine tells the operator (not the tenants)
// about delivery health. Each is an envelope `{ id, topic, time, tenant_id, data }`; the same object
// is emitted in-process and is the body delivered to the operator sink.

export const alertTopics = ['alert.destination.consecutive_failure', 'alert.destination.disabled', 'alert.attempt.exhausted_retries'] as const
export const attemptTopics = ['attempt.success', 'attempt.failed'] as const
export const operatorTopics = [...alertTopics, ...attemptTopics] as const
/** Accepts one operator-event topic name; `OperatorTopic` is its type. */
export const OperatorTopicSchema = v.picklist(operatorTopics, `must be one of ${operatorTopics.join(', ')}`)
/** The topic of an operator event: an `alert.*` topic or `attempt.success` / `attempt.failed`. */
export type OperatorTopic = v.InferOutput<typeof OperatorTopicSchema>

/** The destination an operator event is about: where it sends, never its credentials or headers. */
export const OperatorDestinationSchema = v.object({
  /** The destination id, unique within its tenant. */
  id: v.string(),
  /** The tenant that owns the destination. */
  tenant_id: v.string(),
  /** The destination type (`webhook`, `cloudx_sqs`, …). */
  type: v.string(),
  /** The topics and patterns the destination subscribes to. */
  topics: v.array(v.string()),
  /** A short, human-readable name of where it delivers (a host, queue or bucket), or null. */
  target: v.nullable(v.string()),
  /** A URL of the target when it has one (a webhook URL, a console link), or null. */
  target_url: v.nullable(v.string()),
  /** When the destination was created (RFC 3339). */
  created_at: v.string(),
  /** When it was disabled (RFC 3339), or null while it is enabled. */
  disabled_at: v.nullable(v.string()),
})

/** The published event, without its `data`: the operator sees ids and metadata, not tenants' payloads. */
export const OperatorEventRefSchema = v.object({
  /** The event id (also the `webhook-id` receivers de-duplicate on). */
  id: v.string(),
  /** The event's topic. */
  topic: v.string(),
  /** The event's time (RFC 3339). */
  time: v.string(),
  /** The event's metadata, as published. */
  metadata: StringMapSchema,
})

/** One attempt, without its response body and headers. */
export const OperatorAttemptSchema = v.object({
  /** The attempt id. */
  id: v.string(),
  /** Which attempt of the delivery this was, from 1. */
  attempt_number: v.number(),
  /** Whether it was a manual retry or a replay rather than a scheduled attempt. */
  manual: v.boolean(),
  /** The outcome of the attempt. */
  status: v.picklist(['success', 'failed']),
  /** The receiver's HTTP status, or null when there was no HTTP answer. */
  response_status_code: v.nullable(v.number()),
  /** Why a failed attempt failed (see docs/delivery.md › Failure kinds); null on success. */
  error_kind: v.nullable(ErrorKindSchema),
  /** The error text of a failed attempt; null on success. */
  error: v.nullable(v.string()),
  /** How long the attempt took, or null when it was not timed. */
  duration_ms: v.nullable(v.number()),
  /** When the attempt ended (RFC 3339). */
  delivered_at: v.string(),
})

/** `attempt.success`, `attempt.failed`, `alert.attempt.exhausted_retries`. */
export const AttemptEventDataSchema = v.object({
  /** The tenant whose delivery this is. */
  tenant_id: v.string(),
  /** The event the attempt delivered, without its data. */
  event: OperatorEventRefSchema,
  /** The attempt, without its response body and headers. */
  attempt: OperatorAttemptSchema,
  /** The destination the attempt went to, without its credentials. */
  destination: OperatorDestinationSchema,
})
export type AttemptEventData = v.InferOutput<typeof AttemptEventDataSchema>

/** `alert.destination.consecutive_failure`: at 50, 70, 90 and 100 % of the threshold. */
export const ConsecutiveFailureDataSchema = v.object({
  ...AttemptEventDataSchema.entries,
  /** The destination's failure streak at this alert. */
  consecutive_failures: v.object({
    /** Failed attempts in a row so far. */
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
  /** When the destination was disabled (RFC 3339). */
  disabled_at: v.string(),
  /** What disabled it: the failure streak, or a receiver answering 410 Gone. */
  reason: v.picklist(['consecutive_failure', 'gone']),
})
export type DestinationDisabledData = v.InferOutput<typeof DestinationDisabledDataSchema>

const envelope = <T extends OperatorTopic, S extends v.GenericSchema>(topic: T, data: S) =>
  v.object({
    /** The operator event's own id. */
    id: v.string(),
    /** Which operator event this is; it decides the shape of `data`. */
    topic: v.literal(topic),
    /** When the engine raised it (RFC 3339). */
    time: v.string(),
    /** The tenant the event is about. */
    tenant_id: v.string(),
    /** What happened: the attempt, event and destination, and the topic's own fields. */
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
/** An operator event of any topic, as emitted in-process and as delivered to the operator sink. */
export type OperatorEvent = v.InferOutput<typeof OperatorEventSchema>
/** The operator event of one topic. */
export type OperatorEventOf<T extends OperatorTopic> = Extract<OperatorEvent, { topic: T }>
