import { OutflowError, notFound } from '../errors.js'
import { newId } from '../ids.js'
import { parseInput } from '../model/common.js'
import { ExpungeSchema, type ExpungeAnswer, type ExpungeInput, type ExpungeJob, type ExpungeResult } from '../model/expunge.js'
import type { ExpungeJobRecord } from '../storage/storage.js'
import type { EngineContext } from './context.js'

export type { ExpungeAnswer, ExpungeInput, ExpungeJob, ExpungeResult } from '../model/expunge.js'
import { requireTenant } from './tenants.js'

/** The API shape of a stored erasure job. */
export function toExpungeJob(r: ExpungeJobRecord): ExpungeJob {
  return {
    id: r.id,
    status: r.status,
    expunged: r.expunged,
    criteria: { from: r.time_from.toISOString(), to: r.time_to.toISOString(), topic: r.topic },
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    finished_at: r.finished_at?.toISOString() ?? null,
  }
}

const invalid = (data: Record<string, string>) => new OutflowError('validation', 'validation error', { data })

/**
 * Erase events of a tenant (see docs/delivery.md › Erasure): by `ids` at once, answered per id, or a time range as
 * a durable job. Once erasure by ids returns, this instance sends nothing more of those events.
 */
export async function expungeEvents(ctx: EngineContext, tenantId: string, body: unknown): Promise<ExpungeAnswer<ExpungeInput>> {
  const input = parseInput(ExpungeSchema, body)
  if (input.ids) {
    if (input.from || input.to || input.topic) throw invalid({ [input.from ? 'from' : input.to ? 'to' : 'topic']: 'not allowed with ids' })
    const ids = [...new Set(input.ids)]
    const outcomes = await ctx.storage.expungeEvents(tenantId, ids, ctx.now())
    if (!outcomes) throw notFound('tenant', tenantId)
    const erased = ids.filter((id) => outcomes.get(id) === 'expunged')
    await ctx.stopEventDeliveries(tenantId, erased)
    return { results: ids.map((id) => ({ id, status: outcomes.get(id) ?? 'not_found' })) }
  }
  if (!input.from) throw invalid({ ids: 'give ids, or a time range from (and to, topic)' })
  const to = input.to ?? ctx.now()
  if (to.getTime() < input.from.getTime()) throw invalid({ to: 'must not be before from' })
  const job = await ctx.storage.insertExpungeJob({ id: newId('exp'), tenant_id: tenantId, time_from: input.from, time_to: to, topic: input.topic ?? null, created_at: ctx.now() })
  if (!job) throw notFound('tenant', tenantId)
  ctx.jobCreated()
  return toExpungeJob(job)
}

/** One erasure job of the tenant. */
export async function getExpungeJob(ctx: EngineContext, tenantId: string, jobId: string): Promise<ExpungeJob> {
  await requireTenant(ctx, tenantId)
  const job = await ctx.storage.getExpungeJob(tenantId, jobId)
  if (!job) throw notFound('expunge job', jobId)
  return toExpungeJob(job)
}
