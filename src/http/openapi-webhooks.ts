import type { TopicInfo } from '../model/topic.js'

type JsonObject = Record<string, unknown>

// The OpenAPI 3.1 `webhooks` section: for receivers, one entry per catalog topic describing the request a
// webhook destination sends for it (the body is the event's `data`, the headers are Standard Webhooks').

const header = (name: string, description: string, required = true) => ({ name, in: 'header', required, description, schema: { type: 'string' } })

const webhookHeaders = [
  header('webhook-id', 'The event id (the same on every attempt): use it to drop duplicates.'),
  header('webhook-timestamp', 'When the attempt was signed, in Unix seconds.'),
  header('webhook-signature', 'Standard Webhooks signatures: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">`, one per active secret, space-separated.'),
  header('x-outflow-event-id', 'The event id (event metadata).'),
  header('x-outflow-topic', 'The topic.'),
  header('x-outflow-timestamp', 'The event time (event metadata).'),
  // Sent only by destinations with a compatible_signature, for receivers written for another provider.
  ...['svix-id', 'svix-timestamp', 'svix-signature'].map((name) => header(name, `With compatible_signature svix: as ${name.replace('svix-', 'webhook-')}.`, false)),
  header('x-hub-signature-256', 'With compatible_signature github: `sha256=<hex HMAC-SHA256 of the body>`.', false),
  header('stripe-signature', 'With compatible_signature stripe: `t=<timestamp>,v1=<hex HMAC-SHA256 of "timestamp.body">`.', false),
  header('x-outpost-signature', 'With compatible_signature outpost: `v0=<hex HMAC-SHA256 of the body>`, beside x-outpost-timestamp, x-outpost-event-id and x-outpost-topic.', false),
]

/** `order.created` -> `OrderCreatedData`: a component name per topic, unique in the document. */
function componentName(topic: string, taken: Set<string>): string {
  const base = `${topic.split(/[^A-Za-z0-9]+/).filter(Boolean).map((w) => w[0]!.toUpperCase() + w.slice(1)).join('') || 'Topic'}Data`
  let name = base
  for (let i = 2; taken.has(name); i++) name = `${base}${i}`
  taken.add(name)
  return name
}

/** `schema` with its `$defs` moved out (renamed `prefix.name`) and references to them (and to itself) made document references. */
function hoist(schema: JsonObject, name: string, components: Record<string, unknown>): JsonObject {
  const { $schema: _dialect, $id: _id, $defs, definitions, ...root } = schema as JsonObject & { $defs?: JsonObject; definitions?: JsonObject }
  const rewrite = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(rewrite)
    if (typeof node !== 'object' || node === null) return node
    return Object.fromEntries(
      Object.entries(node).map(([key, value]) => {
        if (key !== '$ref' || typeof value !== 'string') return [key, rewrite(value)]
        if (value === '#') return [key, `#/components/schemas/${name}`]
        const local = /^#\/(\$defs|definitions)\/(.+)$/.exec(value)
        return [key, local ? `#/components/schemas/${name}.${local[2]}` : value]
      }),
    )
  }
  for (const [def, value] of Object.entries({ ...(definitions ?? {}), ...($defs ?? {}) })) components[`${name}.${def}`] = rewrite(value)
  return rewrite(root) as JsonObject
}

/** A topic's webhook: the request a webhook destination sends for it. */
function webhook(topic: TopicInfo, schemaName: string | undefined): JsonObject {
  const content: JsonObject = { schema: schemaName ? { $ref: `#/components/schemas/${schemaName}` } : { type: 'object' } }
  if (topic.examples?.length) content.examples = Object.fromEntries(topic.examples.map((value, i) => [`example${i + 1}`, { value }]))
  const replaced = topic.replaced_by ? `Deprecated: use ${topic.replaced_by}. ` : topic.deprecated ? 'Deprecated. ' : ''
  const post: JsonObject = {
    operationId: `webhook.${topic.name}`.replace(/[^A-Za-z0-9._~-]/g, '_'),
    summary: `${replaced}Topic ${topic.name}`,
    tags: ['Webhooks'],
    security: [],
    parameters: webhookHeaders,
    requestBody: {
      description: "The event's `data`. Verify the signature against the raw body before parsing it.",
      required: true,
      content: { 'application/json': content },
    },
    responses: {
      '200': { description: 'Received. Any 2xx status counts as a successful delivery.' },
      '410': { description: 'Gone: the destination is disabled and receives nothing more.' },
      '429': { description: 'Too many requests: the next attempt waits for `Retry-After`.' },
    },
  }
  if (topic.description) post.description = topic.description
  if (topic.deprecated) post.deprecated = true
  if (topic.replaced_by) post['x-outflow-replaced-by'] = topic.replaced_by
  // What topicsFromOpenAPI reads back, so a document round-trips to the same catalog.
  if (topic.payload_schema) post['x-outflow-validation'] = topic.validation
  return { post }
}

/**
 * The `webhooks` section for a catalog, and the component schemas it references (one per topic with a
 * payload schema, plus that schema's `$defs`).
 *
 * @example
 * const { webhooks, schemas } = topicWebhooks(await outflow.listTopics())
 */
export function topicWebhooks(topics: TopicInfo[], taken: Set<string>): { webhooks: JsonObject; schemas: Record<string, unknown> } {
  const webhooks: JsonObject = {}
  const schemas: Record<string, unknown> = {}
  for (const topic of topics) {
    let name: string | undefined
    if (topic.payload_schema) {
      name = componentName(topic.name, taken)
      schemas[name] = hoist(topic.payload_schema, name, schemas)
    }
    webhooks[topic.name] = webhook(topic, name)
  }
  return { webhooks, schemas }
}

/** The tag of the webhooks section. */
export const webhooksTag = {
  name: 'Webhooks',
  description: 'What a webhook destination receives: one request per event, per topic of the catalog, signed as Standard Webhooks.',
}
