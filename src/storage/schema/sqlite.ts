import { sql } from 'drizzle-orm'
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'
import type { JsonObject } from '../../model/common.js'
import type { DeliverySettings } from '../../model/delivery-settings.js'
import type { PayloadPolicy } from '../../model/payload-policy.js'
import type { BatchPolicy } from '../../model/batch-policy.js'

// Same tables and column names as schema/postgres.ts; times are integer milliseconds, JSON is text.
const ts = (name: string) => integer(name, { mode: 'timestamp_ms' })
const json = <T>(name: string) => text(name, { mode: 'json' }).$type<T>()
const bool = (name: string) => integer(name, { mode: 'boolean' })

export const tenants = sqliteTable(
  'tenants',
  {
    id: text('id').primaryKey(),
    metadata: json<JsonObject>('metadata').notNull(),
    created_at: ts('created_at').notNull(),
    updated_at: ts('updated_at').notNull(),
  },
  (t) => [index('tenants_created_idx').on(t.created_at, t.id)],
)

export const destinations = sqliteTable(
  'destinations',
  {
    tenant_id: text('tenant_id').notNull(),
    id: text('id').notNull(),
    type: text('type').notNull(),
    topics: json<string[]>('topics').notNull(),
    filter: json<JsonObject>('filter'),
    config: json<JsonObject>('config').notNull(),
    credentials: text('credentials').notNull(),
    delivery_metadata: json<Record<string, string>>('delivery_metadata'),
    metadata: json<JsonObject>('metadata'),
    disabled_at: ts('disabled_at'),
    created_at: ts('created_at').notNull(),
    updated_at: ts('updated_at').notNull(),
    consecutive_failures: integer('consecutive_failures').notNull().default(0),
    // The destination's own delivery policy (retries, timeout): null follows the engine's options.
    delivery: json<DeliverySettings>('delivery'),
    // Full or thin deliveries ('full', 'thin' or { thin_above_bytes }): null follows the type's default.
    payload: json<PayloadPolicy>('payload'),
    // Batched delivery ({ max_events, max_bytes?, max_wait_ms?, format? }): null delivers one event per request.
    batch: json<BatchPolicy>('batch'),
  },
  (t) => [primaryKey({ columns: [t.tenant_id, t.id] }), index('destinations_tenant_created_idx').on(t.tenant_id, t.created_at, t.id)],
)

export const events = sqliteTable(
  'events',
  {
    tenant_id: text('tenant_id').notNull(),
    id: text('id').notNull(),
    topic: text('topic').notNull(),
    time: ts('time').notNull(),
    data: json<unknown>('data').notNull(),
    metadata: json<Record<string, string>>('metadata').notNull(),
    eligible_for_retry: bool('eligible_for_retry').notNull(),
    created_at: ts('created_at').notNull(),
    // Whether data matched its topic's schema at publish (catalog topics with validation warn/enforce); null: not checked.
    schema_valid: bool('schema_valid'),
    // Set when the event was expunged (see schema/postgres.ts).
    expunged_at: ts('expunged_at'),
  },
  (t) => [
    primaryKey({ columns: [t.tenant_id, t.id] }),
    // Metrics bucket a time range (tenant and topic read from the index); the pruner walks it from the oldest.
    index('events_time_idx').on(t.time, t.tenant_id, t.topic),
  ],
)

export const deliveries = sqliteTable(
  'deliveries',
  {
    id: text('id').primaryKey(),
    tenant_id: text('tenant_id').notNull(),
    event_id: text('event_id').notNull(),
    destination_id: text('destination_id').notNull(),
    topic: text('topic').notNull(),
    event_time: ts('event_time').notNull(),
    status: text('status').notNull(),
    attempt_count: integer('attempt_count').notNull(),
    manual: bool('manual').notNull(),
    next_attempt_at: ts('next_attempt_at'),
    lease_owner: text('lease_owner'),
    lease_until: ts('lease_until'),
    last_attempt_at: ts('last_attempt_at'),
    successful_at: ts('successful_at'),
    // Set while the delivery is skipped: published while its destination was disabled (status 'skipped', never
    // attempted), or parked when the destination was disabled before it was attempted again. Cleared by an attempt.
    skipped_at: ts('skipped_at'),
    // The replay job that handed this delivery to the worker, until the job counted its attempt.
    replay_job: text('replay_job'),
    // FIFO destinations: the event's ordering key, its place in publish order, and 'waiting' while a delivery
    // published before it with the same key is unfinished (it is not due until then).
    order_key: text('order_key'),
    order_seq: integer('order_seq'),
    order_state: text('order_state'),
  },
  (t) => [
    uniqueIndex('deliveries_pair_idx').on(t.tenant_id, t.event_id, t.destination_id),
    index('deliveries_due_idx').on(t.next_attempt_at).where(sql`status = 'pending'`),
    index('deliveries_tenant_time_idx').on(t.tenant_id, t.event_time, t.event_id, t.destination_id).where(sql`attempt_count > 0 or skipped_at is not null`),
    index('deliveries_destination_time_idx').on(t.tenant_id, t.destination_id, t.event_time, t.event_id).where(sql`attempt_count > 0 or skipped_at is not null`),
    index('deliveries_time_idx').on(t.event_time, t.event_id, t.destination_id).where(sql`attempt_count > 0 or skipped_at is not null`),
    index('deliveries_replay_idx').on(t.replay_job).where(sql`replay_job is not null`),
    index('deliveries_order_idx').on(t.tenant_id, t.destination_id, t.order_key, t.order_seq).where(sql`status = 'pending' and order_key is not null`),
    index('deliveries_waiting_idx').on(t.order_seq).where(sql`order_state = 'waiting'`),
  ],
)

