import * as v from 'valibot'

/** The eight destination types of the spec, exactly as spelled there, then the ones Outflow adds. */
export const destinationTypes = [
  'webhook',
  'cloudx_sqs',
  'amqp_broker',
  'relay',
  'cloudx_kinesis',
  'cloudy_servicebus',
  'cloudx_s3',
  'cloudz_pubsub',
  'kafka',
  'aws_eventbridge',
  'nats_jetstream',
  'redis_streams',
] as const

/** `type` of a destination: one of `destinationTypes`. */
export const DestinationTypeNameSchema = v.picklist(destinationTypes, `must be one of ${destinationTypes.join(', ')}`)
/** The name of a destination type: `webhook`, `cloudx_sqs`, … (the `type` of a destination). */
export type DestinationTypeName = v.InferOutput<typeof DestinationTypeNameSchema>

/** The `{type}` path parameter of the destination-types routes accepts only these six (SPEC quirk). */
export const schemaPathTypes = ['webhook', 'cloudx_sqs', 'amqp_broker', 'relay', 'cloudx_kinesis', 'cloudx_s3'] as const

/** `{type}` of the destination-types routes: exactly the spec's six values. */
export const SchemaPathTypeSchema = v.picklist(schemaPathTypes, `must be one of ${schemaPathTypes.join(', ')}`)

/** One element of `config_fields` / `credential_fields` (DESIGN §4). */
export const FieldSpecSchema = v.object({
  /** The field's name in `config` or `credentials`. */
  key: v.string(),
  /** What kind of input a form shows for it. */
  type: v.picklist(['text', 'checkbox', 'number', 'key_value_map']),
  /** The field's label in a form. */
  label: v.string(),
  /** What the field is for, shown beside it. */
  description: v.string(),
  /** Whether a destination of the type must have it. */
  required: v.boolean(),
  /** Whether its value is a secret: masked in answers and forms. */
  sensitive: v.boolean(),
  /** The value used when the field is left out, if any. */
  default: v.optional(v.union([v.string(), v.number(), v.boolean()])),
  /** A regular expression the value must match, if any. */
  pattern: v.optional(v.string()),
  /** The shortest value accepted, if bounded. */
  minlength: v.optional(v.number()),
  /** The longest value accepted, if bounded. */
  maxlength: v.optional(v.number()),
})
/** How one config or credential field of a destination type is described to forms (`GET /destination-types`). */
export type FieldSpec = v.InferOutput<typeof FieldSpecSchema>

/** The public schema of a destination type (GET /destination-types). */
export const DestinationTypeInfoSchema = v.object({
  /** The type's name. */
  type: v.string(),
  /** Its display name. */
  label: v.string(),
  /** A one-line description of where it delivers. */
  description: v.string(),
  /** Its icon, an SVG document. */
  icon: v.string(),
  /** Set-up instructions in Markdown, ending with the package it needs. */
  instructions: v.string(),
  /** A page where the receiving side can be set up, if the type has one. */
  remote_setup_url: v.optional(v.pipe(v.string(), v.url())),
  /** The fields of a destination's `config`. */
  config_fields: v.array(FieldSpecSchema),
  /** The fields of a destination's `credentials`. */
  credential_fields: v.array(FieldSpecSchema),
})
/** `DestinationTypeInfoSchema` with `type` narrowed to the type names. */
export type DestinationTypeSchema = Omit<v.InferOutput<typeof DestinationTypeInfoSchema>, 'type'> & {
  /** The type's name. */
  type: DestinationTypeName
}
