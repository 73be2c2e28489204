import { errorFields } from '../logger.js'
import { newId } from '../ids.js'
import { closeHttpClients } from '../net/http-client.js'
import type { ClaimedDelivery, DestinationStreak } from '../storage/storage.js'
import { reportOutcomes } from './alerts.js'
import { AttemptQueues } from './attempt-queues.js'
import { AttemptRunner } from './attempt-runner.js'
import { ClaimLoop } from './claim-loop.js'
import type { DeliveryContext, QueuedDelivery } from './context.js'
import { DestinationCache } from './destination-cache.js'
import type { RecordedAttempt } from './operator-events.js'
import { ReplayAdmission } from './replay-admission.js'
import { ReplayLane } from './replay-lane.js'
import { ResultWriter } from './result-writer.js'
import { OutageLog } from './storage-outage.js'

export type { QueuedDelivery } from './context.js'

/**
 * The delivery worker: runs attempts with a global and a per-destination concurrency limit, takes
 * deliveries from the local publish fast path and from a claim loop (due retries, other instances'
 * publishes, expired leases), and writes attempt results back in batches.
 *
 * It keeps what it holds (by delivery id, from enqueue until the result is written or the lease released)
 * and composes the parts that do the work, each with its own state:
 * - ClaimLoop: claims, lease renewal, FIFO promotion, wake-ups (claim-loop.ts);
 * - AttemptQueues: the global and per-destination slots and rate-limit tokens (attempt-queues.ts);
 * - ReplayLane with ReplayAdmission: when a replayed delivery may take a slot (replay-lane.ts, replay-admission.ts);
 * - AttemptRunner: the attempt itself (attempt-runner.ts), over the DestinationCache (destination-cache.ts);
 * - ResultWriter: batched result writes with outage retries (result-writer.ts).
 */
export class DeliveryWorker {
  readonly id = newId('wrk')
  readonly #ctx: DeliveryContext
  /** Deliveries this worker holds (queued or in flight), so the claim loop never takes them twice. */
  readonly #held = new Map<string, ClaimedDelivery>()
  /** Attempts past their start (destination read, publish, result), by delivery id. */
  readonly #started = new Map<string, Promise<void>>()
  /** Held deliveries of a deleted tenant or destination: dropped when their turn comes, never attempted. */
  readonly #dropped = new Set<string>()
  /** Held deliveries the claim loop took again after their result was written: queued once they are released. */
  readonly #reclaimed = new Map<string, QueuedDelivery>()
  readonly #maxHeld: number
  #running = false
  #stopping = false
  readonly #destinations: DestinationCache
  readonly #claims: ClaimLoop
  readonly #queues: AttemptQueues
  readonly #admission: ReplayAdmission
  readonly #replays: ReplayLane
  readonly #attempts: AttemptRunner
  readonly #results: ResultWriter

