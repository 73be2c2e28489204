import { errorFields } from '../logger.js'
import type { DestinationStreak } from '../storage/storage.js'
import type { DeliveryContext } from './context.js'
import type { RecordedAttempt } from './operator-events.js'
import { OutageLog, isUnavailable } from './storage-outage.js'
import { faultPoint } from './supervisor.js'

/** Attempt results are written in batches of at most this many. */
const writeBatch = 500
/** How long results gather before a write: bigger batches, fewer commits; delivery itself is not delayed. */
const writeGatherMs = 10
/** Results that could not be written while storage was unavailable are written again after this, doubling up to 2 s. */
const writeRetryMs = 100
const maxWriteRetryMs = 2_000

/** What the writer tells the worker. */
export interface ResultWriterHost {
  /** A batch is stored (`streaks`: the failure streaks it changed): schedule what it made due, report its outcomes. */
  written(entries: RecordedAttempt[], streaks: DestinationStreak[]): Promise<void>
  /** These deliveries' results are written (or given up after an error that is not an outage): they leave the worker. */
  release(ids: string[]): void
  /** The worker is closing: results are written at once, and given up on an error rather than retried. */
  stopping(): boolean
}

/**
 * Writes attempt results back in batches, one writer at a time: while a batch is being written, new results
 * pile up and go in the next batch, so the write rate follows the database's commit rate instead of one
 * commit per attempt. While storage is unavailable the results wait (their deliveries stay held, so the worker
 * does not attempt them again) and are written when it answers, with a pause doubling up to 2 s; a write that
 * failed this way may still have been applied, and writing an attempt again is a no-op.
 *
 * @example
 * writer.record({ write, delivery, destination, gone: false }) // written within writeGatherMs
 * await writer.flush() // close(): everything recorded so far is written
 */
export class ResultWriter {
  readonly #ctx: Pick<DeliveryContext, 'storage' | 'options' | 'supervisor'>
  readonly #outage: OutageLog
  readonly #host: ResultWriterHost
  #writes: RecordedAttempt[] = []
  #writing?: Promise<void>
  /** Failed writes in a row while storage is unavailable (sets the retry delay). */
  #failures = 0
  /** Ends the current gathering window early (a full batch is waiting, or flush()). */
  #gathered?: () => void
  /** Ends the wait before writing results again (flush()). */
  #retry?: () => void

  constructor(ctx: Pick<DeliveryContext, 'storage' | 'options' | 'supervisor'>, outage: OutageLog, host: ResultWriterHost) {
    this.#ctx = ctx
    this.#outage = outage
    this.#host = host
  }

  /** Queue an attempt's result for the next batch. */
  record(entry: RecordedAttempt): void {
    this.#writes.push(entry)
    if (this.#writes.length >= writeBatch) this.#gathered?.()
    this.#start()
  }

  /** Resolves when every result recorded so far is written. */
  async flush(): Promise<void> {
    while (this.#writing || this.#writes.length > 0) {
      this.#start()
      this.#gathered?.()
      this.#retry?.()
      await this.#writing
    }
  }

  #start(): void {
    if (this.#writing) return
    this.#writing = this.#writeAll().finally(() => {
      this.#writing = undefined
      if (this.#writes.length > 0) this.#start()
    })
  }

  async #writeAll(): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.#host.stopping() ? 0 : writeGatherMs)
      this.#gathered = () => (clearTimeout(timer), resolve())
    })
    this.#gathered = undefined
    while (this.#writes.length > 0) {
      const delay = await this.#writeNext()
      if (delay === undefined) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, delay)
        this.#retry = () => (clearTimeout(timer), resolve())
      })
      this.#retry = undefined
    }
  }

  /** Write the next batch: undefined when done with it, else the pause before trying again. */
  async #writeNext(): Promise<number | undefined> {
    const batch = this.#writes.splice(0, writeBatch)
    try {
      faultPoint('results')
      if (await this.#write(batch)) {
        this.#ctx.supervisor.ok('results')
        return undefined
      }
      // Storage is unavailable: the batch is back at the head of the queue.
      return Math.min(maxWriteRetryMs, writeRetryMs * 2 ** (this.#failures - 1))
    } catch (err) {
      // Unexpected (a bug): the batch waits at the head of the queue and is written again after a pause.
      // Closing, it is given up: its leases are released, so the deliveries are attempted again.
      if (this.#host.stopping()) {
        this.#ctx.options.logger.error({ count: batch.length, error: errorFields(err) }, 'recording attempts failed while closing')
        return undefined
      }
      this.#writes.unshift(...batch)
      return this.#ctx.supervisor.failed('results', err)
    }
  }

  /**
   * Write attempt results in one transaction, then hand them to the worker. False when storage was
   * unavailable: the entries are back at the head of the queue.
   */
  async #write(entries: RecordedAttempt[]): Promise<boolean> {
    const writes = entries.map((e) => e.write)
    let written = true
    try {
      let streaks
      try {
        streaks = await this.#ctx.storage.recordAttempts(writes)
        this.#failures = 0
      } catch (err) {
        if (isUnavailable(err) && !this.#host.stopping()) {
          this.#failures++
          this.#outage.failed(err, 'recording attempts failed', { count: writes.length })
          this.#writes.unshift(...entries)
          written = false
          return false
        }
        // The leases expire and the deliveries are attempted again: at-least-once.
        this.#ctx.options.logger.error({ count: writes.length, error: errorFields(err) }, 'recording attempts failed')
        return true
      }
      await this.#host.written(entries, streaks)
      return true
    } finally {
      if (written) this.#host.release(writes.map((w) => w.delivery.id))
    }
  }
}
