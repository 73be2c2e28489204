import * as v from 'valibot'
import { DateTimeSchema, DirSchema, IdSchema, JsonObjectSchema, objectBody, RepeatedStringSchema, StringMapSchema, queryInt } from './common.js'
import { TopicSchema } from './destination.js'
import { ErrorKindSchema } from './attempt-result.js'

export const EventStatusSchema = v.picklist(['success', 'failed'], 'must be "success" or "failed"')

/** The spec's Event: one (event, destination) pair with its delivery outcome. */
export const EventSchema = v.object({
  id: v.string(),
  destination_id: v.string(),
  topic: v.string(),
  time: v.string(),
  successful_at: v.nullable(v.string()),
  metadata: StringMapSchema,
  status: EventStatusSchema,
  data: v.unknown(),
  /**
   * An addition to the spec (its `status` enum stays success/failed): present while this pair is skipped, since
   * when. Skipped means never attempted because the destination was disabled (`status` is then `failed`).
   */
  skipped_at: v.optional(v.pipe(v.string(), v.description('Present while the delivery to this destination is skipped (its destination was disabled when the event was published, or when its next attempt was due): since when. Never attempted since; `status` is `failed`. A replay with `status: "skipped"` sends it.'))),
  /** An addition to the spec: whether `data` matched its topic's schema at publish; absent when it was not checked. */
  schema_valid: v.optional(v.pipe(v.boolean(), v.description('Present when the topic has a schema checked at publish: whether `data` matched it. `false` only under `validation: "warn"` (an `enforce` topic refuses such events with a 422).'))),
})
export type Event = v.InferOutput<typeof EventSchema>

/** One delivery attempt. `destination_id` is an extra field beside the spec's. */
export const DeliveryAttemptSchema = v.object({
  id: v.string(),
  event_id: v.string(),
  destination_id: v.string(),
  delivered_at: v.string(),
  status: EventStatusSchema,
  response_status_code: v.nullable(v.number()),
  response_body: v.nullable(v.string()),
  response_headers: v.nullable(StringMapSchema),
  error: v.optional(v.nullable(v.string())),
  error_kind: v.optional(v.nullable(ErrorKindSchema)),
  duration_ms: v.optional(v.nullable(v.number())),
  attempt_number: v.optional(v.number()),
  manual: v.optional(v.boolean()),
})
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
export type PublishInput = v.InferInput<typeof PublishFieldsSchema>

export const PublishResultSchema = v.object({
  id: v.string(),
  duplicate: v.boolean(),
  destination_ids: v.array(v.string()),
})
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

export { JsonObjectSchema }