export const attempts = sqliteTable(
  'attempts',
  {
    id: text('id').primaryKey(),
    tenant_id: text('tenant_id').notNull(),
    event_id: text('event_id').notNull(),
    destination_id: text('destination_id').notNull(),
    delivery_id: text('delivery_id').notNull(),
    attempt_number: integer('attempt_number').notNull(),
    manual: bool('manual').notNull(),
    status: text('status').notNull(),
    response_status_code: integer('response_status_code'),
    response_body: text('response_body'),
    response_headers: json<Record<string, string>>('response_headers'),
    error: text('error'),
    error_kind: text('error_kind'),
    duration_ms: integer('duration_ms'),
    delivered_at: ts('delivered_at').notNull(),
    // Copied from the delivery and the destination so attempt metrics group without joins (null on rows
    // written before these columns whose destination was already gone).
    topic: text('topic'),
    destination_type: text('destination_type'),
  },
  (t) => [index('attempts_event_idx').on(t.tenant_id, t.event_id, t.delivered_at), index('attempts_time_idx').on(t.delivered_at, t.tenant_id)],
)

/** Replays (durable jobs): what to send again, where they stand, and the lease of the instance running one. */
export const replay_jobs = sqliteTable(
  'replay_jobs',
  {
    id: text('id').primaryKey(),
    tenant_id: text('tenant_id').notNull(),
    destination_id: text('destination_id').notNull(),
    status: text('status').notNull(),
    since: ts('since').notNull(),
    until: ts('until').notNull(),
    select_status: text('select_status').notNull(),
    topics: json<string[]>('topics'),
    matched: integer('matched').notNull(),
    done: integer('done').notNull(),
    failed: integer('failed').notNull(),
    // Where the job stands: the last (event_time, event_id) counted, and the end of the batch handed out since.
    cursor_time: ts('cursor_time'),
    cursor_event: text('cursor_event'),
    batch_time: ts('batch_time'),
    batch_event: text('batch_event'),
    batch_started_at: ts('batch_started_at'),
    lease_owner: text('lease_owner'),
    lease_until: ts('lease_until'),
    created_at: ts('created_at').notNull(),
    updated_at: ts('updated_at').notNull(),
    finished_at: ts('finished_at'),
  },
  (t) => [
    index('replay_jobs_running_idx').on(t.created_at).where(sql`status = 'running'`),
    index('replay_jobs_destination_idx').on(t.tenant_id, t.destination_id, t.created_at),
  ],
)

/** Erasures of a time range (durable jobs; see schema/postgres.ts). */
export const expunge_jobs = sqliteTable(
  'expunge_jobs',
  {
    id: text('id').primaryKey(),
    tenant_id: text('tenant_id').notNull(),
    status: text('status').notNull(),
    time_from: ts('time_from').notNull(),
    time_to: ts('time_to').notNull(),
    topic: text('topic'),
    expunged: integer('expunged').notNull(),
    cursor_time: ts('cursor_time'),
    cursor_event: text('cursor_event'),
    lease_owner: text('lease_owner'),
    lease_until: ts('lease_until'),
    created_at: ts('created_at').notNull(),
    updated_at: ts('updated_at').notNull(),
    finished_at: ts('finished_at'),
  },
  (t) => [index('expunge_jobs_open_idx').on(t.created_at).where(sql`status <> 'done'`)],
)

/** Per-destination token buckets of rate limits, shared by every instance (see sql-rate.ts). */
export const rate_buckets = sqliteTable(
  'rate_buckets',
  {
    tenant_id: text('tenant_id').notNull(),
    destination_id: text('destination_id').notNull(),
    tokens: real('tokens').notNull(),
    refilled_at: ts('refilled_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenant_id, t.destination_id] })],
)

/**
 * Portal sign-in codes (`GET /tenants/{id}/portal`): short-lived and single-use. Only a SHA-256 of the
 * code is kept, so reading this table yields nothing to sign in with; using a code deletes its row.
 */
export const portal_codes = sqliteTable(
  'portal_codes',
  {
    code_hash: text('code_hash').primaryKey(),
    tenant_id: text('tenant_id').notNull(),
    tenant_created_at: ts('tenant_created_at').notNull(),
    expires_at: ts('expires_at').notNull(),
  },
  (t) => [index('portal_codes_expires_idx').on(t.expires_at)],
)

/** The engine's Ed25519 signing keys (see schema/postgres.ts). */
export const signing_keys = sqliteTable(
  'signing_keys',
  {
    kid: text('kid').primaryKey(),
    public_key: text('public_key').notNull(),
    secret: text('secret').notNull(),
    active: bool('active'),
    created_at: ts('created_at').notNull(),
    retires_at: ts('retires_at'),
  },
  (t) => [uniqueIndex('signing_keys_active_idx').on(t.active)],
)
