import { toJsonSchema } from '@valibot/to-json-schema'
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import formatsPlugin, { type FormatsPlugin } from 'ajv-formats'
import { errorData, OutflowError, type ErrorData } from '../errors.js'
import { loadPeer } from '../load-peer.js'
import type { JsonSchemaObject, StandardSchemaLike, TopicDefinition, TopicInfo, TopicsOption, ValidationMode } from '../model/topic.js'
import { isTopicPattern } from './topics.js'

// The event catalog: topics with a JSON Schema of their `data`, compiled once when the engine starts
// (ajv, draft 2020-12). Validation is linear in the payload: a first pass stops at the first problem
// (what every valid event pays), and only an invalid event is checked again for all of its problems,
// of which at most `maxReportedProblems` are named.

/** Problems named per event; past that the 422 says how many more there were. */
export const maxReportedProblems = 20
/** Largest schema (as JSON) a topic may have: the validator's code grows with it. */
export const maxSchemaBytes = 256 * 1024

/** A topic of the compiled catalog. */
export interface CatalogTopic {
  name: string
  description: string
  /** The JSON Schema of `data` (given, or derived from a Standard Schema), or null. */
  schema: JsonSchemaObject | null
  validation: ValidationMode
  deprecated: boolean
  replaced_by: string | null
  examples: unknown[]
  /** Both compiled: `first` stops at the first problem, `all` collects every one (only for invalid data). */
  validators?: { first: ValidateFunction; all: ValidateFunction }
}

/** What a check of `data` found: nothing (valid or unchecked), or the problems by path below `data`. */
export type SchemaProblems = { path: string; message: string }[]

// ajv-formats is CommonJS with its plugin as `default` too: the plugin whichever way the import resolves.
const formats = ((formatsPlugin as unknown as { default?: FormatsPlugin }).default ?? formatsPlugin) as unknown as FormatsPlugin

/** OpenAPI keywords a schema imported from an OpenAPI document may carry, known to the validator as annotations. */
const openApiKeywords = ['example', 'discriminator', 'xml', 'externalDocs']

function newValidator(allErrors: boolean): Ajv2020 {
  const ajv = new Ajv2020({ allErrors, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false, messages: true })
  formats(ajv)
  ajv.addVocabulary(openApiKeywords)
  return ajv
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)
const isStandard = (value: unknown): value is StandardSchemaLike =>
  (typeof value === 'object' || typeof value === 'function') && value !== null && '~standard' in value

/** A JSON Schema of a Standard Schema value, from its library's converter (loaded only for that library). */
async function jsonSchemaOf(schema: StandardSchemaLike): Promise<JsonSchemaObject | string> {
  const vendor = schema['~standard'].vendor
  if (vendor === 'valibot') {
    const { $schema: _dialect, ...json } = toJsonSchema(schema as never, { target: 'draft-2020-12', typeMode: 'input', errorMode: 'ignore' })
    return json as JsonSchemaObject
  }
  if (vendor === 'arktype') {
    const convert = (schema as unknown as { toJsonSchema?: () => JsonSchemaObject }).toJsonSchema
    if (typeof convert === 'function') return convert.call(schema)
  }
  if (vendor === 'zod') {
    const zod = await loadPeer<{ toJSONSchema?: (s: unknown, o?: object) => JsonSchemaObject }>('zod', 'a zod schema in the topic catalog').catch(() => undefined)
    if (zod?.toJSONSchema) {
      const { $schema: _dialect, ...json } = zod.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' })
      return json
    }
    return 'zod schemas need zod 4 (its toJSONSchema), or give jsonSchema beside the schema'
  }
  return `no JSON Schema converter for "${vendor}" schemas: give jsonSchema beside the schema`
}

/** The compiled topic, or what is wrong with its definition. */
async function compileTopic(name: string, definition: TopicDefinition, validators: { first: Ajv2020; all: Ajv2020 }, problems: ErrorData): Promise<CatalogTopic> {
  const at = `topics.${name}`
  let schema: JsonSchemaObject | null = null
  if (definition.jsonSchema) schema = definition.jsonSchema
  else if (isStandard(definition.schema)) {
    const derived = await jsonSchemaOf(definition.schema)
    if (typeof derived === 'string') problems[`${at}.schema`] = derived
    else schema = derived
  } else if (isObject(definition.schema)) schema = definition.schema
  const topic: CatalogTopic = {
    name,
    description: definition.description ?? '',
    schema,
    validation: definition.validation ?? (schema ? 'enforce' : 'off'),
    deprecated: definition.deprecated ?? definition.replaced_by !== undefined,
    replaced_by: definition.replaced_by ?? null,
    examples: definition.examples ?? [],
  }
  if (!schema) {
    if (topic.validation !== 'off' && !problems[`${at}.schema`]) problems[`${at}.validation`] = `"${topic.validation}" needs a schema`
    return topic
  }
  if (JSON.stringify(schema).length > maxSchemaBytes) {
    problems[`${at}.schema`] = `larger than ${maxSchemaBytes / 1024} KiB as JSON`
    return topic
  }
  try {
    topic.validators = { first: validators.first.compile(schema), all: validators.all.compile(schema) }
  } catch (err) {
    problems[`${at}.schema`] = `not a valid JSON Schema (draft 2020-12): ${(err as Error).message}`
    return topic
  }
  topic.examples.forEach((example, i) => {
    if (!topic.validators!.first(example)) problems[`${at}.examples.${i}`] = `does not match the schema: ${describeErrors(topic.validators!.all, example)}`
  })
  return topic
}

