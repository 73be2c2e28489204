import type * as v from 'valibot'
import type { Outflow } from '../engine.js'
import type { QueryRecord } from './query.js'

/**
 * Who may call a route (DESIGN §3): `public` anyone; `admin` the API key only; `tenant` the API key
 * or a token of the path's `{tenant_id}`; `token` the API key or any tenant token.
 */
export type Access = 'public' | 'admin' | 'tenant' | 'token'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

export type Schema = v.GenericSchema

export interface RouteContext {
  outflow: Outflow
  params: Record<string, string>
  query: QueryRecord
  body: unknown
  /** The OpenAPI document, for the one route that serves it. */
  openapi: () => unknown
  /** Hold the caller to a stricter rule than the route's own (e.g. health details need the admin key): 401/403. */
  authorize: (access: Access) => Promise<void>
  /** The tenant a tenant token limits the caller to; undefined for the admin key and public routes. */
  tenantScope?: string
  /** The built-in portal's URL on the host the request came to; undefined when it is not served. */
  portalUrl?: string
}

/** A handler's answer when its status is not the route's first documented one. */
export class Reply {
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string> = {},
  ) {}
}

export interface RouteSpec {
  method: HttpMethod
  /** OpenAPI-style path below `/api/v1`, e.g. `/tenants/{tenant_id}`. */
  path: string
  operationId: string
  summary: string
  tag: 'Tenants' | 'Destinations' | 'Destination types' | 'Topics' | 'Events' | 'Replays' | 'Metrics' | 'Service'
  access: Access
  /** Validates every path parameter; a bad value is a 400 naming it. */
  params: Record<string, Schema>
  /** Validates the query (a strict object: unknown parameters are a 400). */
  query: Schema
  /** `deepObject`: bracketed names (`time[start]`, `measures[0]`) are nested before validation, as Outpost reads them. */
  queryStyle?: 'form' | 'deepObject'
  /** JSON request body; the engine validates it (422). */
  body?: { schema: Schema; required: boolean }
  /** Documented successes, the first one being the default status. */
  responses: [{ status: number; description: string; schema?: Schema }, ...{ status: number; description: string; schema?: Schema }[]]
  /** Route-specific error statuses for the document (the common ones are derived). */
  errors?: { status: number; description: string }[]
  deprecated?: boolean
  handle: (ctx: RouteContext) => Promise<unknown>
}
