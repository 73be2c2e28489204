import type { QueuedDelivery } from './context.js'
import type { ReplayAdmission } from './replay-admission.js'

/** What the lane asks of the worker. */
export interface ReplayLaneHost {
  /** Whether the delivery is still the worker's to attempt (not released meanwhile, the worker not closing). */
  current(d: QueuedDelivery): boolean
  /** Queue an admitted delivery for its attempt; resolves when the attempt ended (its result is written later). */
  queue(d: QueuedDelivery): Promise<void>
}

/**
 * Replayed deliveries waiting for ReplayAdmission to let them start (a share of the slots and a rate that
 * follows the live deliveries' latency while they flow; everything otherwise). They wait here, before their
 * destination's queue, so live deliveries to the same destination never queue behind them.
 *
 * @example
 * lane.add(replayed); lane.admit() // queued now, or when the admission's rate allows
 */
export class ReplayLane {
  readonly #admission: ReplayAdmission
  readonly #host: ReplayLaneHost
  readonly #waiting: QueuedDelivery[] = []
  /** Ids of those past admission (queued or being attempted). */
  readonly #admitted = new Set<string>()
  /** Admits the next replayed delivery when the admission's rate allows one. */
  #timer?: NodeJS.Timeout

  constructor(admission: ReplayAdmission, host: ReplayLaneHost) {
    this.#admission = admission
    this.#host = host
  }

  /** A replayed delivery waits for admission (admit() lets it in). */
  add(d: QueuedDelivery): void {
    this.#waiting.push(d)
  }

  /** Queue waiting deliveries while the admission has slots and starts for them; else try again when it will. */
  admit(): void {
    clearTimeout(this.#timer)
    this.#timer = undefined
    while (this.#waiting.length > 0 && this.#admitted.size < this.#admission.slots()) {
      const d = this.#waiting[0]!
      // Released meanwhile (close()): nothing to attempt.
      if (!this.#host.current(d)) {
        this.#waiting.shift()
        continue
      }
      const wait = this.#admission.take()
      if (wait > 0) {
        this.#timer = setTimeout(() => this.admit(), wait)
        this.#timer.unref()
        return
      }
      this.#waiting.shift()
      this.#admitted.add(d.id)
      // Its slot is free again once its attempt ended.
      void this.#host.queue(d).finally(() => this.ended(d.id))
    }
  }

  /** An admitted delivery's attempt ended, or it left the worker: its slot goes to the next. */
  ended(id: string): void {
    if (this.#admitted.delete(id)) this.admit()
  }

  /** Stop admitting (close()). */
  close(): void {
    clearTimeout(this.#timer)
  }
}
