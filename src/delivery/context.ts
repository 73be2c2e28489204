import type { Keyring } from '../credentials.js'
import type { Ed25519Key } from '../net/ed25519.js'
import type { Logger } from '../logger.js'
import type { ClaimedDelivery, Storage } from '../storage/storage.js'
import type { Telemetry, TraceLink } from '../telemetry.js'
import type { DeliveryReporter } from './events.js'
import type { RetryOptions } from './retry-schedule.js'
import type { PayloadLinks } from './thin-payload.js'
import type { Supervisor } from './supervisor.js'

/** The engine settings delivery reads (a subset of the resolved engine options). */
export interface DeliverySettings {
  delivery: {
    concurrency: number
    perDestinationConcurrency: number
    timeoutMs: number
    leaseMs: number
    pollIntervalMs: number
    batchSize: number
    drainTimeoutMs: number
    retry: RetryOptions
    /** The egress proxy of webhook and relay traffic (`http://host:port`). */
    proxy?: string | undefined
  }
  alerts: { consecutiveFailures: number; autoDisable: boolean }
  /** The operator tenant (its deliveries raise no operator events; its sink may be on a private network). */
  operatorEvents?: { tenantId: string } | undefined
  allowPrivateNetworks: boolean
  relayUrl?: string | undefined
  logger: Logger
}

/** What the delivery worker is given by the engine: storage, settings, the key to unseal credentials, and where to report. */
export interface DeliveryContext {
  storage: Storage
  options: DeliverySettings
  /** Keys of credentials at rest; `undefined` only under `insecurePlaintextCredentials`. */
  credentialKeys: Keyring | undefined
  reporter: DeliveryReporter
  /** Attempt spans and delivery metrics. */
  telemetry: Telemetry
  /** Restarts the worker's loops when they throw, and tells health which failed. */
  supervisor: Supervisor
  /** The Ed25519 keys that sign `v1a` signatures now, active first (the engine's keyring). */
  signers(): Ed25519Key[]
  /** How thin deliveries' payload links are minted; undefined without the engine's `publicUrl` (every delivery is full). */
  payloadLinks?: PayloadLinks | undefined
  now(): Date
}

/** A leased delivery in the worker's queues; a local publish's carry its span context in memory. */
export type QueuedDelivery = ClaimedDelivery & { trace?: TraceLink }