  constructor(ctx: DeliveryContext) {
    this.#ctx = ctx
    const { concurrency, batchSize } = ctx.options.delivery
    // Deliveries waiting in memory: enough to keep every slot busy between claims, bounded for memory.
    this.#maxHeld = Math.max(concurrency * 100, batchSize * 10)
    const outage = new OutageLog(ctx.options.logger)
    const stopping = () => this.#stopping
    this.#destinations = new DestinationCache(ctx)
    this.#claims = new ClaimLoop(ctx, outage, { id: this.id, held: this.#held, room: () => this.#maxHeld - this.#held.size, enqueue: (d) => this.enqueue(d) })
    this.#queues = new AttemptQueues(ctx, this.#destinations, outage, { start: (d) => this.#start(d), startBatch: (ds) => this.#startBatch(ds), dropped: (id) => this.#dropped.has(id), stopping })
    this.#admission = new ReplayAdmission(concurrency)
    this.#replays = new ReplayLane(this.#admission, { current: (d) => this.#held.get(d.id) === d && !this.#stopping, queue: (d) => this.#queues.add(d) })
    this.#results = new ResultWriter(ctx, outage, { written: (entries, streaks) => this.#written(entries, streaks), release: (ids) => this.#release(ids), stopping })
    const results = this.#results
    this.#attempts = new AttemptRunner(ctx, this.#destinations, outage, {
      stopping,
      record: (entry) => results.record(entry),
      release: (id) => this.#release([id]),
      later: (d) => this.#startLater(d),
    })
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    this.#ctx.supervisor.watch('results')
    this.#claims.start()
  }

  /** Started and not closing. */
  get running(): boolean {
    return this.#running && !this.#stopping
  }

  /** Deliveries this worker holds (claimed, queued or being attempted). */
  get inFlight(): number {
    return this.#held.size
  }

  /** Lease fields for rows a local publish inserts, when this worker has room to take them at once. */
  fastPathLease(count: number, now: Date): { lease_owner: string; lease_until: Date } | undefined {
    if (!this.#running || this.#stopping || this.#held.size + count > this.#maxHeld) return undefined
    return { lease_owner: this.id, lease_until: new Date(now.getTime() + this.#ctx.options.delivery.leaseMs) }
  }

  /** Take leased deliveries into the local queues. */
  enqueue(deliveries: QueuedDelivery[]): void {
    for (const d of deliveries) {
      const holding = this.#held.get(d.id)
      if (holding) {
        // Claimed again once its result was written, before this worker let it go: taken when it has. (An older
        // copy, claimed while its lease lapsed in an outage, is not: the one held is attempted.)
        if (d.attempt_count > holding.attempt_count) this.#reclaimed.set(d.id, d)
        continue
      }
      this.#held.set(d.id, d)
      if (d.replay) {
        this.#replays.add(d)
        continue
      }
      this.#admission.liveTaken()
      void this.#queues.add(d)
    }
    this.#replays.admit()
  }

  /** Claim now rather than at the next poll (after a manual retry, or a NOTIFY from another instance). */
  wake(): void {
    this.#claims.wake()
  }

  /** Forget a destination's cached record and publisher after it changed. */
  destinationChanged(tenantId: string, destinationId: string): void {
    this.#destinations.evict(tenantId, destinationId)
  }

  /**
   * A tenant (or one destination) was deleted: evict its cached records and publishers, drop its queued
   * deliveries, and resolve once its attempts already started have ended, so nothing reaches its
   * receivers after the delete returns. Attempts starting later read the destination afresh and find it gone.
   */
  async stopDeliveries(tenantId: string, destinationId?: string): Promise<void> {
    const owned = (tenant: string, destination: string) => tenant === tenantId && (destinationId === undefined || destination === destinationId)
    this.#destinations.evictWhere(owned)
    await this.#stopWhere((d) => owned(d.tenant_id, d.destination_id))
  }

  /**
   * Events were erased: drop their queued deliveries (they carry the payload read before), and resolve once their
   * attempts already started have ended (those send the payload they had; their results keep no response body).
   */
  async stopEventDeliveries(tenantId: string, eventIds: Iterable<string>): Promise<void> {
    const ids = new Set(eventIds)
    if (ids.size > 0) await this.#stopWhere((d) => d.tenant_id === tenantId && ids.has(d.event_id))
  }

  /** Drop the held deliveries `stop` picks that have not started, and wait for those that have. */
  async #stopWhere(stop: (d: ClaimedDelivery) => boolean): Promise<void> {
    const running: Promise<void>[] = []
    for (const [id, d] of this.#held) {
      if (!stop(d)) continue
      const attempt = this.#started.get(id)
      if (attempt) running.push(attempt)
      else this.#dropped.add(id)
    }
    await Promise.all(running)
  }

  /** A delivery's turn for a global slot came. */
  #start(d: ClaimedDelivery): Promise<void> {
    // A local publish's first attempt (claimed ones carry due_at, and their wait is the claim's poll).
    if (!d.replay && d.due_at === undefined && d.attempt_count === 0) this.#admission.liveStarted(Date.now() - d.event.created_at.getTime())
    if (this.#dropped.has(d.id)) {
      this.#release([d.id])
      return Promise.resolve()
    }
    const attempt = this.#attempts.run(d).finally(() => this.#started.delete(d.id))
    this.#started.set(d.id, attempt)
    return attempt
  }

  /**
   * A gathered batch's turn for a global slot came: its deliveries dropped meanwhile leave, the others are attempted
   * together. (Their wait is not reported to the replay admission: it includes the batch's chosen max_wait_ms, not
   * the load that admission backs off from.)
   */
  #startBatch(ds: QueuedDelivery[]): Promise<void> {
    const sending: QueuedDelivery[] = []
    for (const d of ds) {
      if (this.#dropped.has(d.id)) this.#release([d.id])
      else sending.push(d)
    }
    if (sending.length === 0) return Promise.resolve()
    const attempt = this.#attempts.runBatch(sending).finally(() => {
      for (const d of sending) if (this.#started.get(d.id) === attempt) this.#started.delete(d.id)
    })
    for (const d of sending) this.#started.set(d.id, attempt)
    return attempt
  }

  /** A held delivery leaves this worker (its result was written, it was released, or it is queued again later). */
  #unhold(id: string): void {
    const d = this.#held.get(id)
    if (!d) return
    this.#held.delete(id)
    if (!d.replay) this.#admission.liveDone()
    else this.#replays.ended(id)
  }

  /** Queue a held delivery again after a pause (it stays held meanwhile: the claim loop does not take it). */
  #startLater(d: QueuedDelivery): void {
    setTimeout(() => {
      this.#unhold(d.id)
      if (this.#stopping) return this.#release([d.id])
      this.enqueue([d])
    }, this.#ctx.options.delivery.pollIntervalMs).unref()
  }

  #release(ids: string[]): void {
    const again: QueuedDelivery[] = []
    for (const id of ids) {
      this.#unhold(id)
      this.#dropped.delete(id)
      const next = this.#reclaimed.get(id)
      if (next && this.#reclaimed.delete(id)) again.push(next)
    }
    // Closing: not taken (close() releases every lease of this worker after the last results are written).
    if (again.length > 0 && !this.#stopping) this.enqueue(again)
    this.#replays.admit()
    if (this.#held.size < this.#maxHeld / 2) this.wake()
  }

  /** A batch of results is written: claim what it made due, then report outcomes (operator events, failure streaks). */
  async #written(entries: RecordedAttempt[], streaks: DestinationStreak[]): Promise<void> {
    for (const { write } of entries) if (write.delivery.next_attempt_at) this.#claims.wakeAt(write.delivery.next_attempt_at.getTime())
    // A finished delivery to a FIFO destination made the next one of its key due: claim it now.
    if (entries.some(({ write }) => write.delivery.order_key != null && write.delivery.status !== 'pending')) this.#claims.orderedResultWritten()
    const disabled = await reportOutcomes(this.#ctx, entries, streaks).catch((err: unknown) => {
      this.#ctx.options.logger.error({ count: entries.length, error: errorFields(err) }, 'reporting attempt outcomes failed')
      return []
    })
    for (const { tenant_id, destination_id } of disabled) this.destinationChanged(tenant_id, destination_id)
  }

  /** Stop claiming, let in-flight attempts finish within `drainTimeoutMs`, write results, release leases. */
  async close(): Promise<void> {
    if (this.#stopping) return
    this.#stopping = true
    this.#replays.close()
    await this.#claims.close()
    // Attempts already running may finish; queued ones are not started.
    this.#queues.clear()
    const drained = await this.#queues.idle(this.#ctx.options.delivery.drainTimeoutMs)
    if (!drained) this.#ctx.options.logger.warn({ in_flight: this.#queues.running }, 'close: attempts still in flight after drainTimeoutMs; their leases are released')
    await this.#results.flush()
    // A worker that never started holds no lease (and an API-only process must not wait on storage here).
    if (this.#running) await this.#ctx.storage.releaseLeases(this.id).catch((err: unknown) => this.#ctx.options.logger.error({ error: errorFields(err) }, 'releasing leases failed'))
    await this.#destinations.close()
    // Pools are shared per origin; ones closed here are re-created on demand by another engine in the process.
    await closeHttpClients()
  }
}