function describeErrors(validate: ValidateFunction, data: unknown): string {
  validate(data)
  return toProblems(validate.errors ?? []).slice(0, 3).map((p) => `${p.path || '(data)'} ${p.message}`).join('; ')
}

/** A JSON Pointer below `data` as dotted path segments (`/items/0/sku` -> `.items.0.sku`). */
function dotted(pointer: string): string {
  return pointer === '' ? '' : pointer.split('/').slice(1).map((s) => `.${s.replace(/~1/g, '/').replace(/~0/g, '~')}`).join('')
}

/** ajv's errors as problems by path, in the project's wording where it has one. */
function toProblems(errors: ErrorObject[]): SchemaProblems {
  const seen = new Set<string>()
  const problems: SchemaProblems = []
  for (const e of errors) {
    let path = dotted(e.instancePath)
    let message = e.message ?? 'is invalid'
    if (e.keyword === 'required') (path += `.${(e.params as { missingProperty: string }).missingProperty}`), (message = 'required')
    else if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties')
      (path += `.${(e.params as { additionalProperty?: string; unevaluatedProperty?: string }).additionalProperty ?? (e.params as { unevaluatedProperty: string }).unevaluatedProperty}`), (message = 'unexpected field')
    else if (e.keyword === 'enum') message = `must be one of ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`
    if (seen.has(path)) continue
    seen.add(path)
    problems.push({ path, message })
  }
  return problems
}

/**
 * The engine's topic catalog: the names it allows and, for topics with a schema, their compiled validators.
 * Without a catalog the engine has none (every topic allowed, nothing checked).
 */
export class Catalog {
  readonly #topics: Map<string, CatalogTopic>
  readonly #warnedAt = new Map<string, number>()

  constructor(topics: CatalogTopic[]) {
    this.#topics = new Map(topics.map((t) => [t.name, t]))
  }

  get names(): string[] {
    return [...this.#topics.keys()]
  }

  get(name: string): CatalogTopic | undefined {
    return this.#topics.get(name)
  }

  /** Every topic, in catalog order. */
  topics(): CatalogTopic[] {
    return [...this.#topics.values()]
  }

  /**
   * Check `data` against its topic's schema: undefined when valid or not checked (`off`, no schema, unknown
   * topic), else the problems found (at most `maxReportedProblems`, plus one saying how many were left out).
   */
  check(name: string, data: unknown): SchemaProblems | undefined {
    const topic = this.#topics.get(name)
    if (!topic?.validators || topic.validation === 'off') return undefined
    if (topic.validators.first(data)) return undefined
    const { all } = topic.validators
    all(data)
    const problems = toProblems(all.errors ?? [])
    if (problems.length > maxReportedProblems) {
      const left = problems.length - maxReportedProblems
      return [...problems.slice(0, maxReportedProblems), { path: '', message: `${left} more problem${left === 1 ? '' : 's'} not listed` }]
    }
    return problems.length ? problems : [{ path: '', message: 'does not match the topic schema' }]
  }

  /** Whether a warning about invalid `topic` events is due (once per topic per minute); records it when so. */
  warnDue(topic: string, now: number): boolean {
    const last = this.#warnedAt.get(topic)
    if (last !== undefined && now - last < 60_000) return false
    this.#warnedAt.set(topic, now)
    return true
  }

  /** A topic as `GET /topics` shows it. */
  static info(topic: CatalogTopic): TopicInfo {
    const info: TopicInfo = {
      name: topic.name,
      description: topic.description,
      payload_schema: topic.schema,
      validation: topic.validation,
      deprecated: topic.deprecated,
      replaced_by: topic.replaced_by,
    }
    if (topic.examples.length) info.examples = topic.examples
    return info
  }
}

/**
 * Compile the `topics` option: names only (an allow-list, nothing validated) or the map form. Refuses an
 * invalid catalog with one 422 naming each topic and what is wrong: a pattern as a name, `replaced_by` naming
 * a topic outside the catalog, a schema the validator cannot compile, an example its schema refuses.
 *
 * @example
 * const catalog = await compileCatalog({ 'order.created': { schema: { type: 'object', required: ['id'] } } })
 */
export async function compileCatalog(option: TopicsOption | undefined): Promise<Catalog | undefined> {
  if (option === undefined) return undefined
  const entries: [string, TopicDefinition][] = Array.isArray(option) ? option.map((name: string) => [name, {}]) : Object.entries(option)
  const problems = errorData()
  const validators = { first: newValidator(false), all: newValidator(true) }
  const topics: CatalogTopic[] = []
  for (const [name, definition] of entries) {
    if (isTopicPattern(name)) problems[`topics.${name}`] = 'must be a concrete topic, not a pattern'
    else if (name === '' || /\s/.test(name)) problems[`topics.${name}`] = 'must be a non-empty topic without white space'
    topics.push(await compileTopic(name, definition, validators, problems))
  }
  const names = new Set(entries.map(([name]) => name))
  for (const topic of topics) {
    if (topic.replaced_by !== null && !names.has(topic.replaced_by)) problems[`topics.${topic.name}.replaced_by`] = `"${topic.replaced_by}" is not a topic of the catalog`
    else if (topic.replaced_by === topic.name) problems[`topics.${topic.name}.replaced_by`] = 'must name another topic'
  }
  if (Object.keys(problems).length)
    throw new OutflowError('validation', `invalid topic catalog: ${Object.entries(problems).map(([k, m]) => `${k}: ${m}`).join('; ')}`, { data: problems })
  return new Catalog(topics)
}
