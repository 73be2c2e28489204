import type { JsonSchema } from '@valibot/to-json-schema'
import * as v from 'valibot'
import { destinationRegistry } from '../destinations/registry.js'
import type { DestinationTypeDefinition } from '../destinations/types.js'
import { bodyShape } from '../model/common.js'
import { CreateDestinationSchema, DestinationSchema } from '../model/destination.js'
import type { DestinationTypeName, FieldSpec } from '../model/destination-type.js'

type Convert = (schema: v.GenericSchema) => JsonSchema
type ObjectJson = JsonSchema & { properties?: Record<string, JsonSchema>; required?: string[] }
type Entries = Record<string, v.GenericSchema>

/** SPEC: `updated_at` is optional in the responses of these variants. */
const optionalUpdatedAt: readonly DestinationTypeName[] = ['relay', 'cloudy_servicebus']

/** `cloudx_sqs` -> `CloudxSqs`: the stem of a type's schema names. */
function schemaStem(type: string): string {
  return type.replace(/(^|_)([a-z])/g, (_match, _sep, letter: string) => letter.toUpperCase())
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })

const fieldTypes: Record<FieldSpec['type'], JsonSchema> = {
  text: { type: 'string' },
  checkbox: { type: 'boolean' },
  number: { type: 'number' },
  key_value_map: { type: 'object', additionalProperties: { type: 'string' } },
}

/**
 * A type's config or credentials schema, converted from the valibot schema its validation uses, with each property
 * described by its field spec. Fields a free-form schema (relay config) does not list are added from the spec;
 * `masked` fields are what responses carry instead of the secret: its first 4 characters, then `****`.
 */
function fieldsSchema(convert: Convert, schema: v.GenericSchema, fields: readonly FieldSpec[], masked: ReadonlySet<string> = new Set()): JsonSchema {
  const json = convert(schema) as ObjectJson
  const properties: Record<string, JsonSchema> = { ...json.properties }
  for (const field of fields) {
    const own = masked.has(field.key) ? { type: 'string' as const } : (properties[field.key] ?? fieldTypes[field.type])
    const description = masked.has(field.key) ? `${field.description} Masked in responses: its first 4 characters, then ****.` : field.description
    properties[field.key] = { ...own, description }
  }
  return { ...json, properties }
}

/** The `type` property of a variant: a string with one value (`const` alone confuses some client generators). */
function discriminatorValue(type: DestinationTypeName): JsonSchema {
  return { type: 'string', const: type }
}

/** Sensitive credentials that responses mask (DestinationTypeDefinition.revealedCredentials are returned as they are). */
function maskedFields(def: DestinationTypeDefinition): Set<string> {
  const revealed = new Set(def.revealedCredentials ?? [])
  return new Set(def.credential_fields.filter((f) => f.sensitive && !revealed.has(f.key)).map((f) => f.key))
}

/** The response variant of one type: Destination with `type` fixed and the type's own config and credentials. */
function responseVariant(convert: Convert, def: DestinationTypeDefinition): JsonSchema {
  const entries: Entries = { ...(DestinationSchema.entries as Entries) }
  if (optionalUpdatedAt.includes(def.type)) entries.updated_at = v.optional(v.string())
  // SPEC: relay config is optional in responses; the engine always returns an object.
  if (!def.configRequired) entries.config = v.optional(v.unknown())
  const json = convert(v.object(entries)) as ObjectJson
  json.properties!.type = discriminatorValue(def.type)
  json.properties!.config = fieldsSchema(convert, def.configSchema, def.config_fields)
  json.properties!.credentials = fieldsSchema(convert, def.credentialsSchema, def.credential_fields, maskedFields(def))
  return { ...json, description: `A \`${def.type}\` destination (${def.label}).` }
}

/** The create body of one type: `type` fixed, its config and credentials required as the type requires them. */
function createVariant(convert: Convert, def: DestinationTypeDefinition): JsonSchema {
  const shape = bodyShape(CreateDestinationSchema) as unknown as { entries: Entries }
  const entries: Entries = { ...shape.entries }
  entries.config = def.configRequired ? v.unknown() : v.optional(v.unknown())
  entries.credentials = def.credentialsRequired ? v.unknown() : v.optional(v.unknown())
  const json = convert(v.strictObject(entries)) as ObjectJson
  json.properties!.type = discriminatorValue(def.type)
  json.properties!.config = fieldsSchema(convert, def.configSchema, def.config_fields)
  json.properties!.credentials = fieldsSchema(convert, def.credentialsSchema, def.credential_fields)
  return { ...json, description: `Create a \`${def.type}\` destination (${def.label}).` }
}

/** `oneOf` the named variants, told apart by `type`. */
function union(description: string, names: Record<string, string>): JsonSchema {
  return {
    description,
    oneOf: Object.values(names).map(ref),
    discriminator: { propertyName: 'type', mapping: Object.fromEntries(Object.entries(names).map(([type, name]) => [type, ref(name).$ref])) },
  } as JsonSchema
}

/**
 * The destination shapes of the OpenAPI document, one variant per type generated from the type's own schemas:
 * `Destination` and `CreateDestination` become a `oneOf` discriminated on `type` (`WebhookDestination`,
 * `CreateWebhookDestination`, …). `UpdateDestination` cannot be told apart by `type` (a PATCH does not carry it), so
 * its `config` and `credentials` are documented as merge patches of the type's objects.
 *
 * @example
 * Object.assign(components.schemas, destinationSchemas(convert, components.schemas.UpdateDestination))
 */
export function destinationSchemas(convert: Convert, update: JsonSchema): Record<string, JsonSchema> {
  const schemas: Record<string, JsonSchema> = {}
  const responses: Record<string, string> = {}
  const creates: Record<string, string> = {}
  for (const def of Object.values(destinationRegistry)) {
    const stem = schemaStem(def.type)
    responses[def.type] = `${stem}Destination`
    creates[def.type] = `Create${stem}Destination`
    schemas[`${stem}Destination`] = responseVariant(convert, def)
    schemas[`Create${stem}Destination`] = createVariant(convert, def)
  }
  schemas.Destination = union('A destination: the variant of its `type`.', responses)
  schemas.CreateDestination = union('The body of a create: the variant of its `type`, whose config and credentials it validates.', creates)
  const patch = (what: string) => ({
    type: ['object', 'null'],
    description: `A JSON merge patch (RFC 7396) of the destination's ${what}: \`null\` deletes a key. The result must be a valid ${what} of its type (see the variants of CreateDestination).`,
  })
  const { properties } = update as ObjectJson
  schemas.UpdateDestination = { ...update, properties: { ...properties, config: patch('config'), credentials: patch('credentials') } } as JsonSchema
  return schemas
}
