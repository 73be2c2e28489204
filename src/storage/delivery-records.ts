// The records of events, their deliveries and attempts: the delivery queue and the event log (see Storage's methods for them).
import type { ErrorKind } from '../model/attempt-result.js'
import type { KeysetRequest } from '../model/pagination.js'
import type { PublishTarget } from './directory-records.js'

export interface EventRecord {
  tenant_id: string
  id: string
  topic: string
  time: Date
  data: unknown
  metadata: Record<string, string>
  eligible_for_retry: boolean
  created_at: Date
  /**
   * `data` as the JSON text the storage wrote or read back verbatim, when it has it: an attempt sends these
   * bytes instead of serialising `data` again (see stored-json.ts).
   */
  data_json?: string
  /** Checked against its topic's schema at publish: whether it matched (absent: not checked). */
  schema_valid?: boolean
}

export interface NewDelivery {
  id: string
  destination_id: string
  next_attempt_at: Date
  /** Set at insert for the in-process fast path: the local worker already owns the row. */
  lease_owner?: string
  lease_until?: Date
  /**
   * The destination delivers in order (FIFO): the event's ordering key. The delivery is inserted waiting (not
   * due) and made due once every delivery of the same key published before it finished.
   */
  order_key?: string
  /**
   * The destination is disabled: recorded as skipped (status `skipped`, `skipped_at` = the event's
   * `created_at`), never attempted; a replay sends it. Not among the publish result's `destination_ids`.
   */
  skipped?: boolean
}

export interface NewEventWithDeliveries {
  event: EventRecord
  deliveries: NewDelivery[]
  /** Events with the same group are inserted all or none (one publishMany call); without one, an event is its own group. */
  group?: number
}

export interface InsertEventResult {
  duplicate: boolean
  /** The destinations the event is delivered to: those of the inserted deliveries, or of the existing event (skipped ones left out). */
  destination_ids: string[]
  /** Nothing was inserted: this tenant (the event's own, or another of its group) is gone. */
  missing_tenant?: string
}

/** The host's SQLite connection, inside its own transaction: each call runs synchronously on it. */
export interface HostConnection {
  /** The host has a transaction open on this connection. */
  readonly inTransaction: boolean
  /** `Storage.publishTargets`, read through the host's connection (so within its transaction). */
  publishTargets(tenantIds: string[]): Map<string, PublishTarget[]>
  /** `Storage.insertEvents` on the host's connection, in its transaction (which the host commits or rolls back). */
  insertEvents(items: NewEventWithDeliveries[]): InsertEventResult[]
  /** The event is in the database as this connection sees it (after the host's transaction: it committed). */
  hasEvent(tenantId: string, eventId: string): boolean
}

/**
 * `skipped`: published while the destination was disabled, never attempted (until a replay). `expunged`: its event
 * was erased (see Storage.expungeEvents); final, whatever it was before.
 */
export type DeliveryStatus = 'pending' | 'success' | 'failed' | 'cancelled' | 'skipped' | 'expunged'

export interface ClaimRequest {
  owner: string
  now: Date
  leaseUntil: Date
  limit: number
  /**
   * Only deliveries due at or after this (the worker's claim window; see ClaimWindow). A storage may take it as a
   * hint only: Postgres with `tenantClaims` claims tenant by tenant and ignores it (its deliveries carry no `due_at`).
   */
  dueSince?: Date
}

/** A leased delivery with the event it carries. */
export interface ClaimedDelivery {
  id: string
  tenant_id: string
  event_id: string
  destination_id: string
  attempt_count: number
  /** The next attempt was asked for by hand (retry route); it happens whatever the schedule. */
  manual: boolean
  /** Handed out by a replay job: live deliveries go ahead of it in the worker's queue. */
  replay?: boolean
  /** The ordering key of a delivery to a FIFO destination; null otherwise. */
  order_key?: string | null
  /** When it fell due, the claim's order (claims only): the worker's next claim starts at the batch's latest. */
  due_at?: Date
  event: EventRecord
}

export interface AttemptRecord {
  id: string
  tenant_id: string
  event_id: string
  destination_id: string
  delivery_id: string
  attempt_number: number
  manual: boolean
  status: 'success' | 'failed'
  response_status_code: number | null
  response_body: string | null
  response_headers: Record<string, string> | null
  error: string | null
  error_kind: ErrorKind | null
  duration_ms: number | null
  delivered_at: Date
  /** The event's topic and the destination's type at the time of the attempt (null only on rows older than these columns). */
  topic: string | null
  destination_type: string | null
}

export interface AttemptWrite {
  attempt: AttemptRecord
  /** The delivery after this attempt. */
  delivery: {
    id: string
    status: DeliveryStatus
    next_attempt_at: Date | null
    successful_at: Date | null
    /** Its ordering key (FIFO destinations): once finished, the next delivery of the key is made due. */
    order_key?: string | null
  }
}

export interface DestinationStreak {
  tenant_id: string
  destination_id: string
  consecutive_failures: number
}

export interface EventListRequest extends KeysetRequest {
  tenantIds?: string[]
  destinationIds?: string[]
  topics?: string[]
  status?: 'success' | 'failed'
  timeGte?: Date
  timeLte?: Date
}

/** One (event, destination) pair as the event listings show it. Position: [time, event_id, destination_id]. */
export interface EventRow {
  tenant_id: string
  event_id: string
  destination_id: string
  topic: string
  time: Date
  data: unknown
  metadata: Record<string, string>
  status: DeliveryStatus
  successful_at: Date | null
  last_attempt_at: Date | null
  /** Skipped since then and not attempted since (see NewDelivery.skipped, holdDeliveries); else null. */
  skipped_at: Date | null
  /** See EventRecord.schema_valid; null when not checked. */
  schema_valid: boolean | null
  /** When the event was erased (`data` is then null); null when it was not. */
  expunged_at: Date | null
}

/** What a take from a rate-limit bucket gave: `taken` tokens, and `waitMs` until the bucket has another one (0: it has). */
export interface TokensTaken {
  taken: number
  waitMs: number
}

export interface QueueStats {
  /** Pending deliveries whose `next_attempt_at` has come (leased ones included: not attempted yet). */
  due: number
  /** The earliest `next_attempt_at` among them; null when none is due. */
  oldest_due_at: Date | null
}
