import type { Keyring } from '../credentials.js'
import type { Catalog } from '../delivery/catalog.js'
import type { ResolvedOptions } from '../options.js'
import type { Storage } from '../storage/storage.js'
import type { Telemetry } from '../telemetry.js'
import type { SigningKeyring } from './signing-keys.js'

/** What engine operations share: storage, resolved options and the clock. */
export interface EngineContext {
  storage: Storage
  options: ResolvedOptions
  /** Keys of credentials at rest; `undefined` only under `insecurePlaintextCredentials`. */
  credentialKeys: Keyring | undefined
  /** The Ed25519 (`v1a`) signing keyring: configured, or stored and rotated by the engine. */
  signingKeys: SigningKeyring
  /** Secret that signs tenant tokens (configured, or random per process with a warning). */
  jwtSecret: string
  /** The key of thin deliveries' payload links, derived from jwtSecret (src/tokens.ts). */
  payloadLinkKey: Uint8Array
  /** Spans and metrics of publishes. */
  telemetry: Telemetry
  /** The topic catalog, compiled at start; undefined without the `topics` option. */
  catalog: Catalog | undefined
  now(): Date
  /** Called after a destination changed or went away, so cached publishers are replaced. */
  destinationChanged(tenantId: string, destinationId: string): void
  /**
   * After a tenant (or one of its destinations) was deleted: the worker drops its queued deliveries and
   * cached publishers; resolves when its attempts already running have ended.
   */
  stopDeliveries(tenantId: string, destinationId?: string): Promise<void>
  /** After events were erased: the worker drops their queued deliveries; resolves when their attempts already running have ended. */
  stopEventDeliveries(tenantId: string, eventIds: string[]): Promise<void>
  /** A replay or erasure job was created: the local runners look for it now rather than at their next poll. */
  jobCreated(): void
}
