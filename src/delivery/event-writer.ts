import type { DeliveryWorker, QueuedDelivery } from './worker.js'
import { OutflowError, notFound } from '../errors.js'
import { newId } from '../ids.js'
import type { PublishResult } from '../model/event.js'
import type { EventRecord, InsertEventResult, NewDelivery, NewEventWithDeliveries, PublishTarget } from '../storage/storage.js'
import { orderingKey } from '../model/delivery-settings.js'
import type { TraceLink } from '../telemetry.js'
import type { Storage } from '../storage/storage.js'
import { matchDestinations } from './match.js'

/** A validated event to record; `destination_id` narrows delivery to one destination. */
export interface EventToWrite {
  event: EventRecord
  destinationId?: string
  /** The publish span's context, handed to the attempt spans of fast-path deliveries. */
  trace?: TraceLink
}

interface Pending {
  events: EventToWrite[]
  resolve(results: PublishResult[]): void
  reject(error: unknown): void
}

/** Events of concurrent calls committed together in one transaction, at most. */
const maxEventsPerCommit = 1000

/**
 * Group commit for publishing: concurrent `publish()` calls are matched and written in one
 * transaction, so many small publishes cost one commit (one fsync on SQLite) instead of one each.
 * Every call still resolves only after the commit that holds its events.
 */
export class EventWriter {
  readonly #storage: Storage
  readonly #now: () => Date
  readonly #worker: DeliveryWorker
  #queue: Pending[] = []
  #running?: Promise<void>

  constructor(storage: Storage, worker: DeliveryWorker, now: () => Date = () => new Date()) {
    this.#storage = storage
    this.#now = now
    this.#worker = worker
  }

  /** performance.now() of the last write asked for (0: none yet). */
  lastWriteAt = 0

  write(events: EventToWrite[]): Promise<PublishResult[]> {
    this.lastWriteAt = performance.now()
    return new Promise((resolve, reject) => {
      this.#queue.push({ events, resolve, reject })
      this.#start()
    })
  }

  #start(): void {
    if (this.#running) return
    this.#running = (async () => {
      // Let the calls of this turn of the event loop join the batch.
      await new Promise<void>((resolve) => setImmediate(resolve))
      while (this.#queue.length > 0) await this.#commit(this.#takeBatch())
    })().finally(() => {
      this.#running = undefined
      if (this.#queue.length > 0) this.#start()
    })
  }

  #takeBatch(): Pending[] {
    let count = 0
    let n = 0
    while (n < this.#queue.length && (n === 0 || count + this.#queue[n]!.events.length <= maxEventsPerCommit)) count += this.#queue[n++]!.events.length
    return this.#queue.splice(0, n)
  }

  async #commit(batch: Pending[]): Promise<void> {
    try {
      const tenantIds = [...new Set(batch.flatMap((p) => p.events.map((e) => e.event.tenant_id)))]
      const targets = await this.#storage.publishTargets(tenantIds).catch((err: unknown) => {
        this.#failQueued(err)
        throw err
      })
      const accepted = planCalls(batch, targets)
      const items = accepted.flatMap((a) => a.items)
      const count = items.reduce((n, i) => n + i.deliveries.filter(takesFastPath).length, 0)
      const lease = this.#worker.fastPathLease(count, this.#now())
      if (lease) for (const item of items) for (const d of item.deliveries) if (takesFastPath(d)) Object.assign(d, lease)
      let results
      try {
        results = await this.#storage.insertEvents(items)
      } catch (err) {
        for (const a of accepted) a.pending.reject(err)
        this.#failQueued(err)
        return
      }
      const claimed = answerCalls(accepted, results, Boolean(lease))
      if (claimed.length) this.#worker.enqueue(claimed)
    } catch (err) {
      for (const p of batch) p.reject(err)
    }
  }

  /**
   * Storage is unavailable: the calls queued behind the failed commit fail at once with the same error
   * rather than each wait for a commit of their own to fail, so a publish answers within one commit's
   * storage timeouts while the database does not answer.
   */
  #failQueued(err: unknown): void {
    if (!(err instanceof OutflowError && err.code === 'unavailable')) return
    for (const p of this.#queue.splice(0)) p.reject(err)
  }

  /** Resolves when every queued publish has been committed or rejected. */
  async drain(): Promise<void> {
    while (this.#running) await this.#running
  }
}

