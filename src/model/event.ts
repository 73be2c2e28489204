import * as v from 'valibot'
import { DateTimeSchema, DirSchema, IdSchema, JsonObjectSchema, objectBody, RepeatedStringSchema, StringMapSchema, queryInt } from './common.js'
import { TopicSchema } from './destination.js'
import { ErrorKindSchema } from './attempt-result.js'

export const EventStatusSchema = v.picklist(['success', 'failed'], 'must be "success" or "failed"')

/** The spec's Event: one (event, destination) pair with its delivery outcome. */
export const EventSchema = v.object({
  /** The event id, unique within its tenant. */
  id: v.string(),
  /** The destination this row reports the delivery to. */
  destination_id: v.string(),
  /** The event's topic. */
  topic: v.string(),
  /** The event's time (RFC 3339), given at publish or the time it was published. */
  time: v.string(),
  /** When a delivery attempt to this destination succeeded (RFC 3339), or null. */
  successful_at: v.nullable(v.string()),
  /** The event's metadata, as published. */
  metadata: StringMapSchema,
  /** Whether the delivery to this destination succeeded (`success`) or not yet or never (`failed`). */
  status: EventStatusSchema,
  /** The event's payload, as published; null once erased (see `expunged_at`). */
  data: v.unknown(),
  /**
   * An addition to the spec (its `status` enum stays success/failed): present while this pair is skipped, since
   * when. Skipped means never attempted because the destination was disabled (`status` is then `failed`).
   */
  skipped_at: v.optional(v.pipe(v.string(), v.description('Present while the delivery to this destination is skipped (its destination was disabled when the event was published, or when its next attempt was due): since when. Never attempted since; `status` is `failed`. A replay with `status: "skipped"` sends it.'))),
  /** An addition to the spec: present when the event was erased (`data` is then null), since when. */
  expunged_at: v.optional(v.pipe(v.string(), v.description('Present when the event was erased (`POST /tenants/{tenant_id}/events/expunge`): since when. `data` is then null and its attempts keep no response body; deliveries still pending were cancelled, and it is never sent again (retry and replay skip it).'))),
  /** An addition to the spec: whether `data` matched its topic's schema at publish; absent when it was not checked. */
  schema_valid: v.optional(v.pipe(v.boolean(), v.description('Present when the topic has a schema checked at publish: whether `data` matched it. `false` only under `validation: "warn"` (an `enforce` topic refuses such events with a 422).'))),
})
/** An event as the event log lists it: one (event, destination) pair with its delivery outcome. */
export type Event = v.InferOutput<typeof EventSchema>

/** One delivery attempt. `destination_id` is an extra field beside the spec's. */
export const DeliveryAttemptSchema = v.object({
  /** The attempt id. */
  id: v.string(),
  /** The event it delivered. */
  event_id: v.string(),
  /** The destination it went to. */
  destination_id: v.string(),
  /** When the attempt ended (RFC 3339). */
  delivered_at: v.string(),
  /** The attempt's outcome. */
  status: EventStatusSchema,
  /** The receiver's HTTP status, or null when there was no HTTP answer. */
  response_status_code: v.nullable(v.number()),
  /** The start of the receiver's answer (at most 16 KiB), or null. */
  response_body: v.nullable(v.string()),
  /** The receiver's answer headers, or null. */
  response_headers: v.nullable(StringMapSchema),
  /** The error text of a failed attempt; null or absent on success. */
  error: v.optional(v.nullable(v.string())),
  /** Why a failed attempt failed (see docs/delivery.md › Failure kinds). */
  error_kind: v.optional(v.nullable(ErrorKindSchema)),
  /** How long the attempt took. */
  duration_ms: v.optional(v.nullable(v.number())),
  /** Which attempt of the delivery this was, from 1. */
  attempt_number: v.optional(v.number()),
  /** Whether it was a manual retry or a replay rather than a scheduled attempt. */
  manual: v.optional(v.boolean()),
})
/** One delivery attempt of an event to a destination, as `listDeliveries` returns it. */
export type DeliveryAttempt = v.InferOutput<typeof DeliveryAttemptSchema>

/** The fields of an event to publish. */
const PublishFieldsSchema = v.strictObject(
  {
    id: v.optional(IdSchema),
    tenant_id: IdSchema,
    topic: TopicSchema,
    data: JsonObjectSchema,
    metadata: v.optional(StringMapSchema),
    time: v.optional(DateTimeSchema),
    destination_id: v.optional(IdSchema),
    eligible_for_retry: v.optional(v.boolean('must be a boolean')),
  },
  'unexpected field',
)

/** Body of `POST /publish` and argument of `outflow.publish()`. */
export const PublishSchema = objectBody(PublishFieldsSchema)
/** An event to publish: its tenant, topic and data, and optionally its id, time, metadata and one destination. */
export type PublishInput = v.InferInput<typeof PublishFieldsSchema>

/** What a publish answers; `PublishResult` is its type. */
export const PublishResultSchema = v.object({
  /** The event id (generated when the publish gave none). */
  id: v.string(),
  /** Whether an event with this id was already published (then nothing new was written). */
  duplicate: v.boolean(),
  /** The destinations the event is delivered to (not those it was skipped for). */
  destination_ids: v.array(v.string()),
})
/** The outcome of a publish: the event id, whether it was a repeat, and where it goes. */
export type PublishResult = v.InferOutput<typeof PublishResultSchema>

const eventListFields = {
  'time[gte]': v.optional(DateTimeSchema),
  'time[lte]': v.optional(DateTimeSchema),
  limit: v.optional(queryInt(1, 1000), 100),
  next: v.optional(v.string()),
  prev: v.optional(v.string()),
  order_by: v.optional(v.picklist(['time'], 'must be "time"'), 'time'),
  dir: v.optional(DirSchema, 'desc'),
}

/** `GET /events` (admin). */
export const ListAdminEventsQuerySchema = v.strictObject(
  {
    ...eventListFields,
    tenant_id: v.optional(RepeatedStringSchema),
    destination_id: v.optional(RepeatedStringSchema),
    topic: v.optional(RepeatedStringSchema),
  },
  'unknown query parameter',
)
export type ListAdminEventsQuery = v.InferInput<typeof ListAdminEventsQuerySchema>

/** `GET /tenants/{t}/events`; `topic` is an addition to the spec (which has it on the admin list only). */
export const ListEventsQuerySchema = v.strictObject(
  { ...eventListFields, destination_id: v.optional(RepeatedStringSchema), status: v.optional(EventStatusSchema), topic: v.optional(RepeatedStringSchema) },
  'unknown query parameter',
)
export type ListEventsQuery = v.InferInput<typeof ListEventsQuerySchema>

/** `GET /tenants/{t}/destinations/{d}/events` (deprecated). */
export const ListDestinationEventsQuerySchema = v.strictObject(
  { ...eventListFields, status: v.optional(EventStatusSchema) },
  'unknown query parameter',
)
export type ListDestinationEventsQuery = v.InferInput<typeof ListDestinationEventsQuerySchema>

export const GetEventQuerySchema = v.strictObject({ destination_id: v.optional(IdSchema) }, 'unknown query parameter')
export type GetEventQuery = v.InferInput<typeof GetEventQuerySchema>

export { JsonObjectSchema }
