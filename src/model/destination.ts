import * as v from 'valibot'
import { DeprecatedTopicSchema } from './topic.js'
import { DestinationTypeNameSchema } from './destination-type.js'
import { DeliverySettingsPatchSchema, DeliverySettingsSchema } from './delivery-settings.js'
import { PayloadPolicySchema } from './payload-policy.js'
import { BatchPolicyPatchSchema, BatchPolicySchema } from './batch-policy.js'
import { IdSchema, JsonObjectSchema, JsonValueSchema, objectBody, objectOf, RepeatedStringSchema, storableText, StringMapSchema } from './common.js'

/** A topic name or pattern: 1–255 visible characters; `*` stands for one or more dot segments. */
export const TopicSchema = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(255, 'must be at most 255 characters'),
  v.regex(/^[^\s]+$/, 'must not contain white space'),
  storableText(),
)

/** Limits that bound topic matching (see delivery/topics.ts): the cost grows with their product. */
export const topicLimits = {
  /** Dot segments of a topic or pattern on a destination or in the `topics` query. */
  segments: 32,
  /** `*` segments of one pattern. */
  wildcards: 16,
  /** Topics of one destination. */
  perDestination: 100,
  /** Values of the `topics` query of the destination listing. */
  perQuery: 20,
} as const

/** A topic or `*` pattern a destination subscribes to (or a listing asks for), within `topicLimits`. */
export const TopicPatternSchema = v.pipe(
  TopicSchema,
  v.check((t) => t.split('.').length <= topicLimits.segments, `must have at most ${topicLimits.segments} dot segments`),
  v.check((t) => t.split('.').filter((s) => s === '*').length <= topicLimits.wildcards, `must have at most ${topicLimits.wildcards} "*" segments`),
)

/** `topics` on create/update: `"*"` or a non-empty array of topics (stored as an array). */
export const TopicsSchema = v.pipe(
  v.union(
    [
      v.literal('*'),
      v.pipe(
        v.array(TopicPatternSchema),
        v.minLength(1, 'must not be empty'),
        v.maxLength(topicLimits.perDestination, `must have at most ${topicLimits.perDestination} topics`),
      ),
    ],
    'must be "*" or a non-empty array of topics',
  ),
  v.transform((t): string[] => (t === '*' ? ['*'] : [...new Set(t)])),
  v.check((t) => !(t.includes('*') && t.length > 1), '"*" cannot be combined with other topics'),
)

/** Create body. Config/credentials are checked against the type's own schemas afterwards. */
export const CreateDestinationSchema = objectBody(v.strictObject(
  {
    id: v.optional(IdSchema),
    type: DestinationTypeNameSchema,
    topics: TopicsSchema,
    config: v.optional(JsonValueSchema),
    credentials: v.optional(JsonValueSchema),
    filter: v.optional(v.nullable(JsonObjectSchema)),
    delivery_metadata: v.optional(v.nullable(StringMapSchema)),
    metadata: v.optional(v.nullable(JsonObjectSchema)),
    delivery: v.optional(v.nullable(DeliverySettingsSchema)),
    payload: v.optional(v.nullable(PayloadPolicySchema)),
    batch: v.optional(v.nullable(BatchPolicySchema)),
  },
  'unexpected field',
))
export type CreateDestinationInput = v.InferInput<typeof CreateDestinationSchema>

/** PATCH body: merge patch for config/credentials/metadata/delivery_metadata, replace for topics/filter. */
export const UpdateDestinationSchema = objectBody(v.strictObject(
  {
    topics: v.optional(TopicsSchema),
    filter: v.optional(v.nullable(JsonObjectSchema)),
    config: v.optional(v.nullable(JsonValueSchema)),
    credentials: v.optional(v.nullable(JsonValueSchema)),
    delivery_metadata: v.optional(
      v.nullable(objectOf(v.nullable(v.pipe(v.string('values must be strings or null'), storableText())), 'must be an object of strings or null')),
    ),
    metadata: v.optional(v.nullable(JsonObjectSchema)),
    delivery: v.optional(v.nullable(DeliverySettingsPatchSchema)),
    /** Replaced as a whole; null: back to the type's default. */
    payload: v.optional(v.nullable(PayloadPolicySchema)),
    /** Merge-patched into the current policy (then checked whole); null: back to one event per request. */
    batch: v.optional(v.nullable(BatchPolicyPatchSchema)),
  },
  'unexpected field',
))
export type UpdateDestinationInput = v.InferInput<typeof UpdateDestinationSchema>

/** Destination as returned by the API. */
export const DestinationSchema = v.object({
  /** The destination id, unique within its tenant. */
  id: v.string(),
  /** Where it delivers: the destination type. */
  type: DestinationTypeNameSchema,
  /** The topics and patterns it subscribes to (`"*"` for all). */
  topics: v.array(v.string()),
  /** When it was disabled (RFC 3339), or null while it is enabled. */
  disabled_at: v.nullable(v.string()),
  /** When it was created (RFC 3339). */
  created_at: v.string(),
  /** When it was last changed (RFC 3339). */
  updated_at: v.string(),
  /** The type's settings (`url`, `queue_url`, …). */
  config: JsonObjectSchema,
  /** The type's credentials, sensitive values masked (except a webhook's secret). */
  credentials: JsonObjectSchema,
  /** The filter an event must match besides the topics, or null. */
  filter: v.optional(v.nullable(JsonObjectSchema)),
  /** Metadata sent with every delivery (as `x-outflow-*` headers on webhooks), or null. */
  delivery_metadata: v.optional(v.nullable(StringMapSchema)),
  /** The tenant's own data about the destination, or null. */
  metadata: v.optional(v.nullable(JsonObjectSchema)),
  /** The destination's own delivery policy (not in the spec: an addition); absent when it follows the engine's. */
  delivery: v.optional(DeliverySettingsSchema),
  /** Full or thin deliveries (not in the spec: an addition); absent when it follows its type's default. */
  payload: v.optional(PayloadPolicySchema),
  /** Batched delivery (not in the spec: an addition); absent: one event per request. */
  batch: v.optional(BatchPolicySchema),
  /** A short, human-readable name of where it delivers (a host, queue or bucket). */
  target: v.optional(v.string()),
  /** A URL of the target when it has one. */
  target_url: v.optional(v.string()),
  /** Create and update answers only (an addition to the spec): the deprecated catalog topics it subscribes to. */
  deprecated_topics: v.optional(
    v.pipe(v.array(DeprecatedTopicSchema), v.description('In create and update answers: the deprecated topics of the catalog this destination subscribes to, each with the topic that replaces it (or null). The subscription is kept.')),
  ),
})
/** A destination as the API returns it, credentials masked. */
export type Destination = v.InferOutput<typeof DestinationSchema>

/** Query of `GET /tenants/{t}/destinations`: `type` and `topics`, each repeatable. */
export const ListDestinationsQuerySchema = v.strictObject(
  {
    type: v.optional(v.pipe(RepeatedStringSchema, v.array(DestinationTypeNameSchema))),
    topics: v.optional(
      v.pipe(RepeatedStringSchema, v.maxLength(topicLimits.perQuery, `must have at most ${topicLimits.perQuery} values`), v.array(TopicPatternSchema)),
    ),
  },
  'unknown query parameter',
)
export type ListDestinationsQuery = v.InferInput<typeof ListDestinationsQuerySchema>
