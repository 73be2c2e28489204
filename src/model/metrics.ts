import * as v from 'valibot'
import { DateTimeSchema, IdSchema, storableText } from './common.js'
import { destinationTypes } from './destination-type.js'
import { EventStatusSchema } from './event.js'

// The metrics API of Outpost (`GET /metrics/events`, `GET /metrics/attempts`): measures, dimensions,
// filters and the response shape exactly as its OpenAPI names them.

export const eventMeasures = ['count', 'rate'] as const
export const eventDimensions = ['tenant_id', 'topic', 'destination_id'] as const
export const attemptMeasures = [
  'count',
  'successful_count',
  'failed_count',
  'error_rate',
  'first_attempt_count',
  'retry_count',
  'manual_retry_count',
  'avg_attempt_number',
  'rate',
  'successful_rate',
  'failed_rate',
] as const
export const attemptDimensions = ['tenant_id', 'destination_id', 'destination_type', 'topic', 'status', 'code', 'manual', 'attempt_number'] as const

export type EventDimension = (typeof eventDimensions)[number]
export type AttemptDimension = (typeof attemptDimensions)[number]

/** Most data points one query returns (Outpost's row limit); `metadata.truncated` says when more existed. */
export const metricsRowLimit = 100_000

/** Units of `granularity` and the largest value each takes. */
const granularityUnits = { s: 60, m: 60, h: 24, d: 31, w: 4, M: 12 } as const
export type GranularityUnit = keyof typeof granularityUnits

/** A parsed `granularity`, e.g. `1h` → `{ value: 1, unit: 'h', text: '1h' }`. */
export interface Granularity {
  value: number
  unit: GranularityUnit
  text: string
}

const granularityMessage = 'must be <number><unit>: s (1-60), m (1-60), h (1-24), d (1-31), w (1-4) or M (1-12)'

/** `<number><unit>` with Outpost's bounds per unit. */
export const GranularitySchema = v.pipe(
  v.string(granularityMessage),
  v.regex(/^[1-9]\d{0,1}[smhdwM]$/, granularityMessage),
  v.transform((text): Granularity => ({ value: Number(text.slice(0, -1)), unit: text.at(-1) as GranularityUnit, text })),
  v.check((g) => g.value <= granularityUnits[g.unit], granularityMessage),
)

/** A query value given once or repeated (`measures[0]=a&measures[1]=b`), always returned as an array. */
function oneOrMany<S extends v.GenericSchema<string, string>>(item: S, message: string) {
  return v.pipe(
    v.union([item, v.array(item, message)], message),
    v.transform((x) => (Array.isArray(x) ? x : [x]) as v.InferOutput<S>[]),
  )
}

const picklistMessage = (values: readonly string[]) => `must be one of ${values.join(', ')}`
const idList = () => v.optional(oneOrMany(IdSchema, 'must be an id or a list of ids'))
const stringList = () => v.optional(oneOrMany(v.pipe(v.string(), v.minLength(1, 'must not be empty'), storableText()), 'must be a string or a list of strings'))
const integerList = (what: string) =>
  v.optional(oneOrMany(v.pipe(v.string(), v.regex(/^\d{1,9}$/, `must be ${what}`)), `must be ${what} or a list of them`))

const TimeRangeSchema = v.pipe(
  v.object({ start: DateTimeSchema, end: DateTimeSchema }, 'time[start] and time[end] are required'),
  v.forward(
    v.check((t) => t.start.getTime() < t.end.getTime(), 'must be after time[start]'),
    ['end'],
  ),
)

function metricsQuery<M extends readonly string[], D extends readonly string[], F extends v.ObjectEntries>(measures: M, dimensions: D, filters: F) {
  return v.strictObject(
    {
      time: TimeRangeSchema,
      granularity: v.optional(GranularitySchema),
      measures: oneOrMany(v.picklist(measures, picklistMessage(measures)), `must be one or more of ${measures.join(', ')}`),
      dimensions: v.optional(oneOrMany(v.picklist(dimensions, picklistMessage(dimensions)), `must be one or more of ${dimensions.join(', ')}`), []),
      filters: v.optional(v.strictObject(filters, 'unknown filter')),
    },
    'unknown query parameter',
  )
}

/** Query of `GET /metrics/events` and `outflow.eventMetrics()`. */
export const EventMetricsQuerySchema = metricsQuery(eventMeasures, eventDimensions, {
  topic: stringList(),
  destination_id: idList(),
  tenant_id: idList(),
})
/** A query of the events metrics API (`GET /metrics/events`, `outflow.eventMetrics`): time range, granularity, measures, dimensions and filters. */
export type EventMetricsQuery = v.InferInput<typeof EventMetricsQuerySchema>
export type ParsedEventMetricsQuery = v.InferOutput<typeof EventMetricsQuerySchema>

/** Query of `GET /metrics/attempts` and `outflow.attemptMetrics()`. */
export const AttemptMetricsQuerySchema = metricsQuery(attemptMeasures, attemptDimensions, {
  destination_id: idList(),
  destination_type: v.optional(oneOrMany(v.picklist(destinationTypes, picklistMessage(destinationTypes)), picklistMessage(destinationTypes))),
  topic: stringList(),
  status: v.optional(oneOrMany(EventStatusSchema, 'must be "success" or "failed"')),
  code: integerList('an HTTP status code'),
  manual: v.optional(v.picklist(['true', 'false'], 'must be "true" or "false"')),
  attempt_number: integerList('an attempt number'),
  tenant_id: idList(),
})
/** A query of the attempts metrics API (`GET /metrics/attempts`, `outflow.attemptMetrics`). */
export type AttemptMetricsQuery = v.InferInput<typeof AttemptMetricsQuerySchema>
export type ParsedAttemptMetricsQuery = v.InferOutput<typeof AttemptMetricsQuerySchema>

export const MetricsDataPointSchema = v.object({
  /** Start of the bucket (`2026-03-02T14:00:00Z`); absent without a granularity. */
  time_bucket: v.optional(v.pipe(v.string(), v.isoTimestamp())),
  /** The requested dimensions' values; `{}` without dimensions. */
  dimensions: v.record(v.string(), v.string()),
  /** The requested measures. */
  metrics: v.record(v.string(), v.number()),
})
/** One data point of a metrics answer: its time bucket, its dimension values and its measures. */
export type MetricsDataPoint = v.InferOutput<typeof MetricsDataPointSchema>

export const MetricsMetadataSchema = v.object({
  granularity: v.optional(v.string()),
  query_time_ms: v.number(),
  row_count: v.number(),
  row_limit: v.number(),
  truncated: v.boolean(),
})

/** `{ data, metadata }` of both metrics routes. */
export const MetricsResponseSchema = v.object({ data: v.array(MetricsDataPointSchema), metadata: MetricsMetadataSchema })
/** The answer of a metrics query: the data points and how they were computed (granularity, row count, truncation). */
export type MetricsResponse = v.InferOutput<typeof MetricsResponseSchema>
