import { readFileSync } from 'node:fs'
import { parse as parseYaml } from 'yaml'
import { topicsFromOpenAPI } from '../delivery/openapi-import.js'
import { OutflowError } from '../errors.js'

/**
 * The topic catalog of `OUTFLOW_TOPICS_FILE`: a JSON or YAML file holding the catalog (name -> definition),
 * a list of names, an object with either under `topics`, or an OpenAPI 3.1 document whose `webhooks` are
 * imported with topicsFromOpenAPI. A problem is a message for the variable instead.
 *
 * @example
 * readTopicsFile('./topics.yaml') // { 'order.created': { description: 'An order was placed', schema: { … } } }
 */
export function readTopicsFile(file: string): unknown {
  let text: string
  try {
    text = readFileSync(file, 'utf8')
  } catch (error) {
    return new Error((error as NodeJS.ErrnoException).code === 'ENOENT' ? `${file}: no such file` : `${file}: ${(error as Error).message}`)
  }
  let value: unknown
  try {
    // JSON is YAML too, but a .json file gets JSON's own error messages.
    value = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 })
  } catch (error) {
    return new Error(`${file}: not readable as ${/\.json$/i.test(file) ? 'JSON' : 'YAML or JSON'}: ${(error as Error).message}`)
  }
  if (typeof value === 'object' && value !== null && 'openapi' in value) {
    try {
      return topicsFromOpenAPI(value)
    } catch (error) {
      return new Error(`${file}: ${error instanceof OutflowError ? error.message : String(error)}`)
    }
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value) && 'topics' in value) return (value as { topics: unknown }).topics
  return value
}
