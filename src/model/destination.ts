import * as v from 'valibot'
import { DestinationTypeNameSchema } from './destination-type.js'
import { IdSchema, JsonObjectSchema, objectBody, RepeatedStringSchema, StringMapSchema } from './common.js'

/** A topic name or pattern: 1–255 visible characters; `*` stands for one or more dot segments. */
export const TopicSchema = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(255, 'must be at most 255 characters'),
  v.regex(/^[^\s]+$/, 'must not contain white space'),
)

/** `topics` on create/update: `"*"` or a non-empty array of topics (stored as an array). */
export const TopicsSchema = v.pipe(
  v.union([v.literal('*'), v.pipe(v.array(TopicSchema), v.minLength(1, 'must not be empty'))], 'must be "*" or a non-empty array of topics'),
  v.transform((t): string[] => (t === '*' ? ['*'] : [...new Set(t)])),
  v.check((t) => !(t.includes('*') && t.length > 1), '"*" cannot be combined with other topics'),
)


/** Create body. Config/credentials are checked against the type's own schemas afterwards. */
export const CreateDestinationSchema = objectBody(v.strictObject(
  {
    id: v.optional(IdSchema),
    type: DestinationTypeNameSchema,
    topics: TopicsSchema,
    config: v.optional(v.unknown()),
    credentials: v.optional(v.unknown()),
    filter: v.optional(v.nullable(JsonObjectSchema)),
    delivery_metadata: v.optional(v.nullable(StringMapSchema)),
    metadata: v.optional(v.nullable(JsonObjectSchema)),
  },
  'unexpected field',
))
export type CreateDestinationInput = v.InferInput<typeof CreateDestinationSchema>

/** PATCH body: merge patch for config/credentials/metadata/delivery_metadata, replace for topics/filter. */
export const UpdateDestinationSchema = objectBody(v.strictObject(
  {
    topics: v.optional(TopicsSchema),
    filter: v.optional(v.nullable(JsonObjectSchema)),
    config: v.optional(v.nullable(v.unknown())),
    credentials: v.optional(v.nullable(v.unknown())),
    delivery_metadata: v.optional(v.nullable(v.record(v.string(), v.nullable(v.string('values must be strings or null'))))),
    metadata: v.optional(v.nullable(JsonObjectSchema)),
  },
  'unexpected field',
))
export type UpdateDestinationInput = v.InferInput<typeof UpdateDestinationSchema>

/** Destination as returned by the API. */
export const DestinationSchema = v.object({
  id: v.string(),
  type: DestinationTypeNameSchema,
  topics: v.array(v.string()),
  disabled_at: v.nullable(v.string()),
  created_at: v.string(),
  updated_at: v.string(),
  config: JsonObjectSchema,
  credentials: JsonObjectSchema,
  filter: v.optional(v.nullable(JsonObjectSchema)),
  delivery_metadata: v.optional(v.nullable(StringMapSchema)),
  metadata: v.optional(v.nullable(JsonObjectSchema)),
  target: v.optional(v.string()),
  target_url: v.optional(v.string()),
})
export type Destination = v.InferOutput<typeof DestinationSchema>

/** Query of `GET /tenants/{t}/destinations`: `type` and `topics`, each repeatable. */
export const ListDestinationsQuerySchema = v.strictObject(
  {
    type: v.optional(v.pipe(RepeatedStringSchema, v.array(DestinationTypeNameSchema))),
    topics: v.optional(RepeatedStringSchema),
  },
  'unknown query parameter',
)
export type ListDestinationsQuery = v.InferInput<typeof ListDestinationsQuerySchema>
