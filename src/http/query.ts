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
  const query: QueryRecord = {}
  for (const [name, value] of search) {
    const seen = query[name]
    query[name] = seen === undefined ? value : Array.isArray(seen) ? [...seen, value] : [seen, value]
  }
  return query
}

/**
 * Check a query against a route's schema; a bad or unknown parameter is a 400 whose `data` names it.
 * The raw record is returned, since the engine parses the same schema again.
 *
 * @example
 * validateQuery(ListTenantsQuerySchema, { limit: '500' }) // throws 400 { data: { limit: 'must be an integer between 1 and 100' } }
 */
export function validateQuery(schema: v.GenericSchema, query: QueryRecord): QueryRecord {
  parseInput(schema, query, { code: 'bad_request' })
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
