import { OutflowError } from '../errors.js'
import type { JsonSchemaObject, TopicDefinition } from '../model/topic.js'

type JsonObject = Record<string, unknown>

const isObject = (value: unknown): value is JsonObject => typeof value === 'object' && value !== null && !Array.isArray(value)

/** The object a local `#/…` JSON Pointer names in `document`, or undefined. */
function resolvePointer(document: JsonObject, ref: string): unknown {
  if (!ref.startsWith('#/')) return undefined
  let node: unknown = document
  for (const raw of ref.slice(2).split('/')) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~')
    if (!isObject(node) && !Array.isArray(node)) return undefined
    node = (node as JsonObject)[key]
  }
  return node
}

/** `value`, or what its `$ref` names (request bodies and path items may be references). */
function deref(document: JsonObject, value: unknown, depth = 0): unknown {
  if (depth > 20 || !isObject(value) || typeof value.$ref !== 'string') return value
  return deref(document, resolvePointer(document, value.$ref), depth + 1)
}

const componentRef = /^#\/components\/schemas\/(.+)$/

/**
 * A JSON Schema of its own: references to `components.schemas` become `$defs` (each referenced
 * component, transitively, copied in once), and OpenAPI `x-` extensions are dropped (they are not JSON Schema).
 */
function standalone(document: JsonObject, schema: unknown): JsonSchemaObject {
  const components = (isObject(document.components) && isObject(document.components.schemas) ? document.components.schemas : {}) as JsonObject
  const defs: JsonObject = {}
  const pending: string[] = []
  const nameOf = (ref: string) => decodeURIComponent(componentRef.exec(ref)![1]!).replace(/~1/g, '/').replace(/~0/g, '~')
  // A body that is only a reference to a component is that component (a reference back to it is `#`).
  const rootRef = isObject(schema) && Object.keys(schema).length === 1 && typeof schema.$ref === 'string' && componentRef.test(schema.$ref) ? nameOf(schema.$ref) : undefined
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite)
    if (!isObject(node)) return node
    const out: JsonObject = {}
    for (const [key, value] of Object.entries(node)) {
      if (key.startsWith('x-')) continue
      const match = key === '$ref' && typeof value === 'string' ? componentRef.exec(value) : null
      if (match) {
        const name = nameOf(value as string)
        if (name === rootRef) {
          out.$ref = '#'
          continue
        }
        if (!(name in components)) throw new OutflowError('validation', `topicsFromOpenAPI: ${value} is not in components.schemas`, { data: { [String(value)]: 'unknown reference' } })
        if (!(name in defs)) ((defs[name] = true), pending.push(name))
        out.$ref = `#/$defs/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`
      } else out[key] = rewrite(value)
    }
    return out
  }
  if (rootRef !== undefined && !(rootRef in components))
    throw new OutflowError('validation', `topicsFromOpenAPI: #/components/schemas/${rootRef} is not in components.schemas`, { data: { [rootRef]: 'unknown reference' } })
  const root = rewrite(rootRef === undefined ? schema : components[rootRef]) as JsonSchemaObject
  while (pending.length) {
    const name = pending.shift()!
    defs[name] = rewrite(components[name])
  }
  return Object.keys(defs).length ? { ...root, $defs: { ...(isObject(root.$defs) ? root.$defs : {}), ...defs } } : root
}

/** The examples of a media type object: `example`, or each of `examples` (values inline or referenced). */
function examplesOf(document: JsonObject, media: JsonObject): unknown[] {
  if (media.example !== undefined) return [media.example]
  if (!isObject(media.examples)) return []
  return Object.values(media.examples)
    .map((e) => deref(document, e))
    .flatMap((e) => (isObject(e) && 'value' in e ? [e.value] : []))
}

/**
 * A topic catalog from an OpenAPI 3.1 document's `webhooks` (Svix's, Outpost's or Outflow's own): each
 * webhook is a topic named by its key, its JSON request body's schema (with the `components.schemas` it
 * references, as `$defs`) the topic's schema, with its description, examples and deprecation.
 *
 * @example
 * const outflow = await createOutflow({ storage, topics: topicsFromOpenAPI(JSON.parse(readFileSync('openapi.json', 'utf8'))) })
 */
export function topicsFromOpenAPI(document: unknown): Record<string, TopicDefinition<JsonSchemaObject>> {
  if (!isObject(document) || typeof document.openapi !== 'string' || !document.openapi.startsWith('3.1'))
    throw new OutflowError('validation', 'topicsFromOpenAPI: not an OpenAPI 3.1 document (its `openapi` must be 3.1.x)', { data: { openapi: 'must be 3.1.x' } })
  if (!isObject(document.webhooks)) throw new OutflowError('validation', 'topicsFromOpenAPI: the document has no webhooks section', { data: { webhooks: 'required' } })
  const topics: Record<string, TopicDefinition<JsonSchemaObject>> = {}
  for (const [name, item] of Object.entries(document.webhooks)) {
    const pathItem = deref(document, item)
    if (!isObject(pathItem)) continue
    const operation = (['post', 'put', 'patch'].map((m) => pathItem[m]).find(isObject) ?? {}) as JsonObject
    const body = deref(document, operation.requestBody)
    const content = isObject(body) && isObject(body.content) ? body.content : {}
    const media = (content['application/json'] ?? Object.entries(content).find(([type]) => /json/.test(type))?.[1]) as JsonObject | undefined
    const topic: TopicDefinition<JsonSchemaObject> = {}
    const description = operation.description ?? pathItem.description
    if (typeof description === 'string') topic.description = description
    // `{ type: 'object' }` says only "any JSON object": what a topic without schema is.
    const anyObject = isObject(media?.schema) && Object.keys(media.schema).length === 1 && media.schema.type === 'object'
    if (isObject(media) && media.schema !== undefined && !anyObject) topic.schema = standalone(document, media.schema)
    const examples = isObject(media) ? examplesOf(document, media) : []
    if (examples.length) topic.examples = examples
    if (operation.deprecated === true) topic.deprecated = true
    const validation = operation['x-outflow-validation']
    if (validation === 'off' || validation === 'warn' || validation === 'enforce') topic.validation = validation
    const replacedBy = operation['x-outflow-replaced-by']
    if (typeof replacedBy === 'string') topic.replaced_by = replacedBy
    topics[name] = topic
  }
  return topics
}
