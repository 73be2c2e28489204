import * as v from 'valibot'
import { DateTimeSchema, DirSchema, IdSchema, JsonObjectSchema, objectBody, queryInt } from './common.js'

/** Tenant as returned by the API. */
export const TenantSchema = v.object({
  /** The tenant id, chosen by the host. */
  id: v.string(),
  /** How many destinations the tenant has. */
  destinations_count: v.number(),
  /** The topics its destinations subscribe to, together. */
  topics: v.array(v.string()),
  /** The host's own data about the tenant. */
  metadata: JsonObjectSchema,
  /** When the tenant was created (RFC 3339). */
  created_at: v.string(),
  /** When it was last changed (RFC 3339). */
  updated_at: v.string(),
})
/** A tenant as the API returns it: the owner of destinations and events. */
export type Tenant = v.InferOutput<typeof TenantSchema>

/** Body of `PUT /tenants/{tenant_id}`: optional metadata; when omitted on update the stored metadata stays. */
export const UpsertTenantSchema = v.optional(objectBody(v.strictObject({ metadata: v.optional(v.nullable(JsonObjectSchema)) }, 'unexpected field')), {})
export type UpsertTenantInput = v.InferInput<typeof UpsertTenantSchema>

export const TenantIdSchema = IdSchema

/** Query of `GET /tenants`, keyed by the spec's wire names. */
export const ListTenantsQuerySchema = v.strictObject(
  {
    limit: v.optional(queryInt(1, 100), 20),
    order_by: v.optional(v.picklist(['created_at'], 'must be "created_at"'), 'created_at'),
    dir: v.optional(DirSchema, 'desc'),
    'created_at[gte]': v.optional(DateTimeSchema),
    'created_at[lte]': v.optional(DateTimeSchema),
    next: v.optional(v.string()),
    prev: v.optional(v.string()),
  },
  'unknown query parameter',
)
export type ListTenantsQuery = v.InferInput<typeof ListTenantsQuerySchema>

/** Query of `GET /tenants/{tenant_id}/portal`. */
export const PortalQuerySchema = v.strictObject({ theme: v.optional(v.picklist(['light', 'dark'], 'must be "light" or "dark"')) }, 'unknown query parameter')
export type PortalQuery = v.InferInput<typeof PortalQuerySchema>

/** Body of `POST /portal/sessions`: the code of a portal redirect URL, exchanged once for a tenant token. */
export const PortalSessionSchema = objectBody(
  v.strictObject({ code: v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(256, 'must be at most 256 characters')) }, 'unexpected field'),
)
export type PortalSessionInput = v.InferInput<typeof PortalSessionSchema>
