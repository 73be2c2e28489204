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
export type DestinationTypeName = v.InferOutput<typeof DestinationTypeNameSchema>

/** The `{type}` path parameter of the destination-types routes accepts only these six (SPEC quirk). */
export const schemaPathTypes = ['webhook', 'cloudx_sqs', 'amqp_broker', 'relay', 'cloudx_kinesis', 'cloudx_s3'] as const

/** `{type}` of the destination-types routes: exactly the spec's six values. */
export const SchemaPathTypeSchema = v.picklist(schemaPathTypes, `must be one of ${schemaPathTypes.join(', ')}`)

/** One element of `config_fields` / `credential_fields` (DESIGN §4). */
export const FieldSpecSchema = v.object({
  key: v.string(),
  type: v.picklist(['text', 'checkbox', 'number', 'key_value_map']),
  label: v.string(),
  description: v.string(),
  required: v.boolean(),
  sensitive: v.boolean(),
  default: v.optional(v.union([v.string(), v.number(), v.boolean()])),
  pattern: v.optional(v.string()),
  minlength: v.optional(v.number()),
  maxlength: v.optional(v.number()),
})
export type FieldSpec = v.InferOutput<typeof FieldSpecSchema>

/** The public schema of a destination type (GET /destination-types). */
export const DestinationTypeInfoSchema = v.object({
  type: v.string(),
  label: v.string(),
  description: v.string(),
  icon: v.string(),
  instructions: v.string(),
  remote_setup_url: v.optional(v.pipe(v.string(), v.url())),
  config_fields: v.array(FieldSpecSchema),
  credential_fields: v.array(FieldSpecSchema),
})
/** `DestinationTypeInfoSchema` with `type` narrowed to the type names. */
export type DestinationTypeSchema = Omit<v.InferOutput<typeof DestinationTypeInfoSchema>, 'type'> & { type: DestinationTypeName }
