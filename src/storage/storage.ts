import type { DeliverySettings, RateLimit } from '../model/delivery-settings.js'
import type { DestinationTypeName } from '../model/destination-type.js'
import type { ErrorKind } from '../model/attempt-result.js'
import type { JsonObject } from '../model/common.js'
import type { AttemptDimension, EventDimension, Granularity } from '../model/metrics.js'
import type { KeysetRequest } from '../model/pagination.js'
import type { NewReplayJob, ReplayJobRecord, ReplayStep, ReplayStepRequest } from './replay-records.js'

export type { NewReplayJob, ReplayJobRecord, ReplayJobStatus, ReplaySelect, ReplayStep, ReplayStepRequest } from './replay-records.js'

/**
 * The storage port: one domain-named method per job, each with one transaction boundary.
 * Both drivers (SQLite, Postgres) implement it and pass the same suite (test/storage.test.ts).
 * All times are `Date`s with millisecond precision.
 */
export interface Storage {
  /** Which database this storage runs on. */
  readonly dialect: 'sqlite' | 'postgres'
  /** SQLite: the database file, or `:memory:` (the engine keeps its generated key file beside it). Absent for Postgres. */
  readonly path?: string
  /** Apply pending migrations (safe when two processes start at once on Postgres). */
  migrate(): Promise<void>
  /** Close the storage's connections (the engine's `close()` does, last). */
  close(): Promise<void>
  /**
   * The same storage, whose calls give up sooner: the engine makes the calls of API requests and typed-API calls
   * through it, so a caller gets its `unavailable` within seconds while the worker, the pruner and replays wait
   * the storage's full bound (Postgres: `requestTimeoutMs` against `timeoutMs`). Absent (and not copied by a
   * spread, so a wrapped storage keeps its wrapper for every call): the one bound serves both.
   */
  readonly forCallers?: Storage

  // --- tenants -------------------------------------------------------------------------------
  /** Create the tenant, or update it (metadata `undefined` keeps the stored metadata). */
  upsertTenant(id: string, metadata: JsonObject | undefined, now: Date): Promise<{ tenant: TenantRecord; created: boolean }>
  /** One tenant's record, or null when it does not exist. */
  getTenant(id: string): Promise<TenantRecord | null>
  /** Up to `limit + 1` rows in display order (see `buildPage`), plus the count of all rows the filter matches. */
  listTenants(query: TenantListRequest): Promise<{ rows: TenantRecord[]; count: number }>
  /**
   * Delete the tenant with its destinations, events, deliveries and attempts (a re-created id starts empty).
   * Atomic against concurrent writers: a destination or event being inserted for the tenant is either
   * deleted with it or refused (see insertDestination, insertEvents).
   */
  deleteTenant(id: string): Promise<boolean>
  /** destinations_count and the sorted union of topics, per tenant. Missing tenants map to zero/empty. */
  summarizeTenants(ids: string[]): Promise<Map<string, TenantSummary>>

  // --- destinations --------------------------------------------------------------------------
  /** A tenant's destinations, oldest first, optionally only of some types. */
  listDestinations(tenantId: string, filter?: { types?: DestinationTypeName[]; enabledOnly?: boolean }): Promise<DestinationRecord[]>
  /** One destination's record, or null when the tenant has no such destination. */
  getDestination(tenantId: string, id: string): Promise<DestinationRecord | null>
  /** Insert; `exists` when the tenant already has a destination with that id, `no-tenant` when the tenant is gone. */
  insertDestination(record: DestinationRecord): Promise<'inserted' | 'exists' | 'no-tenant'>
  /**
   * Replace the fields an update changes (topics, filter, config, credentials, metadata, delivery_metadata,
   * delivery, updated_at) if the stored `updated_at` is still `readAt`; `stale` when it changed since, so the caller
   * re-reads and applies its change again rather than overwrite another.
   */
  updateDestination(record: DestinationRecord, readAt: Date): Promise<'updated' | 'stale' | 'missing'>
  /** Delete it and cancel its pending deliveries. */
  deleteDestination(tenantId: string, id: string): Promise<boolean>
  /** Set `disabled_at` (kept when already set) or clear it (`null`); enabling resets the failure streak and makes parked deliveries due. */
  setDestinationDisabled(tenantId: string, id: string, at: Date | null, now: Date): Promise<DestinationRecord | null>

  /** Stored credentials of every tenant's destinations, `limit` at a time in (tenant_id, id) order after `after` (re-encryption). */
  scanCredentials(after: DestinationKey | undefined, limit: number): Promise<StoredCredentials[]>
  /**
   * Replace stored credentials in one transaction, each only if the row still holds `from` (a concurrent
   * update wins). `updated_at` is kept: the credentials are the same, only their encryption changed.
   * Returns how many rows were replaced.
   */
  replaceCredentials(rows: CredentialsReplacement[]): Promise<number>

