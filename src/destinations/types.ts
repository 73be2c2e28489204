import type * as v from 'valibot'

/** The eight destination types of the spec, exactly as spelled there. */
export const destinationTypes = [
  'webhook',
  'cloudx_sqs',
  'amqp_broker',
  'relay',
  'cloudx_kinesis',
  'cloudy_servicebus',
  'cloudx_s3',
  'cloudz_pubsub',
] as const
export type DestinationTypeName = (typeof destinationTypes)[number]

/** The `{type}` path parameter of the destination-types routes accepts only these six (SPEC quirk). */
export const schemaPathTypes = ['webhook', 'cloudx_sqs', 'amqp_broker', 'relay', 'cloudx_kinesis', 'cloudx_s3'] as const

/** One element of `config_fields` / `credential_fields`. */
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

/** The public schema of a destination type (GET /destination-types). */
export interface DestinationTypeSchema {
  type: DestinationTypeName
  label: string
  description: string
  icon: string
  instructions: string
  remote_setup_url?: string
  config_fields: FieldSpec[]
  credential_fields: FieldSpec[]
}

/** What a publisher is asked to deliver: one event to one destination. */
export interface DeliveryMessage {
  /** The published event id (the same for every destination). */
  id: string
  tenant_id: string
  destination_id: string
  topic: string
  time: Date
  data: unknown
  /** `event-id`, `topic`, `timestamp`, then destination `delivery_metadata`, then event `metadata` (later wins). */
  metadata: Record<string, string>
  /** 1 for the first attempt. */
  attempt: number
}

/** Why an attempt failed, recorded on the attempt so the log says why. */
export type ErrorKind =
  | 'authentication'
  | 'not_found'
  | 'throttled'
  | 'network'
  | 'timeout'
  | 'rejected'
  | 'ssrf'
  | 'configuration'
  | 'unknown'

/** The outcome of one attempt. */
export interface AttemptResult {
  ok: boolean
  response_status_code?: number | null
  response_body?: string | null
  response_headers?: Record<string, string> | null
  error_kind?: ErrorKind | null
  /** Human-readable reason for a failure (never contains secrets). */
  error?: string | null
  /** The receiver asked us to wait this long before the next attempt (Retry-After). */
  retry_after_ms?: number
  /** The receiver asked never to be called again (410 Gone): disable the destination. */
  disable?: boolean
}

/** A stored destination as a publisher sees it: decrypted credentials, validated config. */
export interface PublisherDestination {
  id: string
  tenant_id: string
  type: DestinationTypeName
  config: Record<string, unknown>
  credentials: Record<string, unknown>
}

/** Engine settings a publisher may need. */
export interface PublisherContext {
  /** Allow webhook targets on loopback/private/link-local addresses (dev and tests). */
  allowPrivateNetworks: boolean
  /** Per-attempt timeout, ms. */
  timeoutMs: number
  /** `outflow/<version>` */
  userAgent: string
  /** Base URL of the event-gateway relay (relay destinations). */
  relayUrl?: string
}

export interface Publisher {
  publish(message: DeliveryMessage): Promise<AttemptResult>
  close(): Promise<void>
}

/** Context for turning create/update credentials input into what is stored. */
export interface CredentialsInput {
  /** The validated credentials of the request (after merge patch on update). */
  credentials: Record<string, unknown>
  /** The stored credentials before this call (update only). */
  previous?: Record<string, unknown>
  now: Date
}

/**
 * Everything about one destination type, in one file (STYLE §5).
 * Adding a type is adding a file and one line in `registry.ts`.
 */
export interface DestinationTypeDefinition extends DestinationTypeSchema {
  /** Validates `config`; a strict object so unexpected fields are 422. */
  configSchema: v.GenericSchema<unknown, Record<string, unknown>>
  /** Validates `credentials`; a strict object so unexpected fields are 422. */
  credentialsSchema: v.GenericSchema<unknown, Record<string, unknown>>
  /** Whether `config` must be present on create (false only for relay). */
  configRequired: boolean
  /** Whether `credentials` must be present on create (false only for webhook). */
  credentialsRequired: boolean
  /** Credential keys returned unmasked even though they are sensitive (the webhook secret). */
  revealedCredentials?: readonly string[]
  /** Checks that need config and credentials together (after each passed its own schema); 422 data or undefined. */
  validate?(config: Record<string, unknown>, credentials: Record<string, unknown>): Record<string, string> | undefined
  /** Turn validated credentials into what is stored (generate/rotate secrets). Default: as is. */
  prepareCredentials?(input: CredentialsInput): Record<string, unknown>
  /** Short display string of where events go, e.g. `orders-queue`. */
  target(config: Record<string, unknown>): string | undefined
  /** A URL of the target (console link or endpoint), when there is one. */
  targetUrl?(config: Record<string, unknown>): string | undefined
  /** Create a publisher for a destination; SDKs are imported lazily here. Cached per destination by the engine. */
  createPublisher(destination: PublisherDestination, context: PublisherContext): Promise<Publisher>
}
