import { OutflowError, notFound, type ErrorData } from '../errors.js'
import { newId } from '../ids.js'
import { parseInput } from '../model/common.js'
import type { Destination } from '../model/destination.js'
import { EnableQuerySchema, ReplaySchema, TenantReplaySchema, type EnableQuery, type Recovery, type ReplayJob } from '../model/replay.js'
import type { DestinationRecord, NewReplayJob, ReplayJobRecord, ReplaySelect } from '../storage/storage.js'
import type { EngineContext } from './context.js'
import { setDestinationDisabled } from './destinations.js'
import { requireTenant } from './tenants.js'

/** The API shape of a stored replay job. */
export function toReplayJob(r: ReplayJobRecord): ReplayJob {
  return {
    id: r.id,
    destination_id: r.destination_id,
    status: r.status,
    matched: r.matched,
    done: r.done,
    failed: r.failed,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    finished_at: r.finished_at?.toISOString() ?? null,
    criteria: { since: r.since.toISOString(), until: r.until.toISOString(), status: r.select_status, topics: r.topics },
  }
}

interface Criteria {
  since: Date
  until: Date
  select: ReplaySelect
  topics: string[] | null
}

/** The body's criteria, `until` defaulting to now; 422 when the range is empty. */
function criteria(ctx: EngineContext, input: { since: Date; until?: Date; status?: ReplaySelect; topics?: string[] }): Criteria {
  const until = input.until ?? ctx.now()
  if (until.getTime() < input.since.getTime()) throw new OutflowError('validation', 'validation error', { data: { until: 'must not be before since' } })
  return { since: input.since, until, select: input.status ?? 'failed', topics: input.topics ? [...new Set(input.topics)] : null }
}

/** A replay sends deliveries now: its destination must be enabled, as for a manual retry (409). */
function requireEnabled(d: DestinationRecord): void {
  if (d.disabled_at) throw new OutflowError('conflict', `destination ${d.id} is disabled; enable it before replaying`)
}

async function insertJobs(ctx: EngineContext, tenantId: string, destinationIds: string[], c: Criteria): Promise<ReplayJobRecord[]> {
  const now = ctx.now()
  const jobs: NewReplayJob[] = destinationIds.map((destinationId) => ({
    id: newId('rpl'),
    tenant_id: tenantId,
    destination_id: destinationId,
    since: c.since,
    until: c.until,
    select_status: c.select,
    topics: c.topics,
    created_at: now,
  }))
  const inserted = await ctx.storage.insertReplayJobs(jobs)
  if (!inserted) throw notFound('tenant', tenantId)
  ctx.jobCreated()
  return inserted
}

/** Start a replay of one destination's deliveries (a durable job; see docs/delivery.md › Replay). */
export async function replayDestination(ctx: EngineContext, tenantId: string, destinationId: string, body: unknown): Promise<ReplayJob> {
  const c = criteria(ctx, parseInput(ReplaySchema, body))
  await requireTenant(ctx, tenantId)
  const destination = await ctx.storage.getDestination(tenantId, destinationId)
  if (!destination) throw notFound('destination', destinationId)
  requireEnabled(destination)
  const [job] = await insertJobs(ctx, tenantId, [destinationId], c)
  // Deleted between the read and the insert: as if deleted first.
  if (!job) throw notFound('destination', destinationId)
  return toReplayJob(job)
}

/**
 * Start one replay job per destination of the tenant: those of `destination_id` (each must exist and be
 * enabled), else every enabled one.
 */
export async function replayTenant(ctx: EngineContext, tenantId: string, body: unknown): Promise<ReplayJob[]> {
  const input = parseInput(TenantReplaySchema, body)
  const c = criteria(ctx, input)
  await requireTenant(ctx, tenantId)
  const all = await ctx.storage.listDestinations(tenantId)
  let targets: DestinationRecord[]
  if (input.destination_id) {
    const wanted = [...new Set(input.destination_id)]
    const data: ErrorData = {}
    targets = []
    wanted.forEach((id) => {
      const d = all.find((x) => x.id === id)
      if (!d) data[`destination_id.${input.destination_id!.indexOf(id)}`] = `no destination ${id}`
      else targets.push(d)
    })
    if (Object.keys(data).length) throw new OutflowError('validation', 'validation error', { data })
    targets.forEach(requireEnabled)
  } else targets = all.filter((d) => !d.disabled_at)
  if (targets.length === 0) return []
  return (await insertJobs(ctx, tenantId, targets.map((d) => d.id), c)).map(toReplayJob)
}

export async function getReplay(ctx: EngineContext, tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
  await requireTenant(ctx, tenantId)
  const job = await ctx.storage.getReplayJob(tenantId, destinationId, jobId)
  if (!job) throw notFound('replay', jobId)
  return toReplayJob(job)
}

/** Cancel a running replay (idempotent: an ended one is returned as it is). */
export async function cancelReplay(ctx: EngineContext, tenantId: string, destinationId: string, jobId: string): Promise<ReplayJob> {
  await requireTenant(ctx, tenantId)
  const job = await ctx.storage.cancelReplayJob(tenantId, destinationId, jobId, ctx.now())
  if (!job) throw notFound('replay', jobId)
  return toReplayJob(job)
}

/**
 * What the answer of an enable adds when the destination has skipped deliveries: how to replay them, and with
 * `replay: true` the replay job started for them. Undefined when nothing was skipped.
 */
export async function recoveryAfterEnable(ctx: EngineContext, tenantId: string, destinationId: string, replay: boolean): Promise<Recovery | undefined> {
  const { count, oldest } = await ctx.storage.skippedDeliveries(tenantId, destinationId)
  if (count === 0 || !oldest) return undefined
  const since = oldest.toISOString()
  const path = `/tenants/${encodeURIComponent(tenantId)}/destinations/${encodeURIComponent(destinationId)}/replay`
  const recovery: Recovery = {
    skipped: count,
    oldest_skipped_event_time: since,
    how_to_replay: `POST ${path} with {"since":"${since}","status":"skipped"} (or enable with ?replay=skipped)`,
    replay: { method: 'POST', path, body: { since, status: 'skipped' } },
  }
  if (replay) recovery.replay_job = await replayDestination(ctx, tenantId, destinationId, { since, status: 'skipped' })
  return recovery
}

/**
 * Enable a destination. When it has skipped deliveries the answer's `recovery` says how to replay them;
 * `{ replay: 'skipped' }` also starts that replay.
 */
export async function enableDestination(ctx: EngineContext, tenantId: string, destinationId: string, query: EnableQuery): Promise<Destination & { recovery?: Recovery }> {
  const { replay } = parseInput(EnableQuerySchema, query, { code: 'bad_request' })
  const destination: Destination & { recovery?: Recovery } = await setDestinationDisabled(ctx, tenantId, destinationId, false)
  const recovery = await recoveryAfterEnable(ctx, tenantId, destinationId, replay === 'skipped')
  if (recovery) destination.recovery = recovery
  return destination
}
