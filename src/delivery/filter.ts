import { isDeepStrictEqual } from 'node:util'
import type { ErrorData } from '../errors.js'

/** What a destination filter is matched against (DESIGN §3). */
export interface FilterSubject {
  id: string
  topic: string
  time: string
  metadata: Record<string, string>
  data: unknown
}

/** The operators a filter may use, at any level. */
export const filterOperators = [
  '$eq',
  '$neq',
  '$gt',
  '$gte',
  '$lt',
  '$lte',
  '$in',
  '$nin',
  '$exist',
  '$startsWith',
  '$endsWith',
  '$or',
  '$and',
  '$not',
] as const
type FilterOperator = (typeof filterOperators)[number]

/** Deeper filters are refused so matching can never exhaust the stack. */
const MAX_DEPTH = 32

type Json = Record<string, unknown>

function isPlainObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function isOperator(key: string): key is FilterOperator {
  return (filterOperators as readonly string[]).includes(key)
}

/** What is wrong with the argument of `op`, or null when it is acceptable. */
function operatorArgumentError(op: FilterOperator, arg: unknown): string | null {
  switch (op) {
    case '$in':
    case '$nin':
      return Array.isArray(arg) ? null : `${op} needs an array`
    case '$or':
    case '$and':
      return Array.isArray(arg) && arg.length > 0 && arg.every(isPlainObject) ? null : `${op} needs a non-empty array of objects`
    case '$not':
      return isPlainObject(arg) ? null : '$not needs an object'
    case '$exist':
      return typeof arg === 'boolean' ? null : '$exist needs a boolean'
    case '$startsWith':
    case '$endsWith':
      return typeof arg === 'string' ? null : `${op} needs a string`
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte':
      return (typeof arg === 'number' && Number.isFinite(arg)) || typeof arg === 'string' ? null : `${op} needs a number or a string`
    default:
      return null
  }
}

function validateObject(filter: Json, path: string, depth: number, errors: ErrorData): void {
  if (depth > MAX_DEPTH) {
    errors[path] ??= `must not be nested deeper than ${MAX_DEPTH} levels`
    return
  }
  for (const [key, value] of Object.entries(filter)) {
    const at = `${path}.${key}`
    if (key.startsWith('$')) {
      if (!isOperator(key)) {
        errors[at] ??= 'unknown operator'
        continue
      }
      const problem = operatorArgumentError(key, value)
      if (problem) errors[at] ??= problem
      else if (key === '$not') validateObject(value as Json, at, depth + 1, errors)
      else if (key === '$or' || key === '$and') (value as Json[]).forEach((sub, i) => validateObject(sub, `${at}.${i}`, depth + 1, errors))
    } else if (isPlainObject(value)) {
      validateObject(value, at, depth + 1, errors)
    }
  }
}

/**
 * Check a destination filter; returns a map from dotted path to what is wrong, or null when valid.
 *
 * @example
 * validateFilter({ data: { amount: { $gt: true } } }) // { 'filter.data.amount.$gt': '$gt needs a number or a string' }
 */
export function validateFilter(filter: unknown, prefix = 'filter'): ErrorData | null {
  if (!isPlainObject(filter)) return { [prefix]: 'must be an object' }
  const errors: ErrorData = {}
  validateObject(filter, prefix, 0, errors)
  return Object.keys(errors).length > 0 ? errors : null
}

/** `$eq` semantics: deep equality, or for an array field, containing an equal element. */
function equalsOrContains(field: unknown, value: unknown): boolean {
  if (isDeepStrictEqual(field, value)) return true
  return Array.isArray(field) && field.some((element) => isDeepStrictEqual(element, value))
}

/** Ordering is defined between two numbers or two strings (ISO timestamps compare correctly as strings). */
function compare(field: unknown, bound: unknown, test: (order: number) => boolean): boolean {
  const single = (x: unknown): boolean => {
    if (typeof x === 'number' && typeof bound === 'number') return test(x - bound)
    if (typeof x === 'string' && typeof bound === 'string') return test(x < bound ? -1 : x > bound ? 1 : 0)
    return false
  }
  return single(field) || (Array.isArray(field) && field.some(single))
}

/** A string test applied to a string field, or to any string element of an array field. */
function someString(field: unknown, test: (s: string) => boolean): boolean {
  if (typeof field === 'string') return test(field)
  return Array.isArray(field) && field.some((x) => typeof x === 'string' && test(x))
}

/** Apply one operator to the value at the current level. Negative operators negate their positive twin. */
function matchOperator(op: FilterOperator, arg: unknown, value: unknown): boolean {
  switch (op) {
    case '$eq':
      return equalsOrContains(value, arg)
    case '$neq':
      return !equalsOrContains(value, arg)
    case '$gt':
      return compare(value, arg, (o) => o > 0)
    case '$gte':
      return compare(value, arg, (o) => o >= 0)
    case '$lt':
      return compare(value, arg, (o) => o < 0)
    case '$lte':
      return compare(value, arg, (o) => o <= 0)
    case '$in':
      return Array.isArray(arg) && arg.some((candidate) => equalsOrContains(value, candidate))
    case '$nin':
      return !(Array.isArray(arg) && arg.some((candidate) => equalsOrContains(value, candidate)))
    case '$exist':
      return (value !== undefined) === arg
    case '$startsWith':
      return typeof arg === 'string' && someString(value, (s) => s.startsWith(arg))
    case '$endsWith':
      return typeof arg === 'string' && someString(value, (s) => s.endsWith(arg))
    case '$or':
      return Array.isArray(arg) && arg.some((sub) => isPlainObject(sub) && matchObject(sub, value))
    case '$and':
      return Array.isArray(arg) && arg.every((sub) => isPlainObject(sub) && matchObject(sub, value))
    case '$not':
      return isPlainObject(arg) && !matchObject(arg, value)
  }
}

/** Match the condition on one field: an object recurses, anything else is `$eq`. */
function matchField(condition: unknown, field: unknown): boolean {
  if (!isPlainObject(condition)) return equalsOrContains(field, condition)
  // Nested keys on an array of objects: one element must satisfy the whole sub-filter.
  const hasNestedKeys = Object.keys(condition).some((key) => !key.startsWith('$'))
  if (hasNestedKeys && Array.isArray(field)) return field.some((element) => matchObject(condition, element))
  return matchObject(condition, field)
}

/** Every key of `filter` must hold for `value` (keys are ANDed). */
function matchObject(filter: Json, value: unknown): boolean {
  for (const [key, condition] of Object.entries(filter)) {
    if (key.startsWith('$')) {
      if (!isOperator(key) || !matchOperator(key, condition, value)) return false
      continue
    }
    // Reached through $or/$and/$not on an array level: any element may carry the key.
    const ok = Array.isArray(value)
      ? value.some((element) => isPlainObject(element) && matchField(condition, element[key]))
      : matchField(condition, isPlainObject(value) ? value[key] : undefined)
    if (!ok) return false
  }
  return true
}

/**
 * Whether an event passes a destination filter; `{}` matches everything. Assumes `validateFilter` passed.
 *
 * @example
 * matchesFilter({ data: { amount: { $gte: 100 } } }, { id, topic, time, metadata: {}, data: { amount: 250 } }) // true
 */
export function matchesFilter(filter: Record<string, unknown>, subject: FilterSubject): boolean {
  return matchObject(filter, subject)
}
