import type { EventToWrite, EventWriter } from '../delivery/event-writer.js'
import { isTopicPattern } from '../delivery/topics.js'
import { OutflowError, type ErrorData } from '../errors.js'
import { newId } from '../ids.js'
import { parseInput } from '../model/common.js'
import { PublishSchema, type PublishResult } from '../model/event.js'
import type { EngineContext } from './context.js'

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
  if (Object.keys(data).length) throw new OutflowError('validation', 'validation error', { data })
  const now = ctx.now()
  return parsed.map((p) => ({
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
    },
  }))
}
