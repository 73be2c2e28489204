import type { Logger } from '../logger.js'
import type { RateLimit } from '../model/delivery-settings.js'
import type { DestinationTypeName } from '../model/destination-type.js'
import type { JsonObject } from '../model/common.js'
import type { TenantRecord, TenantSummary, TenantListRequest, DestinationRecord, DestinationKey, StoredCredentials, CredentialsReplacement, PublishTarget, PortalCodeRecord, SigningKeyRecord } from './directory-records.js'
import type { NewEventWithDeliveries, InsertEventResult, HostConnection, ClaimRequest, ClaimedDelivery, AttemptRecord, AttemptWrite, DestinationStreak, EventListRequest, EventRow, TokensTaken, QueueStats } from './delivery-records.js'
import type { EventMetricsRequest, AttemptMetricsRequest, EventMetricsRow, AttemptMetricsRow, PruneRequest, PruneBatch, PartitionRequest, DroppedDay } from './operations-records.js'
import type { NewReplayJob, ReplayJobRecord, ReplayStep, ReplayStepRequest } from './replay-records.js'
import type { ExpungeJobRecord, ExpungeOutcome, ExpungeStep, ExpungeStepRequest, NewExpungeJob } from './expunge-records.js'

// The records the port speaks in live in one file per area; callers import them from here.
export type { TenantRecord, TenantSummary, TenantListRequest, DestinationRecord, DestinationKey, StoredCredentials, CredentialsReplacement, PublishTarget, PortalCodeRecord, SigningKeyRecord } from './directory-records.js'
export type { EventRecord, NewDelivery, NewEventWithDeliveries, InsertEventResult, HostConnection, DeliveryStatus, ClaimRequest, ClaimedDelivery, AttemptRecord, AttemptWrite, DestinationStreak, EventListRequest, EventRow, TokensTaken, QueueStats } from './delivery-records.js'
export type { MetricsWindow, EventMetricsRequest, AttemptMetricsRequest, MetricsRow, EventMetricsRow, AttemptMetricsRow, PruneRequest, PruneBatch, PartitionRequest, DroppedDay } from './operations-records.js'
export type { NewReplayJob, ReplayJobRecord, ReplayJobStatus, ReplaySelect, ReplayStep, ReplayStepRequest } from './replay-records.js'
export type { ExpungeJobRecord, ExpungeJobStatus, ExpungeOutcome, ExpungeStep, ExpungeStepRequest, NewExpungeJob } from './expunge-records.js'

/** What `createOutflow` hands a storage factory (`storage: postgres({ url })` is one): the engine's logger. */
export interface StorageContext {
  /** Where the storage logs what the host should know (e.g. a read replica that stopped answering). */
  logger: Logger
}

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
  /**
   * A read that names no tenant is a query on every shard (Postgres with the `citus` option): an idle engine then
   * looks for rare work (replay and erasure jobs, the FIFO safety net) less often (see delivery/idle-polls.ts).
   */
  readonly readsEveryShard?: boolean
  /** Make a delivery due now for one manual attempt; false when there is no such delivery or its destination is gone. */
  requeueDelivery(tenantId: string, eventId: string, destinationId: string, now: Date): Promise<boolean>
  /** Event rows (one per attempted or skipped (event, destination) pair), `limit + 1` in display order. */
  listEvents(query: EventListRequest): Promise<EventRow[]>
  /** One pair: for `destinationId` when given, else the most recently attempted one. */
  getEvent(tenantId: string, eventId: string, destinationId?: string): Promise<EventRow | null>
  /** The event's data when it has a delivery (in any state) to `destinationId`, else null: what a payload link answers. */
  getDeliveredData(tenantId: string, eventId: string, destinationId: string): Promise<{ data: unknown } | null>
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

  // --- erasure (privacy issue) -----------------------------------------------------------------
  /**
   * Erase these events of the tenant in one transaction: `data` becomes null and `expunged_at` is set (kept when
   * already set), their attempts' response bodies are removed, and their deliveries end with status `expunged`
   * (pending ones are cancelled: never claimed, retried or replayed again). Ids, topics, times and status codes
   * stay. Each id answers `expunged` (now or before) or `not_found` (none of this tenant's); null when the tenant
   * is gone.
   */
  expungeEvents(tenantId: string, ids: string[], now: Date): Promise<Map<string, ExpungeOutcome> | null>
  /** Insert an erasure job of a time range (status `created`); null when the tenant is gone. */
  insertExpungeJob(job: NewExpungeJob): Promise<ExpungeJobRecord | null>
  /** One erasure job of a tenant, or null when it has no such job. */
  getExpungeJob(tenantId: string, id: string): Promise<ExpungeJobRecord | null>
  /** Lease the oldest erasure job not done that no live instance holds (Postgres: SKIP LOCKED), or null. */
  claimExpungeJob(owner: string, now: Date, leaseUntil: Date): Promise<ExpungeJobRecord | null>
  /** One step of a job `owner` holds, in one transaction: erase its next batch (as expungeEvents) and move its cursor, or finish it. */
  advanceExpungeJob(step: ExpungeStepRequest): Promise<ExpungeStep>
  /** Give back every erasure job lease `owner` holds (close()). */
  releaseExpungeJobs(owner: string): Promise<void>

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
   * Postgres with the partitioned layout: make the partitions of the coming days, then drop each whole day whose
   * events are all past the window and that holds no pending delivery (what is left is for pruneEvents). Absent,
   * or no day dropped, on other layouts.
   */
  prunePartitions?(request: PartitionRequest): Promise<DroppedDay[]>
  /**
   * Postgres: move an install's plain event log to the partitioned layout, online (engines go on publishing and
   * delivering) and resumably (`outflow migrate --partition-history`; docs/operating.md › Partitioned history).
   * `progress` hears each step. Answers `{ moved: false }` when the layout is already partitioned. Absent on SQLite.
   */
  partitionHistory?(progress: (message: string, fields: Record<string, unknown>) => void): Promise<{ moved: boolean; cutover?: string; backfilled?: number }>
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