  /** For publishing: each existing tenant's destinations (all, oldest first); unknown tenants are absent. */
  publishTargets(tenantIds: string[]): Promise<Map<string, DestinationRecord[]>>

  // --- events and the delivery queue (delivery issue) ------------------------------------------
  /**
   * Insert each event with its deliveries in one transaction. Idempotent on (tenant_id, event id):
   * an existing event inserts nothing and answers `duplicate: true` with its existing destination ids.
   * Checked inside the transaction: events of a tenant that is gone are not inserted (nor any other event
   * of the same `group`), and deliveries to a destination that is gone are left out.
   */
  insertEvents(items: NewEventWithDeliveries[]): Promise<InsertEventResult[]>
  /**
   * FIFO destinations: make due every waiting delivery that no unfinished delivery of its key precedes (a
   * safety net: inserts and results promote the next one themselves). Returns how many became due.
   */
  promoteWaitingDeliveries(now: Date): Promise<number>
  /**
   * Postgres: `insertEvents` through the host's own open transaction `tx` (a postgres.js transaction, or a
   * drizzle transaction over postgres.js), as one statement; the workers are woken once the host has committed.
   * `plan` makes the events' rows from their tenants' publish targets (as `publishTargets` gives them): the
   * storage may plan from targets it read earlier, which the statement checks against what the transaction sees,
   * planning again from a fresh read if they changed. Returns the rows it planned and what was inserted.
   * Refuses (OutflowError) a `tx` that is not a transaction, has ended, or is on another database.
   */
  insertEventsInTransaction?(
    tx: unknown,
    tenantIds: string[],
    plan: (targets: Map<string, PublishTarget[]>) => NewEventWithDeliveries[],
  ): Promise<{ planned: NewEventWithDeliveries[]; results: InsertEventResult[] }>
  /**
   * SQLite: the host's own better-sqlite3 connection to this database file (or a drizzle database or
   * transaction over one), for publishing synchronously inside the host's transaction. Refuses
   * (OutflowError) anything else, and a connection to another file.
   */
  hostConnection?(db: unknown): HostConnection
  /** Lease up to `limit` due deliveries (pending, next_attempt_at <= now, lease free or expired). */
  claimDueDeliveries(request: ClaimRequest): Promise<ClaimedDelivery[]>
  /**
   * Write attempt results and the new delivery states in one transaction; returns failure streaks per destination.
   * An attempt already recorded (same id) is skipped with its delivery's update, so a write that failed
   * without knowing whether it committed can be made again.
   */
  recordAttempts(writes: AttemptWrite[]): Promise<DestinationStreak[]>
  /** Extend the leases `owner` still holds on these deliveries (work queued behind a slow destination). */
  extendLeases(owner: string, ids: string[], leaseUntil: Date): Promise<number>
  /** Give back every lease held by `owner` so another worker can take the rows at once. */
  releaseLeases(owner: string, ids?: string[]): Promise<number>
  /**
   * Take deliveries off the queue without an attempt: `cancel` for a destination that is gone; otherwise
   * parked (pending, not due) until the destination is enabled again, and marked skipped since `now` (the
   * event log shows them) until their next attempt.
   */
  holdDeliveries(ids: string[], cancel: boolean, now?: Date): Promise<void>
  /**
   * Call `listener` when another process made deliveries due (Postgres LISTEN/NOTIFY), and each time the
   * subscription is made again after its connection was lost (announcements may have been missed).
   * Optional: single-process drivers (SQLite) do not need it. Resolves to an unsubscribe function.
   */
  onWork?(listener: () => void): Promise<() => Promise<void>>
  /** Make a delivery due now for one manual attempt; false when there is no such delivery or its destination is gone. */
  requeueDelivery(tenantId: string, eventId: string, destinationId: string, now: Date): Promise<boolean>
  /** Event rows (one per attempted or skipped (event, destination) pair), `limit + 1` in display order. */
  listEvents(query: EventListRequest): Promise<EventRow[]>
  /** One pair: for `destinationId` when given, else the most recently attempted one. */
  getEvent(tenantId: string, eventId: string, destinationId?: string): Promise<EventRow | null>
  /** Every attempt of an event (all destinations), newest first. */
  listAttempts(tenantId: string, eventId: string): Promise<AttemptRecord[]>

