// The records of replay jobs (see Storage's replay methods and sql-replays.ts).
/** Which deliveries a replay sends again, by their state. */
export type ReplaySelect = 'failed' | 'success' | 'skipped' | 'all'

export type ReplayJobStatus = 'running' | 'completed' | 'cancelled'

export interface NewReplayJob {
  id: string
  tenant_id: string
  destination_id: string
  since: Date
  until: Date
  select_status: ReplaySelect
  /** Only events of these topics; null for all. */
  topics: string[] | null
  created_at: Date
}

export interface ReplayJobRecord extends NewReplayJob {
  status: ReplayJobStatus
  matched: number
  /** Deliveries replayed and attempted. */
  done: number
  /** Of those, the ones whose replayed attempt failed. */
  failed: number
  cursor_time: Date | null
  cursor_event: string | null
  batch_time: Date | null
  batch_event: string | null
  batch_started_at: Date | null
  lease_owner: string | null
  lease_until: Date | null
  updated_at: Date
  finished_at: Date | null
}

export interface ReplayStepRequest {
  id: string
  /** The job's tenant: the job's row is found by its key (on Citus, the `citus` option, it is read first when not given). */
  tenant_id?: string
  owner: string
  now: Date
  leaseUntil: Date
  /** Deliveries handed out per batch. */
  batchSize: number
  /** Yield (hand out nothing) while more than this many other deliveries are due. */
  yieldAbove: number
}

/**
 * `handed`: a batch was made due; `waiting`: its deliveries are not all attempted yet; `yielded`: fresh deliveries
 * come first; `finished`: completed or cancelled (see `job`); `lost`: the lease is gone (another instance has it).
 */
export interface ReplayStep {
  outcome: 'handed' | 'waiting' | 'yielded' | 'finished' | 'lost'
  job: ReplayJobRecord | null
}
