import * as v from 'valibot'
import { IdSchema, JsonObjectSchema } from '../model/common.js'
import { DestinationSchema } from '../model/destination.js'
import { EventSchema } from '../model/event.js'
import { LoopNameSchema } from '../model/health.js'
import { RecoverySchema } from '../model/replay.js'
import { PaginationSchema } from '../model/pagination.js'
import { TenantSchema } from '../model/tenant.js'

// HTTP-only shapes: path parameters, the portal query and the response objects src/model does not
// declare. Routes validate with these and openapi.ts documents them, so the two cannot drift.

/** `{tenant_id}`, `{destination_id}`, `{event_id}`: the engine's id rules. */
export const PathIdSchema = IdSchema

/** Query of routes that take none: any parameter is a 400. */
export const NoQuerySchema = v.strictObject({}, 'unknown query parameter')

/** Query of `GET /tenants/{tenant_id}/portal`. */
export { PortalQuerySchema } from '../model/tenant.js'

export const TenantPageSchema = v.object({ models: v.array(TenantSchema), pagination: PaginationSchema, count: v.number() })
export const EventPageSchema = v.object({ models: v.array(EventSchema), pagination: PaginationSchema })
export const SuccessSchema = v.object({ success: v.boolean() })
export const PortalRedirectSchema = v.object({ redirect_url: v.pipe(v.string(), v.url()), tenant_id: v.string() })
export const TenantTokenSchema = v.object({ token: v.string(), tenant_id: v.string() })
/**
 * `GET /healthz` without details: `ok`; `unavailable` (503) when storage does not answer; `unhealthy` (503)
 * when a loop of the engine has failed, with `failed_loops` naming them.
 */
export const HealthSchema = v.object({ status: v.picklist(['ok', 'unavailable', 'unhealthy']), failed_loops: v.optional(v.array(LoopNameSchema)) })

/** Every error body: `{ status, message, data? }`, `data` mapping a field or parameter to what is wrong. */
export const ErrorBodySchema = v.object({
  status: v.number(),
  message: v.string(),
  data: v.optional(v.record(v.string(), v.string())),
})

/** The OpenAPI document is served as is; its shape is JSON. */
export const OpenApiDocumentSchema = JsonObjectSchema

/** The answer of Enable Destination: the destination, and `recovery` when deliveries were skipped while it was disabled. */
export const EnabledDestinationSchema = v.intersect([DestinationSchema, v.object({ recovery: v.optional(RecoverySchema) })])
