import { defaultBatchBytes, defaultBatchWaitMs, type BatchPolicy } from '../model/batch-policy.js'
import type { QueuedDelivery } from './context.js'

/** What the gatherer hands its batches to. */
export interface BatchGathererHost {
  /** Queue a gathered batch (one destination, all live or all replayed); resolves when its attempt ended. */
  flush(deliveries: QueuedDelivery[], replay: boolean): Promise<void>
  stopping(): boolean
}

interface Gathering {
  deliveries: QueuedDelivery[]
  bytes: number
  maxEvents: number
  replay: boolean
  timer?: NodeJS.Timeout
  /** Settles when the batch's attempt ended: what add() answers for each of its deliveries. */
  done: Promise<void>
  settle: () => void
}

/** Bytes of an event's data as stored (its JSON text), what `max_bytes` counts. */
function dataBytes(d: QueuedDelivery): number {
  const { data_json: json, data } = d.event
  return Buffer.byteLength(json ?? JSON.stringify(data ?? null) ?? 'null')
}

/**
 * Deliveries of destinations with a `batch` policy, gathered per tenant and destination (live and replayed apart, so
 * replays batch among themselves and keep their lower priority) until a batch has `max_events` events, would pass
 * `max_bytes` of data with the next one, or its first delivery has waited `max_wait_ms` (replayed ones: until the
 * end of the turn in which they were admitted): then it is handed on whole. An event larger than `max_bytes` goes
 * in a batch of its own.
 *
 * @example
 * void gatherer.add(delivery, destination.batch) // resolves when the attempt of its batch ended
 */
export class BatchGatherer {
  readonly #host: BatchGathererHost
  readonly #gathering = new Map<string, Gathering>()

  constructor(host: BatchGathererHost) {
    this.#host = host
  }

  /** Add a delivery to its destination's batch; resolves when that batch's attempt ended. */
  add(d: QueuedDelivery, policy: BatchPolicy): Promise<void> {
    const replay = d.replay === true
    const k = `${d.tenant_id}\u0000${d.destination_id}\u0000${replay ? 'replay' : 'live'}`
    const bytes = dataBytes(d)
    let gathering = this.#gathering.get(k)
    if (gathering && gathering.bytes + bytes > (policy.max_bytes ?? defaultBatchBytes)) {
      this.#flush(k, gathering)
      gathering = undefined
    }
    gathering ??= this.#open(k, policy, replay)
    gathering.deliveries.push(d)
    gathering.bytes += bytes
    // Closing: nothing waits (the batch is handed on at once, and not attempted).
    if (gathering.deliveries.length >= gathering.maxEvents || this.#host.stopping()) this.#flush(k, gathering)
    return gathering.done
  }

  /** Forget every batch still gathering (close(): their leases are released with the worker's). */
  clear(): void {
    for (const gathering of this.#gathering.values()) clearTimeout(gathering.timer)
    this.#gathering.clear()
  }

  #open(k: string, policy: BatchPolicy, replay: boolean): Gathering {
    let settle!: () => void
    const done = new Promise<void>((resolve) => (settle = resolve))
    const gathering: Gathering = { deliveries: [], bytes: 0, maxEvents: policy.max_events, replay, done, settle }
    // Replayed deliveries are admitted at a pace of their own (replay-admission.ts): a batch of them takes those
    // admitted together and waits for no more, or each would hold its admission slot for max_wait_ms.
    gathering.timer = setTimeout(() => this.#flush(k, gathering), replay ? 0 : (policy.max_wait_ms ?? defaultBatchWaitMs))
    gathering.timer.unref()
    this.#gathering.set(k, gathering)
    return gathering
  }

  #flush(k: string, gathering: Gathering): void {
    clearTimeout(gathering.timer)
    if (this.#gathering.get(k) === gathering) this.#gathering.delete(k)
    void this.#host.flush(gathering.deliveries, gathering.replay).then(gathering.settle, gathering.settle)
  }
}
