import { setTimeout as sleep } from 'node:timers/promises'
import { OutflowError } from '../errors.js'
import { newId } from '../ids.js'
import { errorFields } from '../logger.js'
import type { Storage } from '../storage/storage.js'
import type { DeliverySettings } from './context.js'
import { faultPoint, type Supervisor } from './supervisor.js'

/** Deliveries a replay job hands to the worker at a time; the next batch waits until these were attempted. */
export const replayBatchSize = 200
/** How often a job's step runs while its batch is being attempted. */
const stepMs = 50

export interface ReplayRunnerContext {
  storage: Storage
  options: DeliverySettings
  now(): Date
  /** A batch was made due: the local worker claims it now rather than at its next poll. */
  wakeWorker(): void
  /** Starts the loop again when a step throws something other than a storage outage. */
  supervisor: Supervisor
}

/**
 * Runs replay jobs, one at a time per instance: leases a job (no other instance runs it while the lease
 * lives), then steps it — hand out a batch, wait until the worker attempted it, count it, next batch — and
 * renews the lease at every step. Live traffic goes first: a step hands out nothing while more fresh
 * deliveries are due than one claim of the worker takes. A job whose instance died is taken over when its
 * lease expires, from where its last step left it.
 */
export class ReplayRunner {
  readonly id = newId('rpr')
  readonly #ctx: ReplayRunnerContext
  #stopping = false
  readonly #stop = new AbortController()
  #loop?: Promise<void>
  #wake?: () => void
  /** The job this runner holds the lease of (kept across a restart of the loop). */
  #job: string | undefined

  constructor(ctx: ReplayRunnerContext) {
    this.#ctx = ctx
  }

  start(): void {
    this.#loop ??= this.#ctx.supervisor.run('replay', () => this.#run(), () => this.#stopping, this.#stop.signal)
  }

  /** A job was created: look for it now rather than at the next poll. */
  wake(): void {
    this.#wake?.()
  }

  async #pause(ms: number): Promise<void> {
    if (this.#stopping) return
    const woken = new Promise<void>((resolve) => (this.#wake = resolve))
    await Promise.race([sleep(ms, undefined, { ref: false }), woken])
    this.#wake = undefined
  }

  /** Steps jobs; an outage waits a poll interval, anything else throws to the supervisor. */
  async #run(): Promise<void> {
    const { storage, options, supervisor } = this.#ctx
    const { leaseMs, pollIntervalMs, batchSize } = options.delivery
    while (!this.#stopping) {
      try {
        faultPoint('replay')
        const now = this.#ctx.now()
        const leaseUntil = new Date(now.getTime() + leaseMs)
        if (!this.#job) {
          this.#job = (await storage.claimReplayJob(this.id, now, leaseUntil))?.id
          supervisor.ok('replay')
          if (!this.#job) await this.#pause(pollIntervalMs)
          continue
        }
        const step = await storage.advanceReplayJob({ id: this.#job, owner: this.id, now, leaseUntil, batchSize: replayBatchSize, yieldAbove: batchSize })
        supervisor.ok('replay')
        if (step.outcome === 'handed') this.#ctx.wakeWorker()
        if (step.outcome === 'finished' || step.outcome === 'lost') {
          if (step.job) options.logger.info({ replay_id: step.job.id, tenant_id: step.job.tenant_id, destination_id: step.job.destination_id, status: step.job.status, done: step.job.done, failed: step.job.failed }, 'replay ended')
          this.#job = undefined
          continue
        }
        // Yielding to live traffic: try again after a poll interval (bounded by the lease it must renew).
        await this.#pause(step.outcome === 'yielded' ? Math.min(pollIntervalMs, leaseMs / 3) : stepMs)
      } catch (err) {
        if (this.#stopping) break
        if (!(err instanceof OutflowError && err.code === 'unavailable')) throw err
        await this.#pause(pollIntervalMs)
      }
    }
  }

  /** Stop stepping and give back the job lease, so another instance takes the job at once. */
  async close(): Promise<void> {
    if (this.#stopping) return
    this.#stopping = true
    this.#stop.abort()
    this.wake()
    if (!this.#loop) return
    await this.#loop
    await this.#ctx.storage.releaseReplayJobs(this.id).catch((err: unknown) => this.#ctx.options.logger.error({ error: errorFields(err) }, 'releasing replay jobs failed'))
  }
}