  // --- replays (recovery issue) ---------------------------------------------------------------
  /**
   * Insert replay jobs in one transaction, each with `matched` counted from the deliveries it selects. Jobs
   * whose destination is gone are left out; null when the tenant is gone.
   */
  insertReplayJobs(jobs: NewReplayJob[]): Promise<ReplayJobRecord[] | null>
  /** One replay job of a destination, or null when it has no such job. */
  getReplayJob(tenantId: string, destinationId: string, id: string): Promise<ReplayJobRecord | null>
  /** Stop a running job (kept as it is when it already ended); the batch already handed out is still attempted. */
  cancelReplayJob(tenantId: string, destinationId: string, id: string, now: Date): Promise<ReplayJobRecord | null>
  /** Lease the oldest running job no live instance holds (Postgres: SKIP LOCKED), or null. */
  claimReplayJob(owner: string, now: Date, leaseUntil: Date): Promise<ReplayJobRecord | null>
  /**
   * One step of a job `owner` holds, in one transaction: count the batch handed out once each of its deliveries
   * was attempted, then, unless fresh deliveries are waiting, hand out the next batch (made due now) or finish.
   */
  advanceReplayJob(step: ReplayStepRequest): Promise<ReplayStep>
  /** Give back every job lease `owner` holds (close()). */
  releaseReplayJobs(owner: string): Promise<void>
  /** Deliveries of a destination skipped at publish (status `skipped`): how many, and the oldest event time. */
  skippedDeliveries(tenantId: string, destinationId: string): Promise<{ count: number; oldest: Date | null }>

  // --- rate limits (recovery issue) ------------------------------------------------------------
  /**
   * Refill the destination's token bucket for the time since its last refill (`per_second`, up to the burst)
   * and take up to `count` tokens (never more than the burst), atomically with respect to every instance's
   * takes: how many it gave (0..count) and how long until the next token.
   */
  takeTokens(tenantId: string, destinationId: string, limit: RateLimit, count: number, now: Date): Promise<TokensTaken>

  // --- metrics (operations issue) ---------------------------------------------------------------
  /**
   * Published events counted per time bucket (by event `time`) and dimension values, bucketed in SQL;
   * up to `limit + 1` rows ordered by dimensions, then bucket. Per destination, an event counts once
   * for each destination it matched.
   */
  eventMetrics(request: EventMetricsRequest): Promise<EventMetricsRow[]>
  /** Attempts counted per time bucket (by `delivered_at`) and dimension values; like `eventMetrics`. */
  attemptMetrics(request: AttemptMetricsRequest): Promise<AttemptMetricsRow[]>

  // --- retention (operations issue) -----------------------------------------------------------
  /**
   * One short transaction: delete up to `limit` events with `time` before `before` (oldest first, from
   * `from` on), with their deliveries and attempts. An event with a delivery still pending, or one
   * another transaction holds, is kept.
   */
  pruneEvents(request: PruneRequest): Promise<PruneBatch>
  /**
   * Let only one instance prune at a time (Postgres: a session advisory lock). Resolves to a release
   * function, or null when another instance holds the lock. Absent: this storage has one process.
   */
  lockPruner?(): Promise<(() => Promise<void>) | null>
  // --- portal sign-in codes (portal issue) ------------------------------------------------------
  /** Store a new code (its hash), deleting the codes that expired by `now`. */
  insertPortalCode(code: PortalCodeRecord, now: Date): Promise<void>
  /**
   * Delete the code with this hash and return it (expired or not: the caller checks), or null when there
   * is none. Atomic: a code used twice at once, on one instance or several, is returned once.
   */
  takePortalCode(codeHash: string): Promise<PortalCodeRecord | null>
  // --- Ed25519 signing keys (receiver trust issue) ------------------------------------------------
  /** Every stored signing key (active and previous), oldest first. */
  listSigningKeys(): Promise<SigningKeyRecord[]>
  /**
   * Insert a key as the active one. Without `retireActiveAt`: only when no key is active (false when one
   * is: another instance generated it first). With it, atomically: the active key becomes a previous key
   * retiring at `retireActiveAt`, and keys retired by `now` are deleted.
   */
  insertSigningKey(key: Omit<SigningKeyRecord, 'active' | 'retires_at'>, retireActiveAt: Date | undefined, now: Date): Promise<boolean>
  /** Replace a key's sealed secret if it is still `from` (re-encryption); whether it was. */
  replaceSigningKeySecret(kid: string, from: string, to: string): Promise<boolean>

  // --- operations --------------------------------------------------------------------------
  /** Deliveries due at `now` (pending, not parked) and the oldest one's due time: one index range. */
  queueStats(now: Date): Promise<QueueStats>
  /** A trivial round trip: resolves when the database answers. */
  ping(): Promise<void>
}

