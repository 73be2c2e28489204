import * as v from 'valibot'

/** What is checked at publish against a topic's schema: nothing, a mark on invalid events, or a 422. */
export const ValidationModeSchema = v.picklist(['off', 'warn', 'enforce'], 'must be "off", "warn" or "enforce"')
/** How a topic's schema is applied at publish: `off`, `warn` (store and mark) or `enforce` (refuse with a 422). */
export type ValidationMode = v.InferOutput<typeof ValidationModeSchema>

/** A JSON Schema (draft 2020-12) as a plain object. */
export type JsonSchemaObject = Record<string, unknown>

/**
 * The Standard Schema interface (https://standardschema.dev) that valibot, zod and arktype share; only
 * what the catalog reads: the vendor (to derive a JSON Schema) and the input type (to type `publish`).
 */
export interface StandardSchemaLike<Input = unknown> {
  /** The Standard Schema properties every conforming schema value carries. */
  readonly '~standard': {
    /** The Standard Schema version the library implements. */
    readonly version: 1
    /** The library's name (`valibot`, `zod`, `arktype`), which picks how a JSON Schema is derived. */
    readonly vendor: string
    /** The library's validation function (not called by the catalog, which validates with the JSON Schema). */
    readonly validate: (value: unknown) => unknown
    /** The input and output types, for TypeScript only; `input` types `publish`. */
    readonly types?:
      | {
          /** The type a value must have to be accepted: types `publish`'s `data`. */
          readonly input: Input
          /** The type validation produces (not used by the catalog). */
          readonly output: unknown
        }
      | undefined
  }
}

/** One topic of the `topics` option's map form. */
export interface TopicDefinition<S = JsonSchemaObject | StandardSchemaLike> {
  /** What the topic means, shown at `GET /topics`, in the OpenAPI document and in the portal. */
  description?: string
  /** A JSON Schema (draft 2020-12) of `data`, or a Standard Schema value (valibot, zod, arktype). */
  schema?: S
  /** The JSON Schema of a Standard Schema whose library cannot derive one (served and validated in its place). */
  jsonSchema?: JsonSchemaObject
  /** Default: `enforce` when the topic has a schema, else `off`. */
  validation?: ValidationMode
  /** Whether the topic is on its way out: destinations may still subscribe, and are told. */
  deprecated?: boolean
  /** The topic that replaces this one (must be in the catalog). */
  replaced_by?: string
  /** Example payloads (`data`), shown in the portal and the OpenAPI document. */
  examples?: unknown[]
}

/** The `topics` option: an allow-list of names, or a catalog of named topics. */
export type TopicsOption = readonly string[] | Readonly<Record<string, TopicDefinition>>

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/** A topic definition as options validation sees it (the schema itself is compiled later, see delivery/catalog.ts). */
export const TopicDefinitionSchema = v.strictObject(
  {
    description: v.optional(v.string('must be a string')),
    schema: v.optional(v.custom<JsonSchemaObject | StandardSchemaLike>((s) => isObject(s) || (typeof s === 'function' && '~standard' in s), 'must be a JSON Schema object or a Standard Schema value')),
    jsonSchema: v.optional(v.custom<JsonSchemaObject>(isObject, 'must be a JSON Schema object')),
    validation: v.optional(ValidationModeSchema),
    deprecated: v.optional(v.boolean('must be a boolean')),
    replaced_by: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
    examples: v.optional(v.array(v.unknown(), 'must be an array')),
  },
  'unexpected field',
)

/** `GET /topics/{name}`: a topic of the catalog, in Outpost API v2's topic shape (plus `examples`). */
export const TopicInfoSchema = v.object({
  /** The topic name. */
  name: v.string(),
  /** What the topic means (`""` when the catalog says nothing). */
  description: v.string(),
  /** The JSON Schema of its `data`, or null. */
  payload_schema: v.nullable(v.record(v.string(), v.unknown())),
  /** How the schema is applied at publish. */
  validation: ValidationModeSchema,
  /** Whether the topic is deprecated. */
  deprecated: v.boolean(),
  /** The topic that replaces a deprecated one, or null. */
  replaced_by: v.nullable(v.string()),
  /** Example payloads, when the catalog gives some. */
  examples: v.optional(v.array(v.unknown())),
})
/** A topic of the catalog as `GET /topics` and `outflow.listTopics()` describe it. */
export type TopicInfo = v.InferOutput<typeof TopicInfoSchema>

/** A deprecated topic a destination subscribes to, and the topic that replaces it (create/update answers). */
export const DeprecatedTopicSchema = v.object({ name: v.string(), replaced_by: v.nullable(v.string()) })
export type DeprecatedTopic = v.InferOutput<typeof DeprecatedTopicSchema>
