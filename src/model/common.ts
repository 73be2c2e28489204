import * as v from 'valibot'
import { OutflowError, type ErrorData } from '../errors.js'

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

function withinJsonDepth<T>() {
  return v.check<T, string>((x) => !nestsDeeperThan(x, maxJsonDepth), tooDeepMessage)
}

/**
 * The first step of every object schema here: a JSON object, not an array (valibot's object and record schemas
 * accept arrays) and not null. The OpenAPI document describes it as `{ "type": "object" }`.
 */
export const ObjectCheck = v.custom<unknown>((x) => typeof x === 'object' && x !== null && !Array.isArray(x), 'must be a JSON object')

/** A JSON object (not an array, not null), nested at most `maxJsonDepth` levels. */
export const JsonObjectSchema = v.pipe(
  ObjectCheck,
  v.record(v.string(), v.unknown()),
  withinJsonDepth<Record<string, unknown>>(),
)

/** Any JSON value nested at most `maxJsonDepth` levels (config and credentials, checked by their type afterwards). */
export const JsonValueSchema = v.pipe(v.unknown(), withinJsonDepth<unknown>())
export type JsonObject = Record<string, unknown>

/**
 * A request body object. valibot's object schemas accept arrays (their indexes become unexpected
 * keys), so a JSON array is refused first with one clear message.
 */
export function objectBody<S extends v.GenericSchema>(schema: S) {
  return v.pipe(ObjectCheck, schema)
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

/** A flat map of string values, e.g. metadata sent as headers. */
export const StringMapSchema = v.record(v.string(), v.string('values must be strings'), 'must be an object of strings')

/** An RFC 3339 date-time, accepted as a string (or a Date from typed callers). */
export const DateTimeSchema = v.union(
  [
    v.pipe(
      v.string(),
      v.check((s) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)), 'must be an RFC 3339 date-time'),
      v.transform((s) => new Date(s)),
    ),
    v.pipe(v.date(), v.check((d) => !Number.isNaN(d.getTime()), 'must be a valid date')),
  ],
  'must be an RFC 3339 date-time',
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
)

/**
 * Path of a valibot issue: dotted for bodies (`config.url`, `topics.1`), or in the bracket notation
 * of deepObject query parameters (`time[start]`, `filters[topic][1]`).
 */
function issuePath(issue: v.BaseIssue<unknown>, prefix: string, brackets: boolean): string {
  const keys = [prefix, ...(issue.path ?? []).map((p) => String(p.key))].filter(Boolean)
  if (brackets) return keys.length === 0 ? '(query)' : keys[0]! + keys.slice(1).map((k) => `[${k}]`).join('')
  return keys.join('.') || '(body)'
}

/** Turn valibot issues into the `data` map of an error body (first message per field). */
export function issuesToData(issues: readonly v.BaseIssue<unknown>[], prefix = '', brackets = false): ErrorData {
  const data: ErrorData = {}
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
