import * as v from 'valibot'

/** The engine's loops, as the supervisor names them (src/delivery/supervisor.ts). */
export const LoopNameSchema = v.picklist(['claim', 'leases', 'results', 'listen', 'replay', 'expunge', 'prune'])

/** One supervised loop: `restarting` after it threw, `failed` after it threw `supervisor.restarts` times in a row. */
export const LoopHealthSchema = v.object({
  name: LoopNameSchema,
  status: v.picklist(['running', 'restarting', 'failed']),
  /** Restarts since the engine started. */
  restarts: v.number(),
  /** The last error, while restarting or failed. */
  error: v.optional(v.string()),
  /** When the current run of failures began, while restarting or failed. */
  since: v.optional(v.string()),
})
export type LoopName = v.InferOutput<typeof LoopNameSchema>
export type LoopHealth = v.InferOutput<typeof LoopHealthSchema>

/** `outflow.health()` and `GET /healthz?details=1`: what an operator checks first. */
export const HealthReportSchema = v.object({
  /**
   * `unavailable` when storage did not answer; `unhealthy` when storage answers but a loop has failed
   * (`loops` says which). The HTTP route answers 503 for both.
   */
  status: v.picklist(['ok', 'unavailable', 'unhealthy']),
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
  /** The loops this process runs (the worker's only when it runs), each with its state. */
  loops: v.array(LoopHealthSchema),
})
/** What `outflow.health()` and `GET /healthz?details=1` report: status, storage, the shared queue, the worker and each loop. */
export type HealthReport = v.InferOutput<typeof HealthReportSchema>

/** Query of `GET /healthz`: `details=1` (admin key) for the full report. */
export const HealthQuerySchema = v.strictObject(
  { details: v.optional(v.picklist(['1', 'true', '0', 'false'], 'must be 1, true, 0 or false')) },
  'unknown query parameter',
)
