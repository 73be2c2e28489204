import { setTimeout as sleep } from 'node:timers/promises'
import { OutflowError } from '../errors.js'
import { errorFields, type Logger } from '../logger.js'
import type { LoopName } from '../model/health.js'
import { faultPoint, type Supervisor } from './supervisor.js'

/** What a job runner needs of the engine. */
export interface JobRunnerContext {
  logger: Logger
  /** Leases last this long; a step renews the lease of its job. */
  leaseMs: number
  /** How long to wait when the storage is unavailable. */
  pollIntervalMs: number
  /** How long to wait when no job is waiting (longer than the poll interval on Citus: idle-polls.ts). */
  idleMs: number
  now(): Date
  /** Starts the loop again when a step throws something other than a storage outage. */
  supervisor: Supervisor
}

/** A job leased: its id, and its tenant (by which Citus finds its row). */
export interface LeasedJob {
  id: string
  tenant_id: string
}

/** The jobs a runner steps, through storage: leased so that one instance at a time runs each. */
export interface LeasedJobs {
  /** The supervisor's name of the loop (health reports it). */
  loop: LoopName
  /** Lease the oldest job waiting that no live instance holds, or undefined. */
  claim(owner: string, now: Date, leaseUntil: Date): Promise<LeasedJob | undefined>
  /** One step of a job `owner` holds (renewing its lease): the pause before the next one, or undefined once the job ended or was lost. */
  step(job: LeasedJob, owner: string, now: Date, leaseUntil: Date): Promise<number | undefined>
  /** Give back every job lease `owner` holds (close()). */
  release(owner: string): Promise<void>
}

/**
 * Runs durable jobs (replays, erasures), one at a time per instance: leases a job (no other instance runs it
 * while the lease lives), then steps it until it ends, each step renewing the lease. A job whose instance died is
 * taken over when its lease expires, from where its last step left it.
 */
export class JobRunner {
  readonly id: string
  readonly #ctx: JobRunnerContext
  readonly #jobs: LeasedJobs
  #stopping = false
  readonly #stop = new AbortController()
  #loop?: Promise<void>
  #wake?: () => void
  /** The job this runner holds the lease of (kept across a restart of the loop). */
  #job: LeasedJob | undefined

  constructor(id: string, ctx: JobRunnerContext, jobs: LeasedJobs) {
    this.id = id
    this.#ctx = ctx
    this.#jobs = jobs
  }

  start(): void {
    this.#loop ??= this.#ctx.supervisor.run(this.#jobs.loop, () => this.#run(), () => this.#stopping, this.#stop.signal)
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
    const { supervisor, leaseMs, pollIntervalMs, idleMs } = this.#ctx
    const { loop } = this.#jobs
    while (!this.#stopping) {
      try {
        faultPoint(loop)
        const now = this.#ctx.now()
        const leaseUntil = new Date(now.getTime() + leaseMs)
        if (!this.#job) {
          this.#job = await this.#jobs.claim(this.id, now, leaseUntil)
          supervisor.ok(loop)
          if (!this.#job) await this.#pause(idleMs)
          continue
        }
        const pause = await this.#jobs.step(this.#job, this.id, now, leaseUntil)
        supervisor.ok(loop)
        if (pause === undefined) this.#job = undefined
        else if (pause > 0) await this.#pause(pause)
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
    await this.#jobs.release(this.id).catch((err: unknown) => this.#ctx.logger.error({ error: errorFields(err), loop: this.#jobs.loop }, 'releasing job leases failed'))
  }
}
