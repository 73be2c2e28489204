import type * as v from 'valibot'
import type { AttemptResult } from '../model/attempt-result.js'
import type { Ed25519Key } from '../net/ed25519.js'
import type { DestinationTypeName, DestinationTypeSchema } from '../model/destination-type.js'
import type { BatchPolicy } from '../model/batch-policy.js'

/** What a publisher is asked to deliver: one event to one destination. */
export interface DeliveryMessage {
  /** The published event id (the same for every destination). */
  id: string
  /** The tenant of the event. */
  tenant_id: string
  /** The destination this message goes to. */
  destination_id: string
  /** The event's topic. */
  topic: string
  /** The event's time. */
  time: Date
  /** The event's payload. */
  data: unknown
  /** `data` as the JSON text the storage holds, when it kept it: sent as it is (see `jsonBody`). */
  data_json?: string
  /** `event-id`, `topic`, `timestamp`, then destination `delivery_metadata`, then event `metadata` (later wins). */
  metadata: Record<string, string>
  /** 1 for the first attempt. */
  attempt: number
  /** The event's FIFO ordering key when the destination is ordered (`''`: the whole destination is one sequence). */
  ordering_key?: string
  /** W3C trace context of this attempt (`traceparent`, `tracestate`) when the host opted in; HTTP types send it as headers. */
  trace_headers?: Record<string, string>
}

/** A stored destination as a publisher sees it: decrypted credentials, validated config. */
export interface PublisherDestination {
  id: string
  tenant_id: string
  type: DestinationTypeName
  config: Record<string, unknown>
  credentials: Record<string, unknown>
  /** The destination's batch policy, when it batches (its publisher is made again when it changes). */
  batch?: BatchPolicy | null
}

/** Engine settings a publisher may need. */
export interface PublisherContext {
  /** Allow webhook targets on loopback/private/link-local addresses (dev and tests). */
  allowPrivateNetworks: boolean
  /** `outflow/<version>` */
  userAgent: string
  /** Base URL of the event-gateway relay (relay destinations). */
  relayUrl?: string
  /** The engine's Ed25519 keys that sign `v1a` signatures now, active first (read per attempt: rotation needs no new publisher). */
  signers?: () => Ed25519Key[]
  /** The engine's egress proxy (`delivery.proxy`), for HTTP types: webhook and relay. */
  proxy?: string
}

/** What comes with each publish besides the message. */
export interface PublishOptions {
  /**
   * The attempt's deadline, set by the worker. A publisher stops waiting once it aborts (passing it on to its
   * SDK where the SDK takes one) and reports the attempt as a `timeout`.
   */
  signal: AbortSignal
}

/** Sends messages to one destination; created per destination by its type's `createPublisher` and reused. */
export interface Publisher {
  /** Make one attempt; failures are reported in the result, not thrown. */
  publish(message: DeliveryMessage, options: PublishOptions): Promise<AttemptResult>
  /**
   * Send several messages of one destination (its `batch` policy) in as few calls as the type's API allows, under
   * one deadline. One result per message, in the order given: an all-or-nothing type (webhook) gives every message
   * the same result; a per-entry API (SQS `SendMessageBatch`, Kinesis `PutRecords`) gives each its own, so only
   * the refused entries are retried. Failures are reported in the results, not thrown. A type without it has its
   * batches published one message at a time.
   */
  publishBatch?(messages: DeliveryMessage[], options: PublishOptions): Promise<AttemptResult[]>
  /** Release the publisher's connections (when the destination changes or the engine closes). */
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
  /**
   * The optional packages (SDKs) its publisher loads, e.g. `['amqplib']`. While one cannot be loaded, creating or
   * updating a destination of the type is refused (422 naming `npm install …`); its instructions name them.
   */
  packages?: readonly string[]
  /** Credential keys returned unmasked even though they are sensitive (the webhook secret). */
  revealedCredentials?: readonly string[]
  /**
   * Checks that need config and credentials together (after each passed its own schema); 422 data or undefined.
   * May be async: a check can use the type's own SDK (loaded once `packages` did).
   */
  validate?(config: Record<string, unknown>, credentials: Record<string, unknown>): Record<string, string> | undefined | Promise<Record<string, string> | undefined>
  /** Turn validated credentials into what is stored (generate/rotate secrets). Default: as is. */
  prepareCredentials?(input: CredentialsInput): Record<string, unknown>
  /**
   * The largest message its broker takes, in bytes (SQS, Service Bus, EventBridge: 256 KiB; Kinesis: 1 MiB). A
   * destination without a `payload` policy gets a larger event thin instead of a refusal, when links can be made.
   */
  maxMessageBytes?: number
  /** Short display string of where events go, e.g. `orders-queue`. */
  target(config: Record<string, unknown>): string | undefined
  /** A URL of the target (console link or endpoint), when there is one. */
  targetUrl?(config: Record<string, unknown>): string | undefined
  /** Create a publisher for a destination; SDKs are imported lazily here. Cached per destination by the engine. */
  createPublisher(destination: PublisherDestination, context: PublisherContext): Promise<Publisher>
}

/**
 * The message's data as a JSON body: the stored text when the storage kept it (no parse, no serialisation
 * per attempt, the same bytes on every attempt), else `data` serialised.
 *
 * @example
 * const body = jsonBody(message) // '{"order":"ord_1"}'
 */
export function jsonBody(message: Pick<DeliveryMessage, 'data' | 'data_json'>): string {
  return message.data_json ?? JSON.stringify(message.data ?? null)
}
