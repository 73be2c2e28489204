import { api, query, tenantPath } from './api.js'
import type { ChartPoint } from './components/chart.js'
import type { Destination, DestinationType, MetricsResponse } from './types.js'

// Reads several pages share.

let types: Promise<DestinationType[]> | undefined

/** The destination types (fields, icons, instructions), fetched once per session. */
export function destinationTypes(): Promise<DestinationType[]> {
  types ??= api<DestinationType[]>('GET', tenantPath('/destination-types')).catch((error: unknown) => {
    types = undefined
    throw error
  })
  return types
}

export function typeOf(all: DestinationType[] | undefined, name: string): DestinationType | undefined {
  return all?.find((t) => t.type === name)
}

export function listDestinations(): Promise<Destination[]> {
  return api<Destination[]>('GET', tenantPath('/destinations'))
}

/** A destination's name on the page: what it points at (its target), else its id. */
export function destinationName(destination: Destination): string {
  return destination.target || destination.id
}

export interface SuccessRate {
  attempts: number
  successful: number
}

/** Attempts and successes per destination over the last `hours` (GET /metrics/attempts). */
export async function successRates(hours = 24): Promise<Map<string, SuccessRate>> {
  const end = new Date()
  const start = new Date(end.getTime() - hours * 3_600_000)
  const q = query({ 'time[start]': start.toISOString(), 'time[end]': end.toISOString(), 'measures[]': ['count', 'successful_count'], 'dimensions[]': ['destination_id'] })
  const response = await api<MetricsResponse>('GET', `/metrics/attempts${q}`)
  const rates = new Map<string, SuccessRate>()
  for (const point of response.data) {
    const id = point.dimensions.destination_id
    if (id) rates.set(id, { attempts: point.metrics.count ?? 0, successful: point.metrics.successful_count ?? 0 })
  }
  return rates
}

export interface Range {
  label: string
  hours: number
  granularity: string
  bucketMs: number
}

export const ranges: Range[] = [
  { label: 'Last hour', hours: 1, granularity: '5m', bucketMs: 5 * 60_000 },
  { label: 'Last 24 hours', hours: 24, granularity: '1h', bucketMs: 3_600_000 },
  { label: 'Last 7 days', hours: 24 * 7, granularity: '6h', bucketMs: 6 * 3_600_000 },
  { label: 'Last 30 days', hours: 24 * 30, granularity: '1d', bucketMs: 86_400_000 },
]

/**
 * Successful and failed attempts per time bucket, per destination (one GET /metrics/attempts),
 * with empty buckets filled in so the chart's time axis is even.
 */
export async function deliverySeries(range: Range, destinationId?: string): Promise<Map<string, ChartPoint[]>> {
  const end = new Date(Math.ceil(Date.now() / range.bucketMs) * range.bucketMs)
  const start = new Date(end.getTime() - range.hours * 3_600_000)
  const q = query({
    'time[start]': start.toISOString(),
    'time[end]': end.toISOString(),
    granularity: range.granularity,
    'measures[]': ['successful_count', 'failed_count'],
    'dimensions[]': ['destination_id'],
    'filters[destination_id]': destinationId,
  })
  const response = await api<MetricsResponse>('GET', `/metrics/attempts${q}`)
  const series = new Map<string, Map<number, ChartPoint>>()
  for (const point of response.data) {
    const id = point.dimensions.destination_id ?? ''
    const time = new Date(point.time_bucket ?? start.toISOString())
    const buckets = series.get(id) ?? new Map<number, ChartPoint>()
    buckets.set(time.getTime(), { time, successful: point.metrics.successful_count ?? 0, failed: point.metrics.failed_count ?? 0 })
    series.set(id, buckets)
  }
  const filled = new Map<string, ChartPoint[]>()
  for (const [id, buckets] of series) {
    const points: ChartPoint[] = []
    for (let t = alignDown(start.getTime(), range); t < end.getTime(); t = nextBucket(t, range)) points.push(buckets.get(t) ?? { time: new Date(t), successful: 0, failed: 0 })
    filled.set(id, points)
  }
  return filled
}

function alignDown(ms: number, range: Range): number {
  return Math.floor(ms / range.bucketMs) * range.bucketMs
}

function nextBucket(ms: number, range: Range): number {
  return ms + range.bucketMs
}

/** Events published per time bucket (GET /metrics/events). */
export async function eventSeries(range: Range): Promise<{ time: Date; count: number }[]> {
  const end = new Date(Math.ceil(Date.now() / range.bucketMs) * range.bucketMs)
  const start = new Date(end.getTime() - range.hours * 3_600_000)
  const q = query({ 'time[start]': start.toISOString(), 'time[end]': end.toISOString(), granularity: range.granularity, 'measures[]': ['count'] })
  const response = await api<MetricsResponse>('GET', `/metrics/events${q}`)
  const counts = new Map(response.data.map((p) => [new Date(p.time_bucket ?? start.toISOString()).getTime(), p.metrics.count ?? 0]))
  const points: { time: Date; count: number }[] = []
  for (let t = alignDown(start.getTime(), range); t < end.getTime(); t = nextBucket(t, range)) points.push({ time: new Date(t), count: counts.get(t) ?? 0 })
  return points
}
