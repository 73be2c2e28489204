import * as v from 'valibot'

/** `outflow.health()` and `GET /healthz?details=1`: what an operator checks first. */
export const HealthReportSchema = v.object({
  /** `unavailable` when storage did not answer (the HTTP route then answers 503). */
  status: v.picklist(['ok', 'unavailable']),
  storage: v.object({
    dialect: v.picklist(['sqlite', 'postgres']),
    reachable: v.boolean(),
    /** Why it is unreachable: a short driver message, never a query. */
    error: v.optional(v.string()),
  }),
  /** Null when storage is unreachable (or not asked, for the plain check). */
  queue: v.nullable(
    v.object({
      /** Deliveries due now and not yet attempted, on every instance sharing the storage. */
      depth: v.number(),
      /** Age of the oldest of them in seconds; null when none is due. */
      oldest_due_age_seconds: v.nullable(v.number()),
    }),
  ),
  worker: v.object({
    /** `delivery.worker` (false for API-only processes). */
    enabled: v.boolean(),
    /** Started and not closing. */
    running: v.boolean(),
  }),
})
export type HealthReport = v.InferOutput<typeof HealthReportSchema>

/** Query of `GET /healthz`: `details=1` (admin key) for the full report. */
export const HealthQuerySchema = v.strictObject(
  { details: v.optional(v.picklist(['1', 'true', '0', 'false'], 'must be 1, true, 0 or false')) },
  'unknown query parameter',
)
