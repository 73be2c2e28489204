import { OutflowError } from '../errors.js'
import { errorFields, type Logger } from '../logger.js'

/** Storage did not answer or lost its connection (Postgres restarting, paused, unreachable): worth trying again. */
export const isUnavailable = (err: unknown): boolean => err instanceof OutflowError && err.code === 'unavailable'

/**
 * The worker's log of failed storage calls. While storage is unavailable the loops keep trying at their usual
 * pace; the outage is logged when it starts and when it ends, not at every failed call. Other errors are logged
 * each time.
 *
 * @example
 * try { await claim() ; outage.answered() } catch (err) { outage.failed(err, 'claiming deliveries failed') }
 */
export class OutageLog {
  readonly #logger: Logger
  /** Since when storage has been unavailable, and how many calls failed meanwhile. */
  #outage?: { since: number; failures: number }

  constructor(logger: Logger) {
    this.#logger = logger
  }

  /** A storage call failed. */
  failed(err: unknown, message: string, fields: Record<string, unknown> = {}): void {
    if (!isUnavailable(err)) return this.#logger.error({ ...fields, error: errorFields(err) }, message)
    if (this.#outage) {
      this.#outage.failures++
      return
    }
    this.#outage = { since: Date.now(), failures: 1 }
    this.#logger.warn({ ...fields, error: errorFields(err) }, `storage unavailable (${message}); delivery resumes when it answers`)
  }

  /** A storage call succeeded: ends an outage. */
  answered(): void {
    if (!this.#outage) return
    const { since, failures } = this.#outage
    this.#outage = undefined
    this.#logger.warn({ outage_ms: Date.now() - since, failed_calls: failures }, 'storage available again')
  }
}
