import { setTimeout as sleep } from 'node:timers/promises'
import PQueue from 'p-queue'
import { BatchGatherer } from './batch-gatherer.js'
import type { DeliveryContext, QueuedDelivery } from './context.js'
import type { DestinationCache } from './destination-cache.js'
import { RateLimiter } from './rate-limiter.js'
import { isUnavailable, type OutageLog } from './storage-outage.js'

const key = (tenantId: string, destinationId: string) => `${tenantId}\u0000${destinationId}`

/** What the queues ask of the worker. */
export interface AttemptQueuesHost {
  /** Run the delivery's attempt; it holds a global slot until the promise settles. */
  start(d: QueuedDelivery): Promise<void>
  /** Run a gathered batch's attempt (one destination with a `batch` policy); it holds one global slot until it settles. */
  startBatch(deliveries: QueuedDelivery[]): Promise<void>
  /** Dropped while it waited (its tenant or destination deleted): it needs no rate-limit token. */
  dropped(id: string): boolean
  stopping(): boolean
}

/**
 * The slots attempts run in: a global limit (`concurrency`) and one per destination
 * (`perDestinationConcurrency`), so a slow destination holds at most its share of the global slots; a
 * rate-limited one waits for its token in its own queue before it takes a global slot. In both queues
 * queued live attempts start before replayed ones. Deliveries of a destination with a `batch` policy are gathered
 * first (BatchGatherer); a batch then takes one slot of each kind, after one rate-limit token per event.
 *
 * @example
 * void queues.add(delivery) // resolves when its attempt ended
 */
export class AttemptQueues {
  readonly #ctx: Pick<DeliveryContext, 'storage' | 'options' | 'now'>
  readonly #destinations: DestinationCache
  readonly #outage: OutageLog
  readonly #host: AttemptQueuesHost
  readonly #global: PQueue
  readonly #perDestination = new Map<string, PQueue>()
  readonly #limiter: RateLimiter
  readonly #gatherer: BatchGatherer

  constructor(ctx: Pick<DeliveryContext, 'storage' | 'options' | 'now'>, destinations: DestinationCache, outage: OutageLog, host: AttemptQueuesHost) {
    this.#ctx = ctx
    this.#destinations = destinations
    this.#outage = outage
    this.#host = host
    this.#global = new PQueue({ concurrency: ctx.options.delivery.concurrency })
    this.#limiter = new RateLimiter(ctx.storage, ctx.now)
    this.#gatherer = new BatchGatherer({ flush: (ds, replay) => this.#addBatch(ds, replay), stopping: host.stopping })
  }

  /** Queue a delivery's attempt (gathered into a batch when its destination batches); resolves when it ended. */
  add(d: QueuedDelivery): Promise<void> {
    // One map lookup on the hot path: the record as last read (a change on this instance evicts it at once).
    const read = this.#destinations.lastRead(d.tenant_id, d.destination_id)
    // Never read (or just changed): whether it batches is known once it is.
    if (read === undefined) return this.#destinations.get(d.tenant_id, d.destination_id).then(() => this.#route(d), () => this.#addOne(d))
    const batch = read.record?.batch
    return batch ? this.#gatherer.add(d, batch) : this.#addOne(d)
  }

  #route(d: QueuedDelivery): Promise<void> {
    const batch = this.#destinations.lastRead(d.tenant_id, d.destination_id)?.record?.batch
    return batch ? this.#gatherer.add(d, batch) : this.#addOne(d)
  }

  #addOne(d: QueuedDelivery): Promise<void> {
    const k = key(d.tenant_id, d.destination_id)
    const queue = this.#perDestination.get(k) ?? this.#destinationQueue(k)
    const start = () => this.#global.add(() => this.#host.start(d), { priority: d.replay ? -1 : 0 })
    const task = () => (this.#rateLimitFree(d) ? start() : this.#rateLimited(d).then(start))
    return d.replay ? queue.add(task, { priority: -1 }) : queue.add(task)
  }

  /** A gathered batch: one per-destination slot, a token per event (all taken before it starts), one global slot. */
  #addBatch(ds: QueuedDelivery[], replay: boolean): Promise<void> {
    const first = ds[0]!
    const k = key(first.tenant_id, first.destination_id)
    const queue = this.#perDestination.get(k) ?? this.#destinationQueue(k)
    const start = () => this.#global.add(() => this.#host.startBatch(ds), { priority: replay ? -1 : 0 })
    const task = () => (this.#rateLimitFree(first) ? start() : Promise.all(ds.map((d) => this.#rateLimited(d))).then(start))
    return replay ? queue.add(task, { priority: -1 }) : queue.add(task)
  }

  /** Attempts holding a global slot. */
  get running(): number {
    return this.#global.pending
  }

  /** Drop every queued attempt (those running go on). */
  clear(): void {
    this.#gatherer.clear()
    for (const q of this.#perDestination.values()) q.clear()
    this.#global.clear()
  }

  /** Resolves true once no attempt runs, or false after `timeoutMs`. */
  idle(timeoutMs: number): Promise<boolean> {
    // Unref'd: the attempts in flight keep the process alive; the timer alone must not.
    return Promise.race([this.#global.onIdle().then(() => true), sleep(timeoutMs, false, { ref: false })])
  }

  /** Whether the delivery can take a global slot without waiting: its destination is read and has no rate limit. */
  #rateLimitFree(d: QueuedDelivery): boolean {
    const read = this.#destinations.read(d.tenant_id, d.destination_id)
    return read !== undefined && !read.record?.delivery?.rate_limit
  }

  /** Resolves when a delivery to a rate-limited destination may start (at once for any other). */
  async #rateLimited(d: QueuedDelivery): Promise<void> {
    const limit = async () => {
      if (this.#host.stopping() || this.#host.dropped(d.id)) return undefined
      return (await this.#destinations.get(d.tenant_id, d.destination_id))?.delivery?.rate_limit
    }
    for (;;) {
      try {
        if (await limit()) await this.#limiter.acquire(d.tenant_id, d.destination_id, limit)
        return
      } catch (err) {
        this.#outage.failed(err, 'taking a rate-limit token failed', { tenant_id: d.tenant_id, destination_id: d.destination_id })
        // While storage is unavailable no token can be had: wait for it rather than exceed the limit.
        if (!isUnavailable(err) || this.#host.stopping()) return
        await sleep(this.#ctx.options.delivery.pollIntervalMs, undefined, { ref: false })
      }
    }
  }

  #destinationQueue(k: string): PQueue {
    const queue = new PQueue({ concurrency: this.#ctx.options.delivery.perDestinationConcurrency })
    this.#perDestination.set(k, queue)
    queue.on('idle', () => {
      if (this.#perDestination.get(k) === queue && queue.size === 0 && queue.pending === 0) this.#perDestination.delete(k)
    })
    return queue
  }
}
