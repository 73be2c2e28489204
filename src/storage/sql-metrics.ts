import { and, eq, gte, inArray, lt, sql, type SQL } from 'drizzle-orm'
import type { PgColumn } from 'drizzle-orm/pg-core'
import type { Granularity } from '../model/metrics.js'
import type { SqlContext } from './sql-context.js'
import type { AttemptMetricsRequest, AttemptMetricsRow, EventMetricsRequest, EventMetricsRow, MetricsWindow } from './storage.js'

// Aggregates of the metrics API: time buckets are computed by the database, never in JS.

const second = 1000
const unitMs = { s: second, m: 60 * second, h: 3600 * second, d: 86_400 * second, w: 7 * 86_400 * second } as const
/** Weeks start on Sunday, as in Outpost: 1970-01-04 is the first Sunday after the epoch. */
const firstSundayMs = 3 * unitMs.d

/** A validated small integer, inlined so the select and GROUP BY expressions are the same text. */
const literal = (n: number) => {
  if (!Number.isSafeInteger(n)) throw new Error(`not an integer: ${n}`)
  return sql.raw(String(n))
}

/**
 * The bucket holding `column`: `key` to group by, and `ms`, its start in milliseconds since the epoch.
 * Fixed-length units are epoch-aligned (weeks from a Sunday), months are calendar months (n-month
 * buckets counted from January 1970), all in UTC.
 */
function bucketOf(ctx: SqlContext, column: PgColumn, g: Granularity): { key: SQL; ms: SQL<number> } {
  if (ctx.dialect === 'sqlite') {
    // Times are integer milliseconds: integer arithmetic, about 3× faster than strftime per row.
    if (g.unit !== 'M') {
      const width = literal(g.value * unitMs[g.unit])
      const anchor = literal(g.unit === 'w' ? firstSundayMs : 0)
      const ms = sql<number>`((${column} - ${anchor}) / ${width}) * ${width} + ${anchor}`
      return { key: ms, ms }
    }
    const at = sql`${column} / 1000, 'unixepoch'`
    const month = sql`((cast(strftime('%Y', ${at}) as integer) - 1970) * 12 + cast(strftime('%m', ${at}) as integer) - 1)`
    const ms = sql<number>`cast(strftime('%s', '1970-01-01', '+' || ((${month} / ${literal(g.value)}) * ${literal(g.value)}) || ' months') as integer) * 1000`
    return { key: ms, ms }
  }
  let bucket: SQL
  if (g.unit === 'M') {
    const month = sql`((extract(year from ${column} at time zone 'UTC')::int - 1970) * 12 + extract(month from ${column} at time zone 'UTC')::int - 1)`
    bucket =
      g.value === 1
        ? sql`date_trunc('month', ${column}, 'UTC')`
        : sql`(timestamptz '1970-01-01 00:00:00+00' + ((${month} / ${literal(g.value)}) * ${literal(g.value)}) * interval '1 month')`
  } else {
    const seconds = literal((g.value * unitMs[g.unit]) / second)
    const origin = sql.raw(g.unit === 'w' ? `timestamptz '1970-01-04 00:00:00+00'` : `timestamptz '1970-01-01 00:00:00+00'`)
    bucket = sql`date_bin(${seconds} * interval '1 second', ${column}, ${origin})`
  }
  // Grouped by the timestamp: extract() computes in numeric, once per group rather than once per row.
  return { key: bucket, ms: sql<number>`(extract(epoch from ${bucket}) * 1000)::float8` }
}

/** The parts every metrics query shares: the bucket, the time range, grouping and order. */
function grouping(ctx: SqlContext, time: PgColumn, w: MetricsWindow, dimensions: [name: string, expression: PgColumn | SQL][]) {
  const bucket = w.granularity ? bucketOf(ctx, time, w.granularity) : undefined
  const keys = dimensions.map(([, e]) => e)
  return {
    fields: {
      ...(bucket ? { bucket: bucket.ms.mapWith(Number) } : {}),
      ...Object.fromEntries(dimensions),
    } as Record<string, PgColumn | SQL>,
    range: and(gte(time, w.start), lt(time, w.end)),
    groupBy: bucket ? [...keys, bucket.key] : keys,
    limit: w.limit + 1,
  }
}

/**
 * `tenant_id in (…)` that leaves the time range to choose the index: SQLite's planner, without
 * statistics, would rather walk a tenant's whole log through an index led by tenant_id (the unary `+`
 * is its documented way to keep a column from choosing the index).
 */
function tenantIn(ctx: SqlContext, column: PgColumn, tenants: string[]): SQL {
  return ctx.dialect === 'sqlite' ? inArray(sql`+${column}`, tenants) : inArray(column, tenants)
}

