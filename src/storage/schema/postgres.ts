import { sql } from 'drizzle-orm'
import { boolean, index, integer, jsonb, pgSchema, PgSchema, pgTable, primaryKey, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core'
import type { JsonObject } from '../../model/common.js'

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
  return { outflowSchema, ...defineTables(outflowSchema ? (outflowSchema.table as unknown as typeof pgTable) : pgTable) }
}

/**
 * The same tables, always schema-qualified (`"public"."events"`): what Outflow's own queries use, so
 * they reach its tables whatever `search_path` the session has (a host's transaction may have another).
 */
export function qualifiedPostgresTables(schema: string) {
  // pgSchema() refuses 'public' (drizzle-kit would try to create it); the class itself does not.
  return defineTables(new PgSchema(schema).table as unknown as typeof pgTable)
}

/** The six tables, built with `table` (drizzle's pgTable, or a schema's `.table`). */
function defineTables(table: typeof pgTable) {
  const tenants = table(
    'tenants',
    {
      id: text('id').primaryKey(),
      metadata: jsonb('metadata').$type<JsonObject>().notNull(),
      created_at: ts('created_at').notNull(),
      updated_at: ts('updated_at').notNull(),
    },
    (t) => [index('tenants_created_idx').on(t.created_at, t.id)],
  )

  const destinations = table(
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
    },
    (t) => [primaryKey({ columns: [t.tenant_id, t.id] }), index('destinations_tenant_created_idx').on(t.tenant_id, t.created_at, t.id)],
  )

  const events = table(
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
    },
    (t) => [
      primaryKey({ columns: [t.tenant_id, t.id] }),
      // Metrics bucket a time range (tenant and topic read from the index); the pruner walks it from the oldest.
      index('events_time_idx').on(t.time, t.tenant_id, t.topic),
    ],
  )

  // One row per (event, destination): the queue state and the log's status.
  const deliveries = table(
    'deliveries',
    {
      id: text('id').primaryKey(),
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
    },
    (t) => [
      uniqueIndex('deliveries_pair_idx').on(t.tenant_id, t.event_id, t.destination_id),
      // Claiming: only pending rows are indexed, ordered by when they are due.
      index('deliveries_due_idx').on(t.next_attempt_at).where(sql`status = 'pending'`),
      // Event listings show a pair from its first attempt on; keyset by (event_time, event_id, destination_id).
      index('deliveries_tenant_time_idx').on(t.tenant_id, t.event_time, t.event_id, t.destination_id).where(sql`attempt_count > 0`),
      index('deliveries_destination_time_idx').on(t.tenant_id, t.destination_id, t.event_time, t.event_id).where(sql`attempt_count > 0`),
      index('deliveries_time_idx').on(t.event_time, t.event_id, t.destination_id).where(sql`attempt_count > 0`),
    ],
  )

  const attempts = table(
    'attempts',
    {
      id: text('id').primaryKey(),
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
    },
    (t) => [index('attempts_event_idx').on(t.tenant_id, t.event_id, t.delivered_at), index('attempts_time_idx').on(t.delivered_at, t.tenant_id)],
  )

  /**
   * Portal sign-in codes (`GET /tenants/{id}/portal`): short-lived and single-use. Only a SHA-256 of the
   * code is kept, so reading this table yields nothing to sign in with; using a code deletes its row.
   */
  const portal_codes = table(
    'portal_codes',
    {
      code_hash: text('code_hash').primaryKey(),
      tenant_id: text('tenant_id').notNull(),
      tenant_created_at: ts('tenant_created_at').notNull(),
      expires_at: ts('expires_at').notNull(),
    },
    (t) => [index('portal_codes_expires_idx').on(t.expires_at)],
  )
  return { tenants, destinations, events, deliveries, attempts, portal_codes }
}

// The tables in `public`, for drizzle-kit (drizzle.postgres.config.ts generates the committed migrations from them).
export const { tenants, destinations, events, deliveries, attempts, portal_codes } = postgresTables()
