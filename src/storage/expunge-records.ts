// The records of erasure (see Storage's expunge methods and sql-expunge.ts).

/** Per event id: erased (now or before), or no such event of the tenant. */
export type ExpungeOutcome = 'expunged' | 'not_found'

/** `created` until its first batch, `running` while batches are left, then `done`. */
export type ExpungeJobStatus = 'created' | 'running' | 'done'

export interface NewExpungeJob {
  id: string
  tenant_id: string
  /** Events whose `time` is in [time_from, time_to]. */
  time_from: Date
  time_to: Date
  /** Only events of this topic; null for all. */
  topic: string | null
  created_at: Date
}

export interface ExpungeJobRecord extends NewExpungeJob {
  status: ExpungeJobStatus
  /** Events this job erased (those erased before it are not counted). */
  expunged: number
  /** The last (time, id) of the range erased: the next batch starts after it. */
  cursor_time: Date | null
  cursor_event: string | null
  lease_owner: string | null
  lease_until: Date | null
  updated_at: Date
  finished_at: Date | null
}

export interface ExpungeStepRequest {
  id: string
  /** The job's tenant: the job's row is found by its key (on Citus, the `citus` option, it is read first when not given). */
  tenant_id?: string
  owner: string
  now: Date
  leaseUntil: Date
  /** Events erased per step (one transaction). */
  batchSize: number
}

/**
 * `erased`: a batch was erased (`event_ids`: those of it that were not erased before); `finished`: nothing was
 * left, the job is done; `lost`: the lease is gone (another instance has it, or the tenant was deleted).
 */
export interface ExpungeStep {
  outcome: 'erased' | 'finished' | 'lost'
  job: ExpungeJobRecord | null
  event_ids: string[]
}