/** Dimension values as the API shows them: strings, `""` for none. */
function dimensionValues(row: Record<string, unknown>, names: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  for (const name of names) {
    const value = row[name]
    out[name] = value === null || value === undefined ? '' : String(value)
  }
  return out
}

const count = () => sql<number>`count(*)`.mapWith(Number)
/** Without GROUP BY columns an aggregate answers one row even for no input; Outpost answers none. */
const nonEmpty = sql`count(*) > 0`
const countIf = (condition: SQL) => sql<number>`coalesce(sum(case when ${condition} then 1 else 0 end), 0)`.mapWith(Number)

export async function eventMetrics(ctx: SqlContext, q: EventMetricsRequest): Promise<EventMetricsRow[]> {
  const { events: e, deliveries: d } = ctx.tables
  // Per destination means per delivery: an event counts once for each destination it matched.
  const perDestination = q.dimensions.includes('destination_id')
  const columns = { tenant_id: e.tenant_id, topic: e.topic, destination_id: d.destination_id }
  const g = grouping(ctx, e.time, q, q.dimensions.map((name) => [name, columns[name]]))
  const { tenant_id, topic, destination_id } = q.filters
  const ofEvent = and(eq(d.tenant_id, e.tenant_id), eq(d.event_id, e.id))
  const where = and(
    g.range,
    tenant_id?.length ? tenantIn(ctx, e.tenant_id, tenant_id) : undefined,
    topic?.length ? inArray(e.topic, topic) : undefined,
    destination_id?.length
      ? perDestination
        ? inArray(d.destination_id, destination_id)
        : sql`exists (select 1 from ${d} where ${and(ofEvent, inArray(d.destination_id, destination_id))})`
      : undefined,
  )
  const rows = await ctx.run((db) => {
    const base = db.select({ ...g.fields, count: count() }).from(e)
    const joined = perDestination ? base.innerJoin(d, ofEvent) : base
    return joined.where(where).groupBy(...g.groupBy).having(nonEmpty).orderBy(...g.groupBy).limit(g.limit)
  })
  return rows.map((row) => {
    const r = row as Record<string, unknown>
    return { bucket: typeof r.bucket === 'number' ? new Date(r.bucket) : null, dimensions: dimensionValues(r, q.dimensions), count: r.count as number }
  })
}

export async function attemptMetrics(ctx: SqlContext, q: AttemptMetricsRequest): Promise<AttemptMetricsRow[]> {
  const { attempts: a } = ctx.tables
  const columns = {
    tenant_id: a.tenant_id,
    destination_id: a.destination_id,
    destination_type: a.destination_type,
    topic: a.topic,
    status: a.status,
    code: a.response_status_code,
    manual: a.manual,
    attempt_number: a.attempt_number,
  }
  const g = grouping(ctx, a.delivered_at, q, q.dimensions.map((name) => [name, columns[name]]))
  const f = q.filters
  const where = and(
    g.range,
    f.tenant_id?.length ? tenantIn(ctx, a.tenant_id, f.tenant_id) : undefined,
    f.destination_id?.length ? inArray(a.destination_id, f.destination_id) : undefined,
    f.destination_type?.length ? inArray(a.destination_type, f.destination_type) : undefined,
    f.topic?.length ? inArray(a.topic, f.topic) : undefined,
    f.status?.length ? inArray(a.status, f.status) : undefined,
    f.code?.length ? inArray(a.response_status_code, f.code) : undefined,
    f.manual === undefined ? undefined : eq(a.manual, f.manual),
    f.attempt_number?.length ? inArray(a.attempt_number, f.attempt_number) : undefined,
  )
  const measures = {
    count: count(),
    successful: countIf(sql`${a.status} = 'success'`),
    failed: countIf(sql`${a.status} = 'failed'`),
    first_attempts: countIf(sql`${a.attempt_number} = 1 and not ${a.manual}`),
    retries: countIf(sql`${a.attempt_number} > 1`),
    manual_retries: countIf(sql`${a.manual}`),
    attempt_number_sum: sql<number>`coalesce(sum(${a.attempt_number}), 0)`.mapWith(Number),
  }
  const rows = await ctx.run((db) =>
    db
      .select({ ...g.fields, ...measures })
      .from(a)
      .where(where)
      .groupBy(...g.groupBy)
      .having(nonEmpty)
      .orderBy(...g.groupBy)
      .limit(g.limit),
  )
  return rows.map((row) => {
    const r = row as Record<string, unknown>
    return {
      bucket: typeof r.bucket === 'number' ? new Date(r.bucket) : null,
      dimensions: dimensionValues(r, q.dimensions),
      count: r.count as number,
      successful: r.successful as number,
      failed: r.failed as number,
      first_attempts: r.first_attempts as number,
      retries: r.retries as number,
      manual_retries: r.manual_retries as number,
      attempt_number_sum: r.attempt_number_sum as number,
    }
  })
}
