import * as v from 'valibot'
import { errorData, OutflowError, type ErrorData } from '../errors.js'

/** Client-supplied ids: 1–128 characters of `[A-Za-z0-9_.:-]`. */
export const IdSchema = v.pipe(
  v.string('must be a string'),
  v.minLength(1, 'must not be empty'),
  v.maxLength(128, 'must be at most 128 characters'),
  v.regex(/^[A-Za-z0-9_.:-]+$/, 'may only contain letters, digits, "_", ".", ":" and "-"'),
)

/** How many levels objects and arrays may nest in a free-form JSON field (`{}` is one level). */
export const maxJsonDepth = 32

/**
 * Whether objects and arrays in `value` nest deeper than `limit` levels. Iterative and stops at the
 * first level past the limit, so a value of any depth (or a cycle) is safe to check; JSON.stringify
 * and structuredClone recurse and overflow the stack at a few thousand levels.
 *
 * @example
 * nestsDeeperThan({ a: [{}] }, 2) // true
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: [value: unknown, depth: number][] = [[value, 0]]
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!
    if (typeof item !== 'object' || item === null) continue
    if (depth === limit) return true
    for (const child of Object.values(item)) pending.push([child, depth + 1])
  }
  return false
}

/** The message for a field nested deeper than `maxJsonDepth`. */
export const tooDeepMessage = `nested deeper than ${maxJsonDepth} levels`

// U+0000 and unpaired UTF-16 surrogates: Postgres refuses both in text and jsonb (a 500 if they got
// that far), and SQLite would store a surrogate as U+FFFD. Every stored string is held to this on
// every storage, so a value is accepted or refused alike whichever database is behind the API.
const unstorableText = /\x00|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/

/** The message for a string with U+0000 or an unpaired surrogate. */
export const unstorableTextMessage = 'must not contain NUL characters (U+0000) or unpaired UTF-16 surrogates'

/**
 * Whether every storage keeps `text` exactly: no U+0000, no unpaired surrogate. Linear in its length.
 *
 * @example
 * isStorableText('a\u0000b') // false
 */
export function isStorableText(text: string): boolean {
  return !unstorableText.test(text)
}

/** A string check for text that is stored or compared against stored text (see isStorableText). */
export function storableText() {
  return v.check<string, string>(isStorableText, unstorableTextMessage)
}

/** What is wrong with a free-form JSON value, and where (its keys from the field down), if anything. */
export interface JsonProblem {
  message: string
  path: string[]
}

interface JsonNode {
  value: unknown
  depth: number
  key?: string
  parent?: JsonNode
}

function pathOf(node: JsonNode): string[] {
  const keys: string[] = []
  for (let at: JsonNode | undefined = node; at?.key !== undefined; at = at.parent) keys.push(at.key)
  return keys.reverse()
}

/**
 * The first reason storage could not keep `value` as sent: objects and arrays nested deeper than
 * `limit` levels (reported on the field itself), or a key or string that is not storable text (with
 * its path). Iterative, so any depth or a cycle is safe; each node is visited once.
 *
 * @example
 * jsonProblem({ a: { b: 'x\u0000' } }) // { message: 'must not contain NUL …', path: ['a', 'b'] }
 */
export function jsonProblem(value: unknown, limit = maxJsonDepth): JsonProblem | undefined {
  const pending: JsonNode[] = [{ value, depth: 0 }]
  while (pending.length > 0) {
    const node = pending.pop()!
    const item = node.value
    if (typeof item === 'string') {
      if (!isStorableText(item)) return { message: unstorableTextMessage, path: pathOf(node) }
      continue
    }
    if (typeof item !== 'object' || item === null) continue
    if (node.depth === limit) return { message: tooDeepMessage, path: [] }
    for (const [key, child] of Object.entries(item)) {
      const next: JsonNode = { value: child, depth: node.depth + 1, key, parent: node }
      if (!isStorableText(key)) return { message: unstorableTextMessage, path: pathOf(next) }
      pending.push(next)
    }
  }
  return undefined
}

/** The valibot check of jsonProblem: nesting within `maxJsonDepth`, every key and string storable. */
export function storableJson<T>() {
  return v.rawCheck<T>(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    const problem = jsonProblem(dataset.value)
    if (!problem) return
    const input = dataset.value
    const path = problem.path.map((key): v.UnknownPathItem => ({ type: 'unknown', origin: 'value', input, key, value: undefined }))
    addIssue(path.length > 0 ? { message: problem.message, path: path as [v.UnknownPathItem, ...v.UnknownPathItem[]] } : { message: problem.message })
  })
}

/** A JSON object: not an array, not null. valibot's object and record schemas accept arrays. */
export function isJsonObject(x: unknown): x is JsonObject {
  return typeof x === 'object' && x !== null && !Array.isArray(x)
}

