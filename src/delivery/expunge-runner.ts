import { newId } from '../ids.js'
import type { Storage } from '../storage/storage.js'
import type { DeliverySettings } from './context.js'
import { jobPollMs } from './idle-polls.js'
import { JobRunner } from './job-runner.js'
import type { Supervisor } from './supervisor.js'

/** Events an erasure job erases per step (one transaction each). */
export const expungeBatchSize = 200

export interface ExpungeRunnerContext {
  storage: Storage
  options: DeliverySettings
  now(): Date
  /** Events a step erased: the local worker drops the deliveries of theirs it holds. */
  erased(tenantId: string, eventIds: string[]): unknown
  /** Starts the loop again when a step throws something other than a storage outage. */
  supervisor: Supervisor
}

/**
 * Runs erasure jobs of time ranges (see JobRunner): each step erases the next batch of the range in one
 * transaction that also moves the job's cursor, so a job interrupted anywhere resumes where it stopped.
 */
export class ExpungeRunner extends JobRunner {
  constructor(ctx: ExpungeRunnerContext) {
    const { storage, options } = ctx
    const { leaseMs, pollIntervalMs } = options.delivery
    const idleMs = jobPollMs(storage, pollIntervalMs)
    super(newId('exr'), { logger: options.logger, leaseMs, pollIntervalMs, idleMs, now: ctx.now, supervisor: ctx.supervisor }, {
      loop: 'expunge',
      claim: async (owner, now, leaseUntil) => (await storage.claimExpungeJob(owner, now, leaseUntil)) ?? undefined,
      step: async ({ id, tenant_id }, owner, now, leaseUntil) => {
        const step = await storage.advanceExpungeJob({ id, tenant_id, owner, now, leaseUntil, batchSize: expungeBatchSize })
        // Not awaited: attempts already running of these events end on their own (their results keep no response body).
        if (step.job && step.event_ids.length) void ctx.erased(step.job.tenant_id, step.event_ids)
        if (step.outcome !== 'erased') {
          if (step.job) options.logger.info({ expunge_id: step.job.id, tenant_id: step.job.tenant_id, expunged: step.job.expunged }, 'expunge job done')
          return undefined
        }
        return 0
      },
      release: (owner) => storage.releaseExpungeJobs(owner),
    })
  }
}
