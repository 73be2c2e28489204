import { sql } from 'drizzle-orm'
import { bigint, boolean, doublePrecision, index, integer, jsonb, pgSchema, PgSchema, pgSequence, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { JsonObject } from '../../model/common.js'
import type { DeliverySettings } from '../../model/delivery-settings.js'
import type { PayloadPolicy } from '../../model/payload-policy.js'
import type { BatchPolicy } from '../../model/batch-policy.js'

/** A schema name `postgres({ schema })` takes: it goes into quoted identifiers and a NOTIFY channel name (at most 63 bytes). */
export const schemaNamePattern = /^[a-z_][a-z0-9_]{0,49}$/

const ts = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' })

/**
 * Outflow's tables in a Postgres schema, as drizzle tables: give them to your own drizzle-kit schema to
 * migrate them with your migrations, or read Outflow's rows in your queries. `public` (the default) gives
 * unqualified tables, as drizzle-kit expects for that schema.
 *
 * @example
 * // drizzle/schema.ts of the host, next to its own tables
 * export const { outflowSchema, tenants, destinations, events, deliveries, attempts } = postgresTables('outflow')
 */
export function postgresTables(schema = 'public') {
  const outflowSchema = schema === 'public' ? undefined : pgSchema(schema)
  // A schema's table builder differs from pgTable only in the schema name its types carry.
  // Publish order of deliveries to FIFO destinations (deliveries.order_seq), in the same schema.
  const delivery_order_seq = outflowSchema ? outflowSchema.sequence('delivery_order_seq') : pgSequence('delivery_order_seq')
  return { outflowSchema, delivery_order_seq, ...defineTables(outflowSchema ? (outflowSchema.table as unknown as typeof pgTable) : pgTable) }
}

/**
 * The same tables, always schema-qualified (`"public"."events"`): what Outflow's own queries use, so
 * they reach its tables whatever `search_path` the session has (a host's transaction may have another).
 */
export function qualifiedPostgresTables(schema: string) {
  // pgSchema() refuses 'public' (drizzle-kit would try to create it); the class itself does not.
  return defineTables(new PgSchema(schema).table as unknown as typeof pgTable)
}

/** The tables, built with `table` (drizzle's pgTable, or a schema's `.table`). */
function defineTables(table: typeof pgTable) {
  return {
    tenants: tenantsTable(table),
    destinations: destinationsTable(table),
    events: eventsTable(table),
    deliveries: deliveriesTable(table),
    attempts: attemptsTable(table),
    replay_jobs: replayJobsTable(table),
    expunge_jobs: expungeJobsTable(table),
    rate_buckets: rateBucketsTable(table),
    due_tenants: dueTenantsTable(table),
    portal_codes: portalCodesTable(table),
    signing_keys: signingKeysTable(table),
  }
}

function tenantsTable(table: typeof pgTable) {
  return table(
    'tenants',
    {
      id: text('id').primaryKey(),
      metadata: jsonb('metadata').$type<JsonObject>().notNull(),
      created_at: ts('created_at').notNull(),
      updated_at: ts('updated_at').notNull(),
    },
    (t) => [index('tenants_created_idx').on(t.created_at, t.id)],
  )
}

function destinationsTable(table: typeof pgTable) {
  return table(
    'destinations',
    {
      tenant_id: text('tenant_id').notNull(),
      id: text('id').notNull(),
      type: text('type').notNull(),
      topics: jsonb('topics').$type<string[]>().notNull(),
      filter: jsonb('filter').$type<JsonObject>(),
      config: jsonb('config').$type<JsonObject>().notNull(),
      credentials: text('credentials').notNull(),
      delivery_metadata: jsonb('delivery_metadata').$type<Record<string, string>>(),
      metadata: jsonb('metadata').$type<JsonObject>(),
      disabled_at: ts('disabled_at'),
      created_at: ts('created_at').notNull(),
      updated_at: ts('updated_at').notNull(),
      consecutive_failures: integer('consecutive_failures').notNull().default(0),
      // The destination's own delivery policy (retries, timeout, rate limit, ordering): null follows the engine's options.
      delivery: jsonb('delivery').$type<DeliverySettings>(),
      // Full or thin deliveries ('full', 'thin' or { thin_above_bytes }): null follows the type's default.
      payload: jsonb('payload').$type<PayloadPolicy>(),
      // Batched delivery ({ max_events, max_bytes?, max_wait_ms?, format? }): null delivers one event per request.
      batch: jsonb('batch').$type<BatchPolicy>(),
    },
    (t) => [primaryKey({ columns: [t.tenant_id, t.id] }), index('destinations_tenant_created_idx').on(t.tenant_id, t.created_at, t.id)],
  )
}

function eventsTable(table: typeof pgTable) {
  return table(
    'events',
    {
      tenant_id: text('tenant_id').notNull(),
      id: text('id').notNull(),
      topic: text('topic').notNull(),
      time: ts('time').notNull(),
      data: jsonb('data').notNull(),
      metadata: jsonb('metadata').$type<Record<string, string>>().notNull(),
      eligible_for_retry: boolean('eligible_for_retry').notNull(),
      created_at: ts('created_at').notNull(),
      // Whether data matched its topic's schema at publish (catalog topics with validation warn/enforce); null: not checked.
      schema_valid: boolean('schema_valid'),
      // Set when the event was expunged (erased on request): data is then JSON null, its attempts' response bodies null.
      expunged_at: ts('expunged_at'),
    },
    (t) => [
      primaryKey({ columns: [t.tenant_id, t.id] }),
      // Metrics bucket a time range (tenant and topic read from the index); the pruner walks it from the oldest.
      index('events_time_idx').on(t.time, t.tenant_id, t.topic),
    ],
  )
}

// One row per (event, destination): the queue state and the log's status.
function deliveriesTable(table: typeof pgTable) {
  return table(
    'deliveries',
    {
      id: text('id').notNull(),
      tenant_id: text('tenant_id').notNull(),
      event_id: text('event_id').notNull(),
      destination_id: text('destination_id').notNull(),
      // Copied from the event so listings sort and filter without a join.
      topic: text('topic').notNull(),
      event_time: ts('event_time').notNull(),
      status: text('status').notNull(),
      attempt_count: integer('attempt_count').notNull(),
      manual: boolean('manual').notNull(),
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
      order_seq: bigint('order_seq', { mode: 'number' }),
      order_state: text('order_state'),
      // The event's created_at: the partition key of the partitioned layout (postgres-partitions.ts), so an event's
      // deliveries and attempts live in its day's partitions. Null on rows written before this column.
      event_created_at: ts('event_created_at'),
    },
    (t) => [primaryKey({ columns: [t.id, t.tenant_id] }), 
      uniqueIndex('deliveries_pair_idx').on(t.tenant_id, t.event_id, t.destination_id),
      // Claiming: only pending rows are indexed, ordered by when they are due.
      index('deliveries_due_idx').on(t.next_attempt_at).where(sql`status = 'pending'`),
      // Event listings show a pair from its first attempt on, or once it was skipped; keyset by (event_time, event_id, destination_id).
      index('deliveries_tenant_time_idx').on(t.tenant_id, t.event_time, t.event_id, t.destination_id).where(sql`attempt_count > 0 or skipped_at is not null`),
      index('deliveries_destination_time_idx').on(t.tenant_id, t.destination_id, t.event_time, t.event_id).where(sql`attempt_count > 0 or skipped_at is not null`),
      index('deliveries_time_idx').on(t.event_time, t.event_id, t.destination_id).where(sql`attempt_count > 0 or skipped_at is not null`),
      index('deliveries_replay_idx').on(t.replay_job).where(sql`replay_job is not null`),
      index('deliveries_order_idx').on(t.tenant_id, t.destination_id, t.order_key, t.order_seq).where(sql`status = 'pending' and order_key is not null`),
      index('deliveries_waiting_idx').on(t.order_seq).where(sql`order_state = 'waiting'`),
    ],
  )
}

function attemptsTable(table: typeof pgTable) {
  return table(
    'attempts',
    {
      id: text('id').notNull(),
      tenant_id: text('tenant_id').notNull(),
      event_id: text('event_id').notNull(),
      destination_id: text('destination_id').notNull(),
      delivery_id: text('delivery_id').notNull(),
      attempt_number: integer('attempt_number').notNull(),
      manual: boolean('manual').notNull(),
      status: text('status').notNull(),
      response_status_code: integer('response_status_code'),
      response_body: text('response_body'),
      response_headers: jsonb('response_headers').$type<Record<string, string>>(),
      error: text('error'),
      error_kind: text('error_kind'),
      duration_ms: integer('duration_ms'),
      delivered_at: ts('delivered_at').notNull(),
      // Copied from the delivery and the destination so attempt metrics group without joins (null on rows
      // written before these columns whose destination was already gone).
      topic: text('topic'),
      destination_type: text('destination_type'),
      // Copied from the delivery: attempts live in their event's day partition (null on rows written before this column).
      event_created_at: ts('event_created_at'),
    },
    (t) => [primaryKey({ columns: [t.id, t.tenant_id] }), index('attempts_event_idx').on(t.tenant_id, t.event_id, t.delivered_at), index('attempts_time_idx').on(t.delivered_at, t.tenant_id)],
  )
}

/** Replays (durable jobs): what to send again, where they stand, and the lease of the instance running one. */
function replayJobsTable(table: typeof pgTable) {
  return table(
    'replay_jobs',
    {
      id: text('id').notNull(),
      tenant_id: text('tenant_id').notNull(),
      destination_id: text('destination_id').notNull(),
      status: text('status').notNull(),
      since: ts('since').notNull(),
      until: ts('until').notNull(),
      select_status: text('select_status').notNull(),
      topics: jsonb('topics').$type<string[]>(),
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
    (t) => [primaryKey({ columns: [t.id, t.tenant_id] }), 
      index('replay_jobs_running_idx').on(t.created_at).where(sql`status = 'running'`),
      index('replay_jobs_destination_idx').on(t.tenant_id, t.destination_id, t.created_at),
    ],
  )
}

/** Erasures of a time range (durable jobs): what to erase, how far they got, and the lease of the instance running one. */
function expungeJobsTable(table: typeof pgTable) {
  return table(
    'expunge_jobs',
    {
      id: text('id').notNull(),
      tenant_id: text('tenant_id').notNull(),
      // created (no batch yet), running, done
      status: text('status').notNull(),
      time_from: ts('time_from').notNull(),
      time_to: ts('time_to').notNull(),
      topic: text('topic'),
      expunged: integer('expunged').notNull(),
      // The last (time, id) erased: the next batch starts after it.
      cursor_time: ts('cursor_time'),
      cursor_event: text('cursor_event'),
      lease_owner: text('lease_owner'),
      lease_until: ts('lease_until'),
      created_at: ts('created_at').notNull(),
      updated_at: ts('updated_at').notNull(),
      finished_at: ts('finished_at'),
    },
    (t) => [primaryKey({ columns: [t.id, t.tenant_id] }), index('expunge_jobs_open_idx').on(t.created_at).where(sql`status <> 'done'`)],
  )
}

/** Per-destination token buckets of rate limits, shared by every instance (see sql-rate.ts). */
function rateBucketsTable(table: typeof pgTable) {
  return table(
    'rate_buckets',
    {
      tenant_id: text('tenant_id').notNull(),
      destination_id: text('destination_id').notNull(),
      tokens: doublePrecision('tokens').notNull(),
      refilled_at: ts('refilled_at').notNull(),
    },
    (t) => [primaryKey({ columns: [t.tenant_id, t.destination_id] })],
  )
}

/**
 * Claims per tenant (the `tenantClaims` option, what Citus needs: postgres-tenant-claims.ts): each tenant that may
 * have a delivery due, no later than its earliest. Kept by a trigger on deliveries while the option is on.
 */
function dueTenantsTable(table: typeof pgTable) {
  return table(
    'due_tenants',
    {
      tenant_id: text('tenant_id').primaryKey(),
      due_at: ts('due_at').notNull(),
    },
    (t) => [index('due_tenants_due_idx').on(t.due_at, t.tenant_id)],
  )
}

/**
 * Portal sign-in codes (`GET /tenants/{id}/portal`): short-lived and single-use. Only a SHA-256 of the
 * code is kept, so reading this table yields nothing to sign in with; using a code deletes its row.
 */
function portalCodesTable(table: typeof pgTable) {
  return table(
    'portal_codes',
    {
      code_hash: text('code_hash').primaryKey(),
      tenant_id: text('tenant_id').notNull(),
      tenant_created_at: ts('tenant_created_at').notNull(),
      expires_at: ts('expires_at').notNull(),
    },
    (t) => [index('portal_codes_expires_idx').on(t.expires_at)],
  )
}

/**
 * The engine's Ed25519 signing keys (`v1a` signatures, published as a JWK Set). `secret` is sealed like
 * destination credentials. `active` is true on the one key that signs and null on previous keys, so a
 * unique index allows one active key however many instances generate or rotate at once.
 */
function signingKeysTable(table: typeof pgTable) {
  return table(
    'signing_keys',
    {
      kid: text('kid').primaryKey(),
      public_key: text('public_key').notNull(),
      secret: text('secret').notNull(),
      active: boolean('active'),
      created_at: ts('created_at').notNull(),
      retires_at: ts('retires_at'),
    },
    (t) => [uniqueIndex('signing_keys_active_idx').on(t.active)],
  )
}

// The tables in `public`, for drizzle-kit (drizzle.postgres.config.ts generates the committed migrations from them).
export const { tenants, destinations, events, deliveries, attempts, replay_jobs, expunge_jobs, rate_buckets, due_tenants, portal_codes, signing_keys, delivery_order_seq } = postgresTables()
