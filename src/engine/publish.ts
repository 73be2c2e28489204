import { matchesFilter } from '../delivery/filter.js'
import { isTopicPattern, matchesTopic } from '../delivery/topics.js'
import type { DeliveryWorker } from '../delivery/worker.js'
import { OutflowError, notFound, type ErrorData } from '../errors.js'
import { newId } from '../ids.js'
import { parseInput } from '../model/common.js'
import { PublishSchema, type PublishResult } from '../model/event.js'
import type { ClaimedDelivery, DestinationRecord, EventRecord, NewEventWithDeliveries } from '../storage/storage.js'
import type { EngineContext } from './context.js'

/** Most events one publishMany call takes (one transaction). */
export const maxPublishBatch = 1000

/** The destinations of `event` among a tenant's enabled destinations: topics, filter and `destination_id`. */
export function matchDestinations(event: EventRecord, candidates: DestinationRecord[], only?: string): DestinationRecord[] {
  const subject = { id: event.id, topic: event.topic, time: event.time.toISOString(), metadata: event.metadata, data: event.data }
  return candidates.filter(
    (d) => (only === undefined || d.id === only) && matchesTopic(d.topics, event.topic) && (!d.filter || matchesFilter(d.filter, subject)),
  )
}

function checkTopic(ctx: EngineContext, topic: string, path: string, data: ErrorData) {
  if (isTopicPattern(topic)) data[path] = 'must be a concrete topic, not a pattern'
  else if (ctx.options.topics && !ctx.options.topics.includes(topic)) data[path] = `"${topic}" is not one of the configured topics`
}

/**
 * Validate, match and durably record events with one delivery per matched destination, in one
 * transaction; then hand the new deliveries to the local worker (the fast path).
 */
export async function publishEvents(ctx: EngineContext, worker: DeliveryWorker, inputs: unknown[], single: boolean): Promise<PublishResult[]> {
  if (!Array.isArray(inputs)) throw new OutflowError('validation', 'validation error', { data: { '(body)': 'must be an array of events' } })
  if (inputs.length > maxPublishBatch)
    throw new OutflowError('validation', 'validation error', { data: { '(body)': `at most ${maxPublishBatch} events per batch` } })
  const parsed = inputs.map((input, i) => parseInput(PublishSchema, input, { prefix: single ? '' : String(i) }))
  const data: ErrorData = {}
  parsed.forEach((p, i) => checkTopic(ctx, p.topic, single ? 'topic' : `${i}.topic`, data))
  if (Object.keys(data).length) throw new OutflowError('validation', 'validation error', { data })

  const now = ctx.now()
  const candidates = new Map<string, DestinationRecord[]>()
  for (const tenantId of new Set(parsed.map((p) => p.tenant_id))) {
    if (!(await ctx.storage.getTenant(tenantId))) throw notFound('tenant', tenantId)
    candidates.set(tenantId, await ctx.storage.listDestinations(tenantId, { enabledOnly: true }))
  }
  for (const p of parsed) {
    if (p.destination_id !== undefined && !(await ctx.storage.getDestination(p.tenant_id, p.destination_id))) throw notFound('destination', p.destination_id)
  }

  const items: NewEventWithDeliveries[] = parsed.map((p) => {
    const event: EventRecord = {
      tenant_id: p.tenant_id,
      id: p.id ?? newId('evt'),
      topic: p.topic,
      time: p.time ?? now,
      data: p.data,
      metadata: p.metadata ?? {},
      eligible_for_retry: p.eligible_for_retry ?? true,
      created_at: now,
    }
    const matched = matchDestinations(event, candidates.get(p.tenant_id)!, p.destination_id)
    return { event, deliveries: matched.map((d) => ({ id: newId('dlv'), destination_id: d.id, next_attempt_at: now })) }
  })

  // Fast path: when the local worker has room, rows are inserted already leased to it.
  const count = items.reduce((n, i) => n + i.deliveries.length, 0)
  const lease = worker.fastPathLease(count, now)
  if (lease) for (const item of items) for (const d of item.deliveries) Object.assign(d, lease)

  const results = await ctx.storage.insertEvents(items)
  if (lease) {
    const claimed: ClaimedDelivery[] = []
    results.forEach((r, i) => {
      if (r.duplicate) return
      const { event, deliveries } = items[i]!
      for (const d of deliveries)
        claimed.push({ id: d.id, tenant_id: event.tenant_id, event_id: event.id, destination_id: d.destination_id, attempt_count: 0, manual: false, event })
    })
    worker.enqueue(claimed)
  }
  return results.map((r, i) => ({ id: items[i]!.event.id, duplicate: r.duplicate, destination_ids: r.destination_ids }))
}
