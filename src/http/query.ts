import * as v from 'valibot'
import { OutflowError } from '../errors.js'
import { issuesToData, parseInput } from '../model/common.js'

/** Query parameters by wire name (`created_at[gte]` stays one key); a repeated name becomes an array. */
export type QueryRecord = Record<string, string | string[]>

/**
 * Collect URL search parameters, keeping repeated names (`?topic=a&topic=b`) as arrays.
 *
 * @example
 * queryRecord(new URLSearchParams('topic=a&topic=b&limit=5')) // { topic: ['a', 'b'], limit: '5' }
 */
export function queryRecord(search: URLSearchParams): QueryRecord {
  // No prototype: a parameter named `__proto__`, `constructor` or `toString` is a key like any other
  // (on a plain object the first would replace the prototype and the others read inherited functions).
  const query = Object.create(null) as QueryRecord
  for (const [name, value] of search) {
    const seen = query[name]
    // Appended in place: copying the list on each repeat would cost quadratic time in the repeats.
    if (Array.isArray(seen)) seen.push(value)
    else query[name] = seen === undefined ? value : [seen, value]
  }
  return query
}

/** A query in OpenAPI's deepObject style, its bracketed names turned into objects and arrays. */
export interface NestedQuery {
  [name: string]: string | string[] | NestedQuery
}

/** One name's values under every notation: plain (`a=x`), appended (`a[]=x`), indexed (`a[0]=x`), or keyed (`a[k]=x`). */
interface QueryNode {
  plain: string[]
  appended: string[]
  indexed: [index: number, value: string][]
  keyed: Map<string, QueryNode>
}

const newNode = (): QueryNode => ({ plain: [], appended: [], indexed: [], keyed: new Map() })

function materialize(node: QueryNode, name: string): string | string[] | NestedQuery {
  const list = [...node.indexed.sort(([a], [b]) => a - b).map(([, value]) => value), ...node.appended, ...node.plain]
  if (node.keyed.size === 0) return node.indexed.length === 0 && node.appended.length === 0 && list.length === 1 ? list[0]! : list
  if (list.length > 0) throw new OutflowError('bad_request', 'invalid query parameter', { data: { [name]: 'given both as a value and as an object' } })
  return Object.fromEntries([...node.keyed].map(([key, child]) => [key, materialize(child, `${name}[${key}]`)]))
}

/**
 * Read bracketed parameter names the way Outpost's API does: `time[start]=…` as an object, and
 * `measures[0]=a&measures[1]=b`, `measures[]=a` or repeated `measures=a` as a list.
 *
 * @example
 * nestQuery({ 'time[start]': 't0', 'measures[0]': 'count', 'filters[topic][]': 'a' })
 * // { time: { start: 't0' }, measures: ['count'], filters: { topic: ['a'] } }
 */
export function nestQuery(query: QueryRecord): NestedQuery {
  const root = newNode()
  for (const [name, values] of Object.entries(query)) {
    const match = /^([^[\]]+)((?:\[[^[\]]*\])*)$/.exec(name)
    const path = match ? [match[1]!, ...[...match[2]!.matchAll(/\[([^[\]]*)\]/g)].map((m) => m[1]!)] : [name]
    let node = root
    for (const key of path.slice(0, -1)) node = node.keyed.get(key) ?? node.keyed.set(key, newNode()).get(key)!
    const last = path.at(-1)!
    const list = Array.isArray(values) ? values : [values]
    if (path.length > 1 && last === '') node.appended.push(...list)
    else if (path.length > 1 && /^\d{1,6}$/.test(last)) node.indexed.push(...list.map((value): [number, string] => [Number(last), value]))
    else (node.keyed.get(last) ?? node.keyed.set(last, newNode()).get(last)!).plain.push(...list)
  }
  return Object.fromEntries([...root.keyed].map(([key, child]) => [key, materialize(child, key)]))
}

/**
 * Check a query against a route's schema; a bad or unknown parameter is a 400 whose `data` names it.
 * The raw record is returned, since the engine parses the same schema again. A `deepObject` route's
 * schema describes the nested query, and errors name parameters in bracket notation.
 *
 * @example
 * validateQuery(ListTenantsQuerySchema, { limit: '500' }) // throws 400 { data: { limit: 'must be an integer between 1 and 100' } }
 */
export function validateQuery(schema: v.GenericSchema, query: QueryRecord, style: 'form' | 'deepObject' = 'form'): QueryRecord {
  if (style === 'deepObject') parseInput(schema, nestQuery(query), { code: 'bad_request', brackets: true })
  else parseInput(schema, query, { code: 'bad_request' })
  return query
}

/**
 * Check path parameters against their schemas; a bad value is a 400 naming the parameter.
 *
 * @example
 * validateParams({ type: SchemaPathTypeSchema }, { type: 'cloudz_pubsub' }) // throws 400 { data: { type: 'must be one of …' } }
 */
export function validateParams(schemas: Record<string, v.GenericSchema>, params: Record<string, string>): void {
  for (const [name, schema] of Object.entries(schemas)) {
    const result = v.safeParse(schema, params[name])
    if (!result.success) throw new OutflowError('bad_request', 'invalid path parameter', { data: issuesToData(result.issues, name) })
  }
}
