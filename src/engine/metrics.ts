import { OutflowError } from '../errors.js'
import { parseInput } from '../model/common.js'
import {
  AttemptMetricsQuerySchema,
  EventMetricsQuerySchema,
  metricsRowLimit,
  type AttemptMetricsQuery,
  type EventMetricsQuery,
  type Granularity,
  type MetricsDataPoint,
  type MetricsResponse,
} from '../model/metrics.js'
import type { AttemptMetricsRow, EventMetricsRow, MetricsRow } from '../storage/storage.js'
import type { EngineContext } from './context.js'
import { bucketSeconds, bucketSlots } from './metric-buckets.js'

/** A caller limited to one tenant (a tenant token): its queries see only that tenant. */
export interface MetricsScope {
  /** The only tenant the caller may see. */
  tenantId: string
}

interface Window {
  start: Date
  end: Date
  granularity?: Granularity
  dimensions: string[]
  slots: number[] | null
}

/** How one kind of row becomes the requested measures, and what an empty bucket looks like. */
interface Measures<R extends MetricsRow> {
  zero(bucket: number, dimensions: Record<string, string>): R
  values(row: R, seconds: number): Record<string, number>
}

const ratio = (a: number, b: number) => (b === 0 ? 0 : a / b)

const eventMeasures: Measures<EventMetricsRow> = {
  zero: (bucket, dimensions) => ({ bucket: new Date(bucket), dimensions, count: 0 }),
  values: (r, seconds) => ({ count: r.count, rate: r.count / seconds }),
}

const attemptMeasures: Measures<AttemptMetricsRow> = {
  zero: (bucket, dimensions) => ({
    bucket: new Date(bucket),
    dimensions,
    count: 0,
    successful: 0,
    failed: 0,
    first_attempts: 0,
    retries: 0,
    manual_retries: 0,
    attempt_number_sum: 0,
  }),
  values: (r, seconds) => ({
    count: r.count,
    successful_count: r.successful,
    failed_count: r.failed,
    error_rate: ratio(r.failed, r.count),
    first_attempt_count: r.first_attempts,
    retry_count: r.retries,
    manual_retry_count: r.manual_retries,
    avg_attempt_number: ratio(r.attempt_number_sum, r.count),
    rate: r.count / seconds,
    successful_rate: r.successful / seconds,
    failed_rate: r.failed / seconds,
  }),
}

/**
 * The tenant rule of Outpost's metrics API: a tenant-scoped caller may not group by tenant, may
 * filter only by its own tenant, and always sees only its own.
 */
function scopeTenants(filter: string[] | undefined, dimensions: string[], scope: MetricsScope | undefined): string[] | undefined {
  if (!scope) return filter
  if (dimensions.includes('tenant_id')) throw new OutflowError('forbidden', 'the tenant_id dimension needs the admin API key')
  if (filter && filter.some((t) => t !== scope.tenantId)) throw new OutflowError('forbidden', 'filters[tenant_id] may only name the tenant of the token')
  return [scope.tenantId]
}

function window(q: { time: { start: Date; end: Date }; granularity?: Granularity; dimensions: string[] }): Window {
  const { start, end } = q.time
  const slots = q.granularity ? bucketSlots(start, end, q.granularity) : null
  if (q.granularity && !slots)
    throw new OutflowError('bad_request', 'invalid query parameter', { data: { granularity: 'too many time buckets for the time range (at most 100000)' } })
  return { start, end, granularity: q.granularity, dimensions: q.dimensions, slots }
}

const bucketText = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')

/**
 * Zero-fill the buckets a group had no rows in (every group spans every slot, as in Outpost), then
 * turn each row into a data point with only the requested measures. Stops at the row limit.
 */
function dataPoints<R extends MetricsRow>(rows: R[], w: Window, requested: string[], m: Measures<R>): { data: MetricsDataPoint[]; complete: boolean } {
  const data: MetricsDataPoint[] = []
  const push = (row: R) => {
    const bucket = row.bucket?.getTime() ?? null
    const all = m.values(row, bucketSeconds(bucket, w.granularity, w.start, w.end))
    const metrics = Object.fromEntries(requested.map((name) => [name, all[name]!]))
    data.push(bucket === null ? { dimensions: row.dimensions, metrics } : { time_bucket: bucketText(bucket), dimensions: row.dimensions, metrics })
    return data.length < metricsRowLimit
  }
  if (!w.slots) {
    for (const row of rows) if (!push(row)) return { data, complete: false }
    return { data, complete: true }
  }
  // Rows come ordered by dimensions, then bucket: one run of rows per group.
  const groups = new Map<string, { dimensions: Record<string, string>; rows: Map<number, R> }>()
  for (const row of rows) {
    const key = JSON.stringify(w.dimensions.map((d) => row.dimensions[d]))
    const group = groups.get(key) ?? { dimensions: row.dimensions, rows: new Map() }
    group.rows.set(row.bucket!.getTime(), row)
    groups.set(key, group)
  }
  // Without dimensions an empty result still has its (zero) slots.
  if (groups.size === 0 && w.dimensions.length === 0) groups.set('[]', { dimensions: {}, rows: new Map() })
  for (const group of groups.values())
    for (const slot of w.slots) if (!push(group.rows.get(slot) ?? m.zero(slot, group.dimensions))) return { data, complete: false }
  return { data, complete: true }
}

async function answer<R extends MetricsRow>(
  w: Window,
  measures: string[],
  m: Measures<R>,
  query: (limit: number) => Promise<R[]>,
): Promise<MetricsResponse> {
  const started = performance.now()
  const rows = await query(metricsRowLimit)
  const queryTimeMs = Math.round(performance.now() - started)
  const { data, complete } = dataPoints(rows.slice(0, metricsRowLimit), w, measures, m)
  return {
    data,
    metadata: {
      ...(w.granularity ? { granularity: w.granularity.text } : {}),
      query_time_ms: queryTimeMs,
      row_count: data.length,
      row_limit: metricsRowLimit,
      truncated: rows.length > metricsRowLimit || !complete,
    },
  }
}

export async function eventMetrics(ctx: EngineContext, query: EventMetricsQuery, scope?: MetricsScope): Promise<MetricsResponse> {
  const q = parseInput(EventMetricsQuerySchema, query, { code: 'bad_request', brackets: true })
  const filters = { ...q.filters }
  filters.tenant_id = scopeTenants(filters.tenant_id, q.dimensions, scope)
  const w = window(q)
  return answer(w, q.measures, eventMeasures, (limit) =>
    ctx.storage.eventMetrics({ start: w.start, end: w.end, granularity: w.granularity, dimensions: q.dimensions, filters, limit }),
  )
}

export async function attemptMetrics(ctx: EngineContext, query: AttemptMetricsQuery, scope?: MetricsScope): Promise<MetricsResponse> {
  const q = parseInput(AttemptMetricsQuerySchema, query, { code: 'bad_request', brackets: true })
  const { code, manual, attempt_number, ...rest } = q.filters ?? {}
  const filters = {
    ...rest,
    tenant_id: scopeTenants(rest.tenant_id, q.dimensions, scope),
    code: code?.map(Number),
    manual: manual === undefined ? undefined : manual === 'true',
    attempt_number: attempt_number?.map(Number),
  }
  const w = window(q)
  return answer(w, q.measures, attemptMeasures, (limit) =>
    ctx.storage.attemptMetrics({ start: w.start, end: w.end, granularity: w.granularity, dimensions: q.dimensions, filters, limit }),
  )
}
