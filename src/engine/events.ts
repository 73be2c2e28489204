import { OutflowError, notFound } from '../errors.js'
import { parseInput } from '../model/common.js'
import {
  GetEventQuerySchema,
  ListAdminEventsQuerySchema,
  ListDestinationEventsQuerySchema,
  ListEventsQuerySchema,
  type DeliveryAttempt,
  type Event,
  type ListAdminEventsQuery,
  type ListDestinationEventsQuery,
  type ListEventsQuery,
} from '../model/event.js'
import { buildPage, keysetRequest, type KeysetRequest, type Page } from '../model/pagination.js'
import type { AttemptRecord, EventListRequest, EventRow } from '../storage/storage.js'
import type { EngineContext } from './context.js'
import { requireTenant } from './tenants.js'

/** The spec's Event: one (event, destination) pair. */
export function toEvent(row: EventRow): Event {
  const event: Event = {
    id: row.event_id,
    destination_id: row.destination_id,
    topic: row.topic,
    time: row.time.toISOString(),
    successful_at: row.successful_at?.toISOString() ?? null,
    metadata: row.metadata ?? {},
    status: row.successful_at ? 'success' : 'failed',
    data: row.data,
  }
  if (row.skipped_at) event.skipped_at = row.skipped_at.toISOString()
  if (row.schema_valid !== null && row.schema_valid !== undefined) event.schema_valid = row.schema_valid
  if (row.expunged_at) event.expunged_at = row.expunged_at.toISOString()
  return event
}

export function toDeliveryAttempt(a: AttemptRecord): DeliveryAttempt {
  return {
    id: a.id,
    event_id: a.event_id,
    destination_id: a.destination_id,
    delivered_at: a.delivered_at.toISOString(),
    status: a.status,
    response_status_code: a.response_status_code,
    response_body: a.response_body,
    response_headers: a.response_headers,
    error: a.error,
    error_kind: a.error_kind,
    duration_ms: a.duration_ms,
    attempt_number: a.attempt_number,
    manual: a.manual,
  }
}

async function eventPage(ctx: EngineContext, req: KeysetRequest, filters: Omit<EventListRequest, keyof KeysetRequest>): Promise<Page<Event>> {
  const rows = await ctx.storage.listEvents({ ...req, ...filters })
  return buildPage('events', 'time', req, rows, (r) => [r.time.getTime(), r.event_id, r.destination_id], toEvent)
}

export async function listAdminEvents(ctx: EngineContext, query: ListAdminEventsQuery = {}): Promise<Page<Event>> {
  const q = parseInput(ListAdminEventsQuerySchema, query, { code: 'bad_request' })
  return eventPage(ctx, keysetRequest('events', q), {
    tenantIds: q.tenant_id,
    destinationIds: q.destination_id,
    topics: q.topic,
    timeGte: q['time[gte]'],
    timeLte: q['time[lte]'],
  })
}

export async function listEvents(ctx: EngineContext, tenantId: string, query: ListEventsQuery = {}): Promise<Page<Event>> {
  const q = parseInput(ListEventsQuerySchema, query, { code: 'bad_request' })
  await requireTenant(ctx, tenantId)
  return eventPage(ctx, keysetRequest('events', q), {
    tenantIds: [tenantId],
    destinationIds: q.destination_id,
    topics: q.topic,
    status: q.status,
    timeGte: q['time[gte]'],
    timeLte: q['time[lte]'],
  })
}

async function requireDestinationOf(ctx: EngineContext, tenantId: string, destinationId: string) {
  await requireTenant(ctx, tenantId)
  const destination = await ctx.storage.getDestination(tenantId, destinationId)
  if (!destination) throw notFound('destination', destinationId)
  return destination
}

export async function listDestinationEvents(
  ctx: EngineContext,
  tenantId: string,
  destinationId: string,
  query: ListDestinationEventsQuery = {},
): Promise<Page<Event>> {
  const q = parseInput(ListDestinationEventsQuerySchema, query, { code: 'bad_request' })
  await requireDestinationOf(ctx, tenantId, destinationId)
  return eventPage(ctx, keysetRequest('events', q), {
    tenantIds: [tenantId],
    destinationIds: [destinationId],
    status: q.status,
    timeGte: q['time[gte]'],
    timeLte: q['time[lte]'],
  })
}

export async function getEvent(
  ctx: EngineContext,
  tenantId: string,
  eventId: string,
  query: { destination_id?: unknown } = {},
  destinationMustExist = false,
): Promise<Event> {
  const q = parseInput(GetEventQuerySchema, query, { code: 'bad_request' })
  if (destinationMustExist && q.destination_id) await requireDestinationOf(ctx, tenantId, q.destination_id)
  else await requireTenant(ctx, tenantId)
  const row = await ctx.storage.getEvent(tenantId, eventId, q.destination_id)
  if (!row) throw notFound('event', eventId)
  return toEvent(row)
}

export async function listDeliveries(ctx: EngineContext, tenantId: string, eventId: string): Promise<DeliveryAttempt[]> {
  await requireTenant(ctx, tenantId)
  const attempts = await ctx.storage.listAttempts(tenantId, eventId)
  // Events appear from their first attempt on, so an event with no attempts is not found yet.
  if (attempts.length === 0) throw notFound('event', eventId)
  return attempts.map(toDeliveryAttempt)
}

export async function retryDelivery(ctx: EngineContext, tenantId: string, destinationId: string, eventId: string): Promise<{ success: true }> {
  const destination = await requireDestinationOf(ctx, tenantId, destinationId)
  if (destination.disabled_at) throw new OutflowError('conflict', `destination ${destinationId} is disabled; enable it before retrying`)
  if (await ctx.storage.requeueDelivery(tenantId, eventId, destinationId, ctx.now())) return { success: true }
  // An erased event is never sent again.
  const event = await ctx.storage.getEvent(tenantId, eventId, destinationId)
  if (event?.expunged_at) throw new OutflowError('conflict', `event ${eventId} was expunged; it is never sent again`)
  throw notFound('event', eventId)
}