/** What a take from a rate-limit bucket gave: `taken` tokens, and `waitMs` until the bucket has another one (0: it has). */
export interface TokensTaken {
  taken: number
  waitMs: number
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

/** What matching needs of a destination. */
export type PublishTarget = Pick<DestinationRecord, 'id' | 'topics' | 'filter' | 'disabled_at' | 'delivery'>

export interface QueueStats {
  /** Pending deliveries whose `next_attempt_at` has come (leased ones included: not attempted yet). */
  due: number
  /** The earliest `next_attempt_at` among them; null when none is due. */
  oldest_due_at: Date | null
}

export interface TenantRecord {
  id: string
  metadata: JsonObject
  created_at: Date
  updated_at: Date
}

/** A portal sign-in code: the SHA-256 (hex) of the code, for one tenant (by creation time, like tokens), until `expires_at`. */
export interface PortalCodeRecord {
  code_hash: string
  tenant_id: string
  tenant_created_at: Date
  expires_at: Date
}

/** A stored Ed25519 signing key: `secret` is the sealed `whsk_` key, `public_key` the raw key (base64url). */
export interface SigningKeyRecord {
  kid: string
  public_key: string
  secret: string
  /** The key that signs; previous keys sign too until `retires_at`. */
  active: boolean
  created_at: Date
  retires_at: Date | null
}

export interface TenantSummary {
  destinations_count: number
  topics: string[]
}

export interface TenantListRequest extends KeysetRequest {
  createdGte?: Date
  createdLte?: Date
}

export interface DestinationRecord {
  tenant_id: string
  id: string
  type: DestinationTypeName
  topics: string[]
  filter: JsonObject | null
  config: JsonObject
  /** Sealed credentials (src/credentials.ts): `enc:v2:` AES-256-GCM ciphertext; older rows `enc:v1:` or plain JSON. */
  credentials: string
  delivery_metadata: Record<string, string> | null
  metadata: JsonObject | null
  disabled_at: Date | null
  created_at: Date
  updated_at: Date
  /** Consecutive failed attempts (reset by a success or enable). */
  consecutive_failures: number
  /** The destination's own delivery policy (retries, timeout); null or absent follows the engine's options. */
  delivery?: DeliverySettings | null
}

export interface DestinationKey {
  tenant_id: string
  id: string
}

export interface StoredCredentials extends DestinationKey {
  credentials: string
}

export interface CredentialsReplacement extends DestinationKey {
  from: string
  to: string
}

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

/** `skipped`: published while the destination was disabled, never attempted (until a replay). */
export type DeliveryStatus = 'pending' | 'success' | 'failed' | 'cancelled' | 'skipped'

export interface ClaimRequest {
  owner: string
  now: Date
  leaseUntil: Date
  limit: number
  /** Only deliveries due at or after this (the worker's claim window; see DeliveryWorker). */
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
}

/** The time range and grouping of a metrics query. `filters` absent or empty match everything. */
export interface MetricsWindow {
  /** Inclusive. */
  start: Date
  /** Exclusive. */
  end: Date
  /** No granularity: one row per combination of dimension values. */
  granularity?: Granularity
  limit: number
}

export interface EventMetricsRequest extends MetricsWindow {
  dimensions: EventDimension[]
  filters: { tenant_id?: string[]; topic?: string[]; destination_id?: string[] }
}

export interface AttemptMetricsRequest extends MetricsWindow {
  dimensions: AttemptDimension[]
  filters: {
    tenant_id?: string[]
    destination_id?: string[]
    destination_type?: string[]
    topic?: string[]
    status?: ('success' | 'failed')[]
    code?: number[]
    manual?: boolean
    attempt_number?: number[]
  }
}

/** One group: its bucket start (null without granularity) and its dimension values as strings. */
export interface MetricsRow {
  bucket: Date | null
  dimensions: Record<string, string>
}

export interface EventMetricsRow extends MetricsRow {
  count: number
}

export interface AttemptMetricsRow extends MetricsRow {
  count: number
  successful: number
  failed: number
  /** attempt_number 1 and not manual */
  first_attempts: number
  /** attempt_number > 1 */
  retries: number
  manual_retries: number
  attempt_number_sum: number
}

export interface PruneRequest {
  /** Events whose `time` is before this are old. */
  before: Date
  /** Skip events before this time (where the previous batch of a pass stopped). */
  from?: Date
  limit: number
}

/** What one batch deleted, and where it stopped: `last` is the time of the newest event it examined. */
export interface PruneBatch {
  events: number
  deliveries: number
  attempts: number
  /** Old events this batch found; fewer than the limit means nothing older is left to find. */
  found: number
  last: Date | null
  /** The batch gave up on a lock another transaction held (Postgres); try again later. */
  busy?: boolean
}

