import type { ResolvedOptions } from '../options.js'
import type { Storage } from '../storage/storage.js'

/** What engine operations share: storage, resolved options and the clock. */
export interface EngineContext {
  storage: Storage
  options: ResolvedOptions
  /** AES key for credentials at rest, when the engine has an `encryptionKey`. */
  encryptionKey: Buffer | undefined
  /** Secret that signs tenant tokens (configured, or random per process with a warning). */
  jwtSecret: string
  now(): Date
  /** Called after a destination changed or went away, so cached publishers are replaced. */
  destinationChanged(tenantId: string, destinationId: string): void
  /**
   * After a tenant (or one of its destinations) was deleted: the worker drops its queued deliveries and
   * cached publishers; resolves when its attempts already running have ended.
   */
  stopDeliveries(tenantId: string, destinationId?: string): Promise<void>
}
