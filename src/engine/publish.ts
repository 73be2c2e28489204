import type { EventToWrite, EventWriter } from '../delivery/event-writer.js'
import { isTopicPattern } from '../delivery/topics.js'
import { OutflowError, type ErrorData } from '../errors.js'
import { newId } from '../ids.js'
import { parseInput } from '../model/common.js'
import { PublishSchema, type PublishResult } from '../model/event.js'
import type { EngineContext } from './context.js'

/** Options of `publish` and `publishMany`. */
export interface PublishOptions {
  /**
   * Postgres: your open transaction, in which the event is written (delivered once it commits, never if
   * it rolls back): the `tx` of postgres.js `sql.begin(async (tx) => …)`, or of drizzle's
   * `db.transaction(async (tx) => …)` over postgres.js, on the database (and server) of Outflow's storage.
   */
  tx?: object
}

/** Most events one publishMany call takes (one transaction). */
export const maxPublishBatch = 1000

function checkTopic(ctx: EngineContext, topic: string, path: string, data: ErrorData) {
  if (isTopicPattern(topic)) data[path] = 'must be a concrete topic, not a pattern'
  else if (ctx.options.topics && !ctx.options.topics.includes(topic)) data[path] = `"${topic}" is not one of the configured topics`
}

/**
 * Validate events, then record each with one delivery per matched destination (see EventWriter:
 * concurrent calls share one transaction). The local worker takes the new deliveries at once.
 */
export async function publishEvents(ctx: EngineContext, writer: EventWriter, inputs: unknown[], single: boolean): Promise<PublishResult[]> {
  const items = prepareEvents(ctx, inputs, single)
  // The publish span's context travels with the deliveries to their attempt spans (a link).
  return ctx.telemetry.publish(
    items.map((i) => i.event),
    (trace) => writer.write(trace ? items.map((i) => ({ ...i, trace })) : items),
  )
}

/** The events of a publish call, validated (one 422 naming every bad field) and stamped with ids and times. */
export function prepareEvents(ctx: EngineContext, inputs: unknown[], single: boolean): EventToWrite[] {
  if (!Array.isArray(inputs)) throw new OutflowError('validation', 'validation error', { data: { '(body)': 'must be an array of events' } })
  if (inputs.length > maxPublishBatch)
    throw new OutflowError('validation', 'validation error', { data: { '(body)': `at most ${maxPublishBatch} events per batch` } })
  const parsed = inputs.map((input, i) => parseInput(PublishSchema, input, { prefix: single ? '' : String(i) }))
  const data: ErrorData = {}
  parsed.forEach((p, i) => checkTopic(ctx, p.topic, single ? 'topic' : `${i}.topic`, data))
  const schemaValid = checkSchemas(ctx, parsed, single, data)
  if (Object.keys(data).length) throw new OutflowError('validation', 'validation error', { data })
  warnInvalid(ctx, parsed, schemaValid)
  const now = ctx.now()
  return parsed.map((p, i) => ({
    destinationId: p.destination_id,
    event: {
      tenant_id: p.tenant_id,
      id: p.id ?? newId('evt'),
      topic: p.topic,
      time: p.time ?? now,
      data: p.data,
      metadata: p.metadata ?? {},
      eligible_for_retry: p.eligible_for_retry ?? true,
      created_at: now,
      ...(schemaValid[i] === undefined ? {} : { schema_valid: schemaValid[i] }),
    },
  }))
}

/**
 * Check each event's `data` against its topic's schema (catalog topics with `warn` or `enforce`). `enforce`
 * problems go into `data` (the 422: `data.total: must be number`, `3.data.items.0.sku: required` in a batch);
 * per event: true (matches), false (does not, under `warn`), undefined (not checked).
 */
function checkSchemas(ctx: EngineContext, events: { topic: string; data: unknown }[], single: boolean, data: ErrorData): (boolean | undefined)[] {
  const { catalog } = ctx
  if (!catalog) return []
  return events.map((event, i) => {
    const topic = catalog.get(event.topic)
    if (!topic?.validators || topic.validation === 'off') return undefined
    const problems = catalog.check(event.topic, event.data)
    if (!problems) return true
    if (topic.validation === 'enforce') {
      ctx.telemetry.countSchemaInvalid(event.topic, 'enforce')
      for (const { path, message } of problems) data[`${single ? '' : `${i}.`}data${path}`] = message
    }
    return false
  })
}

/** Events stored although their data does not match (`warn`): counted, and logged once per topic per minute. */
function warnInvalid(ctx: EngineContext, events: { topic: string; data: unknown }[], schemaValid: (boolean | undefined)[]): void {
  const { catalog } = ctx
  if (!catalog) return
  events.forEach((event, i) => {
    if (schemaValid[i] !== false) return
    ctx.telemetry.countSchemaInvalid(event.topic, 'warn')
    if (!catalog.warnDue(event.topic, Date.now())) return
    const problems = catalog.check(event.topic, event.data) ?? []
    ctx.options.logger.warn(
      { topic: event.topic, problems: Object.fromEntries(problems.map((p) => [`data${p.path}`, p.message])) },
      `published data does not match the schema of topic "${event.topic}" (validation: warn; stored with schema_valid: false; logged once a minute per topic)`,
    )
  })
}
