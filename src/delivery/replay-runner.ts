import { newId } from '../ids.js'
import type { Storage } from '../storage/storage.js'
import type { DeliverySettings } from './context.js'
import { jobPollMs } from './idle-polls.js'
import { JobRunner } from './job-runner.js'
import type { Supervisor } from './supervisor.js'

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
 * Runs replay jobs (see JobRunner): a step hands out a batch, waits until the worker attempted it, counts it,
 * and hands out the next. Live traffic goes first: a step hands out nothing while more fresh deliveries are due
 * than one claim of the worker takes.
 */
export class ReplayRunner extends JobRunner {
  constructor(ctx: ReplayRunnerContext) {
    const { storage, options } = ctx
    const { leaseMs, pollIntervalMs, batchSize } = options.delivery
    const idleMs = jobPollMs(storage, pollIntervalMs)
    super(newId('rpr'), { logger: options.logger, leaseMs, pollIntervalMs, idleMs, now: ctx.now, supervisor: ctx.supervisor }, {
      loop: 'replay',
      claim: async (owner, now, leaseUntil) => (await storage.claimReplayJob(owner, now, leaseUntil)) ?? undefined,
      step: async ({ id, tenant_id }, owner, now, leaseUntil) => {
        const step = await storage.advanceReplayJob({ id, tenant_id, owner, now, leaseUntil, batchSize: replayBatchSize, yieldAbove: batchSize })
        if (step.outcome === 'handed') ctx.wakeWorker()
        if (step.outcome === 'finished' || step.outcome === 'lost') {
          if (step.job) options.logger.info({ replay_id: step.job.id, tenant_id: step.job.tenant_id, destination_id: step.job.destination_id, status: step.job.status, done: step.job.done, failed: step.job.failed }, 'replay ended')
          return undefined
        }
        // Yielding to live traffic: try again after a poll interval (bounded by the lease it must renew).
        return step.outcome === 'yielded' ? Math.min(pollIntervalMs, leaseMs / 3) : stepMs
      },
      release: (owner) => storage.releaseReplayJobs(owner),
    })
  }
}
