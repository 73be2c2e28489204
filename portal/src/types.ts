// The API shapes the portal reads (the engine's src/model is the source of truth; the portal bundles none of it).

export interface FieldSpec {
  key: string
  type: 'text' | 'checkbox' | 'number' | 'key_value_map'
  label: string
  description: string
  required: boolean
  sensitive: boolean
  default?: string | number | boolean
  pattern?: string
  minlength?: number
  maxlength?: number
}

export interface DestinationType {
  type: string
  label: string
  description: string
  icon: string
  instructions: string
  remote_setup_url?: string
  config_fields: FieldSpec[]
  credential_fields: FieldSpec[]
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json }
export type JsonObject = { [key: string]: Json }

export interface Destination {
  id: string
  type: string
  topics: string[]
  disabled_at: string | null
  created_at: string
  updated_at?: string
  config?: JsonObject
  credentials: JsonObject
  filter?: JsonObject | null
  metadata?: JsonObject | null
  delivery_metadata?: Record<string, string> | null
  /** Full or thin deliveries; absent: the type's default. */
  payload?: PayloadPolicy
  /** Batched deliveries; absent or null: one event per request. */
  batch?: BatchPolicy | null
  target?: string
  target_url?: string
}

/** A destination's `payload` (src/model/payload-policy.ts): full, thin, or thin above a size. */
export type PayloadPolicy = 'full' | 'thin' | { thin_above_bytes: number }

/** A destination's `batch` (src/model/batch-policy.ts): how many events, bytes and milliseconds one request gathers. */
export type BatchPolicy = {
  max_events: number
  max_bytes?: number
  max_wait_ms?: number
  /** Webhooks: a CloudEvents batch (the default) or a JSON array. */
  format?: 'cloudevents' | 'json'
}

export interface OutflowEvent {
  id: string
  destination_id: string
  topic: string
  time: string
  successful_at: string | null
  metadata: Record<string, string>
  status: 'success' | 'failed'
  data: Json
  /** Present once the event was erased: `data` is null, attempts keep no response body, and it is never sent again. */
  expunged_at?: string
}

export interface Attempt {
  id: string
  event_id: string
  destination_id: string
  delivered_at: string
  status: 'success' | 'failed'
  response_status_code: number | null
  response_body: string | null
  response_headers: Record<string, string> | null
  error?: string | null
  error_kind?: string | null
  duration_ms?: number | null
  attempt_number?: number
  manual?: boolean
}

export interface Page<T> {
  models: T[]
  pagination: { next: string | null; prev: string | null; limit: number }
}

export interface MetricsPoint {
  time_bucket?: string
  dimensions: Record<string, string>
  metrics: Record<string, number>
}

export interface MetricsResponse {
  data: MetricsPoint[]
}

/** A topic of the engine's catalog (GET /topics). */
export interface Topic {
  name: string
  description: string
  payload_schema: JsonSchema | null
  validation: 'off' | 'warn' | 'enforce'
  deprecated: boolean
  replaced_by: string | null
  examples?: Json[]
}

/** The parts of a JSON Schema the portal shows. */
export interface JsonSchema {
  type?: string | string[]
  description?: string
  properties?: Record<string, JsonSchema>
  required?: string[]
  items?: JsonSchema
  enum?: Json[]
  const?: Json
  format?: string
  $ref?: string
  $defs?: Record<string, JsonSchema>
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  minimum?: number
  maximum?: number
  additionalProperties?: boolean | JsonSchema
}
