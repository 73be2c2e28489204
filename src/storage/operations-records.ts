// The requests and rows of metrics and retention (see Storage's eventMetrics, attemptMetrics and pruneEvents).
import type { AttemptDimension, EventDimension, Granularity } from '../model/metrics.js'

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

/** Partitions of the partitioned layout (Postgres): make the coming days', drop whole days past the window. */
export interface PartitionRequest {
  /** Days whose events are all older than this (by `time`) and that hold no pending delivery are dropped. */
  before: Date
  /** The partitions of this day and the next 7 are made if missing. */
  now: Date
}

/** One day dropped by retention: its partitions of events, deliveries and attempts, with the rows they held. */
export interface DroppedDay {
  /** `YYYYMMDD` (UTC). */
  day: string
  events: number
  deliveries: number
  attempts: number
  /**
   * Whether a count is the planner's estimate rather than a count: a partition of 8 MB or more is not scanned
   * before it is dropped.
   */
  estimated: boolean
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