/**
 * The first step of every object schema here: a JSON object, not an array (valibot's object and record schemas
 * accept arrays) and not null. The OpenAPI document describes it as `{ "type": "object" }`.
 */
export const ObjectCheck = v.custom<unknown>(isJsonObject, 'must be a JSON object')

/** ObjectCheck typed as the object it lets through; documented the same way. */
export const JsonObjectCheck = v.custom<JsonObject>(isJsonObject, 'must be a JSON object')

/**
 * A JSON object (not an array, not null) that storage keeps exactly: nested at most `maxJsonDepth`
 * levels, storable text throughout, and every key kept. valibot's record schema drops the keys
 * `__proto__`, `constructor` and `prototype`, so it is not used for values that are stored.
 */
export const JsonObjectSchema = v.pipe(JsonObjectCheck, storableJson<JsonObject>())

/** Any JSON value held to the same rules (config and credentials, checked by their type afterwards). */
export const JsonValueSchema = v.pipe(v.unknown(), storableJson<unknown>())
export type JsonObject = Record<string, unknown>

/** Key and value schemas of each objectOf schema, by its first pipe item, for the OpenAPI document. */
const objectOfItems = new WeakMap<object, { key: v.GenericSchema; value: v.GenericSchema }>()

/**
 * The key and value schemas an objectOf schema was made with, given the first item of its pipe
 * (where the OpenAPI converter asks), so it is documented as the record it stands for.
 */
export function objectOfItemsOf(schema: unknown): { key: v.GenericSchema; value: v.GenericSchema } | undefined {
  return typeof schema === 'object' && schema !== null ? objectOfItems.get(schema) : undefined
}

const StorableKeySchema = v.pipe(v.string(), storableText())

/**
 * A JSON object whose every key passes `key` and every value passes `value`: valibot's record without
 * its quirks. It keeps every key (record drops `__proto__`, `constructor` and `prototype`) and
 * refuses arrays (record reads their indexes as keys). Issues name the key (`metadata.<key>`).
 *
 * @example
 * objectOf(v.string(), 'must be an object of strings') // { constructor: 'x' } stays { constructor: 'x' }
 */
export function objectOf<V extends v.GenericSchema>(value: V, message: string, key: v.GenericSchema<string, string> = StorableKeySchema) {
  const head = v.custom<Record<string, unknown>>(isJsonObject, message)
  objectOfItems.set(head, { key, value })
  return v.pipe(
    head,
    v.rawTransform(({ dataset, addIssue }) => {
      const input = dataset.value
      const out: Record<string, v.InferOutput<V>> = {}
      for (const [name, item] of Object.entries(input)) {
        const at = (origin: 'key' | 'value'): v.ObjectPathItem => ({ type: 'object', origin, input, key: name, value: item })
        const keyCheck = v.safeParse(key, name)
        if (!keyCheck.success) addIssue({ message: keyCheck.issues[0].message, path: [at('key')] })
        const result = v.safeParse(value, item)
        if (!result.success) for (const issue of result.issues) addIssue({ message: issue.message, path: [at('value'), ...(issue.path ?? [])] })
        // Defined, not assigned: `out.__proto__ = …` would set the prototype instead of a key.
        else Object.defineProperty(out, name, { value: result.output, enumerable: true, writable: true, configurable: true })
      }
      return out
    }),
  )
}

/**
 * A request body object. valibot's object schemas accept arrays (their indexes become unexpected
 * keys), so a JSON array is refused first with one clear message.
 */
export function objectBody<S extends v.GenericSchema>(schema: S) {
  // Typed as the inner schema's input, so `InferInput` of a body (CreateDestinationInput, …) is what a caller sends.
  return v.pipe(ObjectCheck as v.CustomSchema<v.InferInput<S>, v.ErrorMessage<v.CustomIssue> | undefined>, schema)
}

/**
 * The object schema inside `objectBody(schema)` (optional or not), or `schema` itself: what a body is documented as.
 *
 * @example
 * bodyShape(CreateDestinationSchema) // the strict object of its fields
 */
export function bodyShape(schema: v.GenericSchema): v.GenericSchema {
  const { type, wrapped, pipe } = schema as { type: string; wrapped?: v.GenericSchema; pipe?: readonly v.GenericSchema[] }
  if (type === 'optional' && wrapped) return bodyShape(wrapped)
  return pipe?.[0] === ObjectCheck && pipe[1] ? pipe[1] : schema
}

/** A flat map of string values, e.g. metadata sent as headers; storable text throughout. */
export const StringMapSchema = objectOf(v.pipe(v.string('values must be strings'), storableText()), 'must be an object of strings')

/** The instants every storage keeps exactly: years 0001 to 9999 (UTC), what RFC 3339 can write. */
export const dateRange = { min: Date.parse('0001-01-01T00:00:00.000Z'), max: Date.parse('9999-12-31T23:59:59.999Z') } as const