/** A call of the batch with the rows planned for its events. */
interface AcceptedCall {
  pending: Pending
  items: NewEventWithDeliveries[]
}

/** Skipped deliveries are never attempted, and ordered ones wait for their turn: neither takes the fast path. */
const takesFastPath = (d: NewDelivery) => !d.skipped && d.order_key === undefined

/** Plan each call's rows; a call naming an unknown tenant or destination fails alone, the rest of the batch goes on. */
function planCalls(batch: Pending[], targets: Map<string, PublishTarget[]>): AcceptedCall[] {
  const accepted: AcceptedCall[] = []
  for (const pending of batch) {
    try {
      // One group per call: its events are inserted all or none (storage re-checks the tenants).
      const group = accepted.length
      accepted.push({ pending, items: pending.events.map((e) => ({ ...planDeliveries(e, targets), group })) })
    } catch (err) {
      pending.reject(err)
    }
  }
  return accepted
}

/**
 * Answer each call with its share of the insert's `results` (in call order). `leased`: the fast-path deliveries
 * were inserted leased to the local worker; returns those written, for its queue.
 */
function answerCalls(accepted: AcceptedCall[], results: InsertEventResult[], leased: boolean): QueuedDelivery[] {
  const claimed: QueuedDelivery[] = []
  let offset = 0
  for (const { pending, items: own } of accepted) {
    const mine = results.slice(offset, offset + own.length)
    offset += own.length
    // Deleted between the read of its targets and the insert: as if deleted first.
    const missing = mine.find((r) => r.missing_tenant !== undefined)?.missing_tenant
    if (missing !== undefined) {
      pending.reject(notFound('tenant', missing))
      continue
    }
    pending.resolve(mine.map((r, i) => ({ id: own[i]!.event.id, duplicate: r.duplicate, destination_ids: r.destination_ids })))
    if (leased)
      mine.forEach((r, i) => {
        if (r.duplicate) return
        const { event, deliveries } = own[i]!
        const { trace } = pending.events[i]!
        // Only the deliveries written: a destination deleted meanwhile has none.
        for (const d of deliveries)
          if (takesFastPath(d) && r.destination_ids.includes(d.destination_id))
            claimed.push({ id: d.id, tenant_id: event.tenant_id, event_id: event.id, destination_id: d.destination_id, attempt_count: 0, manual: false, event, trace })
      })
  }
  return claimed
}

/**
 * The event with one delivery per matching destination of its tenant (due at once, not leased): skipped for a
 * disabled one, waiting with its ordering key for a FIFO one. An unknown tenant, or a `destination_id` the
 * tenant does not have, is a 404.
 */
export function planDeliveries({ event, destinationId }: EventToWrite, targets: Map<string, PublishTarget[]>): NewEventWithDeliveries {
  const all = targets.get(event.tenant_id)
  if (!all) throw notFound('tenant', event.tenant_id)
  if (destinationId !== undefined && !all.some((d) => d.id === destinationId)) throw notFound('destination', destinationId)
  // A disabled destination's match is recorded as skipped rather than dropped: a replay can send it later.
  const matched = matchDestinations(event, all, destinationId)
  const subject = () => ({ id: event.id, topic: event.topic, time: event.time.toISOString(), metadata: event.metadata, data: event.data })
  return {
    event,
    deliveries: matched.map((d) => {
      const delivery: NewDelivery = { id: newId('dlv', event.created_at), destination_id: d.id, next_attempt_at: event.created_at }
      if (d.disabled_at) delivery.skipped = true
      else {
        const key = d.delivery?.ordering ? orderingKey(d.delivery, subject()) : null
        if (key !== null) delivery.order_key = key
      }
      return delivery
    }),
  }
}
