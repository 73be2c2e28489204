import { CredentialsError, unsealCredentials } from '../credentials.js'
import { destinationType } from '../destinations/registry.js'
import type { Publisher } from '../destinations/types.js'
import { DeliveryError } from '../net/http-client.js'
import type { DestinationRecord } from '../storage/storage.js'
import type { DeliveryContext } from './context.js'
import { operatorSinkId } from './operator-events.js'

const userAgent = 'outflow/0.1.0'
/** How long a destination read is reused before it is read again (changes on this instance evict at once). */
const destinationCacheMs = 1_000

const key = (tenantId: string, destinationId: string) => `${tenantId}\u0000${destinationId}`

interface CachedRecord {
  record: Promise<DestinationRecord | null>
  at: number
  /** Set once the read has answered: what most attempts use, without waiting. */
  read?: { record: DestinationRecord | null }
}

/**
 * The destinations the worker delivers to: their records (read at most once a second), their publishers
 * (kept until the destination is updated) and the credentials unsealed into them. A change on this instance
 * evicts both at once; other instances' changes are seen within a second.
 *
 * @example
 * const destination = cache.read(tenantId, destinationId)?.record ?? (await cache.get(tenantId, destinationId))
 * if (destination) await (await cache.publisher(destination)).publish(message, { signal })
 */
export class DestinationCache {
  readonly #ctx: Pick<DeliveryContext, 'storage' | 'options' | 'credentialKeys' | 'signers'>
  readonly #records = new Map<string, CachedRecord>()
  readonly #publishers = new Map<string, { publisher: Promise<Publisher>; version: number }>()

  constructor(ctx: Pick<DeliveryContext, 'storage' | 'options' | 'credentialKeys' | 'signers'>) {
    this.#ctx = ctx
  }

  /** The destination's record (null: gone), from the cache when it is fresh. */
  get(tenantId: string, destinationId: string): Promise<DestinationRecord | null> {
    const k = key(tenantId, destinationId)
    const cached = this.#records.get(k)
    if (cached && Date.now() - cached.at < destinationCacheMs) return cached.record
    const record = this.#ctx.storage.getDestination(tenantId, destinationId)
    const entry: CachedRecord = { record, at: Date.now() }
    this.#records.set(k, entry)
    record.then(
      (answer) => (entry.read = { record: answer }),
      () => this.#records.get(k) === entry && this.#records.delete(k),
    )
    return record
  }

  /** The destination's cached record if it has been read (null: gone), without waiting; undefined when it must be read. */
  read(tenantId: string, destinationId: string): { record: DestinationRecord | null } | undefined {
    const cached = this.#records.get(key(tenantId, destinationId))
    return cached && Date.now() - cached.at < destinationCacheMs ? cached.read : undefined
  }

  /**
   * The destination's record as last read, however long ago (null: gone), without waiting; undefined when it was
   * never read or was evicted. For what may lag a second behind another instance's change (whether it batches).
   */
  lastRead(tenantId: string, destinationId: string): { record: DestinationRecord | null } | undefined {
    return this.#records.get(key(tenantId, destinationId))?.read
  }

  /** The cached publisher of a destination, replaced when the destination was updated. */
  publisher(destination: DestinationRecord): Promise<Publisher> {
    const k = key(destination.tenant_id, destination.id)
    const version = destination.updated_at.getTime()
    const cached = this.#publishers.get(k)
    if (cached && cached.version === version) return cached.publisher
    if (cached) void cached.publisher.then((p) => p.close()).catch(() => undefined)
    const { options } = this.#ctx
    const publisher = destinationType(destination.type).createPublisher(
      { id: destination.id, tenant_id: destination.tenant_id, type: destination.type, config: destination.config, credentials: this.#credentials(destination), batch: destination.batch ?? null },
      { allowPrivateNetworks: options.allowPrivateNetworks || this.#isOperatorSink(destination), userAgent, relayUrl: options.relayUrl, signers: this.#ctx.signers, ...(options.delivery.proxy ? { proxy: options.delivery.proxy } : {}) },
    )
    this.#publishers.set(k, { publisher, version })
    publisher.catch(() => this.#publishers.get(k)?.publisher === publisher && this.#publishers.delete(k))
    return publisher
  }

  /** Forget a destination's cached record and publisher after it changed. */
  evict(tenantId: string, destinationId: string): void {
    const k = key(tenantId, destinationId)
    this.#records.delete(k)
    const cached = this.#publishers.get(k)
    this.#publishers.delete(k)
    if (cached) void cached.publisher.then((p) => p.close()).catch(() => undefined)
  }

  /** Evict every cached destination `owned` names (a deleted tenant's, or one deleted destination). */
  evictWhere(owned: (tenantId: string, destinationId: string) => boolean): void {
    for (const k of new Set([...this.#records.keys(), ...this.#publishers.keys()])) {
      const [tenant, destination] = k.split('\u0000') as [string, string]
      if (owned(tenant, destination)) this.evict(tenant, destination)
    }
  }

  /** Close every cached publisher. */
  async close(): Promise<void> {
    await Promise.all([...this.#publishers.values()].map((c) => c.publisher.then((p) => p.close()).catch(() => undefined)))
    this.#publishers.clear()
  }

  /** The operator configured the sink's address (like the alert URL before it), so it may be on a private network. */
  #isOperatorSink(destination: DestinationRecord): boolean {
    return destination.tenant_id === this.#ctx.options.operatorEvents?.tenantId && destination.id === operatorSinkId
  }

  /** Unreadable credentials (wrong key, a row copied from another destination) fail the attempt as a configuration error. */
  #credentials(destination: DestinationRecord): Record<string, unknown> {
    try {
      return unsealCredentials(destination.credentials, this.#ctx.credentialKeys, { tenantId: destination.tenant_id, destinationId: destination.id })
    } catch (err) {
      if (err instanceof CredentialsError) throw new DeliveryError('configuration', err.message, { cause: err })
      throw err
    }
  }
}
