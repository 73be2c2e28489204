import type { DestinationTypeName } from '../../src/model/destination-type.js'
import type { AttemptWrite, DeliveryStatus, DestinationRecord, Storage } from '../../src/storage/storage.js'

const t0 = new Date('2026-01-01T00:00:00.000Z')

/** A stored webhook destination of `tenant_id`, with fields overridden by `extra`. */
export function destinationRecord(tenant_id: string, id: string, extra: Partial<DestinationRecord> = {}): DestinationRecord {
  return {
    tenant_id,
    id,
    type: 'webhook',
    topics: ['order.created'],
    filter: null,
    config: { url: 'https://example.com/hook' },
    credentials: '{"secret":"s"}',
    delivery_metadata: null,
    metadata: null,
    disabled_at: null,
    created_at: t0,
    updated_at: t0,
    consecutive_failures: 0,
    ...extra,
  }
}

/**
 * Create tenants and their destinations straight in storage, as rows written below the engine need them:
 * storage writes no event of a missing tenant, no delivery to a missing destination and logs attempts only
 * for deliveries that exist. A destination is its id, or `[id, type]`.
 */
export async function seedOwners(storage: Storage, owners: Record<string, Array<string | [string, DestinationTypeName]>>): Promise<void> {
  for (const [tenant, destinations] of Object.entries(owners)) {
    await storage.upsertTenant(tenant, {}, t0)
    for (const d of destinations) {
      const [id, type] = typeof d === 'string' ? [d, 'webhook' as const] : d
      await storage.insertDestination(destinationRecord(tenant, id, { type }))
    }
  }
}

/**
 * One attempt's result, made at `deliveredAt`, for the delivery `dlv-{tenant}-{eventId}-{destination}`, leaving it
 * in `status` (a pending one due a minute later). The attempt's id is `att-{delivery id}{idSuffix}`.
 */
export function attemptWrite(
  tenant: string,
  eventId: string,
  destination: string,
  status: DeliveryStatus,
  deliveredAt: Date,
  { idSuffix = '', orderKey }: { idSuffix?: string; orderKey?: string } = {},
): AttemptWrite {
  const deliveryId = `dlv-${tenant}-${eventId}-${destination}`
  const ok = status === 'success'
  return {
    attempt: {
      id: `att-${deliveryId}${idSuffix}`,
      tenant_id: tenant,
      event_id: eventId,
      destination_id: destination,
      delivery_id: deliveryId,
      attempt_number: 1,
      manual: false,
      status: ok ? 'success' : 'failed',
      response_status_code: ok ? 200 : 500,
      response_body: null,
      response_headers: null,
      error: null,
      error_kind: null,
      duration_ms: 1,
      delivered_at: deliveredAt,
      topic: 't',
      destination_type: 'webhook',
    },
    delivery: {
      id: deliveryId,
      status,
      next_attempt_at: status === 'pending' ? new Date(deliveredAt.getTime() + 60_000) : null,
      successful_at: ok ? deliveredAt : null,
      ...(orderKey ? { order_key: orderKey } : {}),
    },
  }
}