/** The message for a date-time outside `dateRange`. */
export const dateRangeMessage = 'must be between 0001-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z'

/**
 * Whether `ms` is an instant within `dateRange`: Postgres writes years before 1 as BC, SQLite and
 * JavaScript as negative years, and toISOString writes years past 9999 with six digits.
 *
 * @example
 * isStorableInstant(Date.parse('0000-12-31T23:00:00Z')) // false
 */
export function isStorableInstant(ms: number): boolean {
  return Number.isFinite(ms) && ms >= dateRange.min && ms <= dateRange.max
}

const rfc3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i

/**
 * An RFC 3339 date-time within `dateRange`, accepted as a string (or a Date from typed callers). One
 * pipe rather than a union of the two: a union reports only its own message, so a date out of range
 * would read "must be an RFC 3339 date-time".
 */
export const DateTimeSchema = v.pipe(
  v.union([v.string(), v.date()], 'must be an RFC 3339 date-time'),
  v.rawTransform(({ dataset, addIssue, NEVER }) => {
    const value = dataset.value
    const ms = typeof value === 'string' ? (rfc3339.test(value) ? Date.parse(value) : Number.NaN) : value.getTime()
    if (Number.isNaN(ms)) addIssue({ message: typeof value === 'string' ? 'must be an RFC 3339 date-time' : 'must be a valid date' })
    // An offset can move a date written within the range out of it (`9999-12-31T23:00:00-02:00`).
    else if (!isStorableInstant(ms)) addIssue({ message: dateRangeMessage })
    else return new Date(ms)
    return NEVER
  }),
)

export const DirSchema = v.picklist(['asc', 'desc'], 'must be "asc" or "desc"')

/** A query integer: a number or a decimal string, within bounds. */
export function queryInt(min: number, max: number) {
  return v.pipe(
    v.union([v.number(), v.pipe(v.string(), v.regex(/^-?\d+$/), v.transform(Number))], `must be an integer between ${min} and ${max}`),
    v.integer(`must be an integer between ${min} and ${max}`),
    v.minValue(min, `must be an integer between ${min} and ${max}`),
    v.maxValue(max, `must be an integer between ${min} and ${max}`),
  )
}

/** A query value that may repeat: `?topic=a&topic=b` or a single string. Always returned as an array. */
export const RepeatedStringSchema = v.pipe(
  v.union([v.string(), v.array(v.string())], 'must be a string or a list of strings'),
  v.transform((x) => (Array.isArray(x) ? x : [x])),
  // Compared with stored text: Postgres refuses U+0000 in a parameter as it does in a row.
  v.check((list) => list.every(isStorableText), unstorableTextMessage),
)

/**
 * Path of a valibot issue: dotted for bodies (`config.url`, `topics.1`), or in the bracket notation
 * of deepObject query parameters (`time[start]`, `filters[topic][1]`).
 */
function issuePath(issue: v.BaseIssue<unknown>, prefix: string, brackets: boolean): string {
  // An empty key or parameter name is named `""`, not left out (which would blame the parent).
  const keys = [...(prefix ? [prefix] : []), ...(issue.path ?? []).map((p) => String(p.key) || '""')]
  if (brackets) return keys.length === 0 ? '(query)' : keys[0]! + keys.slice(1).map((k) => `[${k}]`).join('')
  return keys.join('.') || '(body)'
}

/** Turn valibot issues into the `data` map of an error body (first message per field). */
export function issuesToData(issues: readonly v.BaseIssue<unknown>[], prefix = '', brackets = false): ErrorData {
  const data = errorData()
  for (const issue of issues) {
    const path = issuePath(issue, prefix, brackets)
    let message = issue.message
    // valibot puts an unexpected key at the end of the path already; say what is wrong with it.
    if (issue.type === 'strict_object' && issue.input !== undefined) message = 'unexpected field'
    if (issue.kind === 'schema' && issue.input === undefined && issue.expected !== 'never') message = 'required'
    data[path] ??= message
  }
  return data
}

/**
 * Parse `input` with `schema` or throw an OutflowError (`validation` for bodies, `bad_request` for queries).
 *
 * @example
 * const body = parseInput(CreateTenantSchema, input)
 */
export function parseInput<S extends v.GenericSchema>(
  schema: S,
  input: unknown,
  { code = 'validation', prefix = '', brackets = false }: { code?: 'validation' | 'bad_request'; prefix?: string; brackets?: boolean } = {},
): v.InferOutput<S> {
  const result = v.safeParse(schema, input)
  if (result.success) return result.output
  const data = issuesToData(result.issues, prefix, brackets)
  throw new OutflowError(code, code === 'validation' ? 'validation error' : 'invalid query parameter', { data })
}
