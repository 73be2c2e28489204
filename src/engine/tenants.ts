import { OutflowError, notFound } from '../errors.js'
import { IdSchema, parseInput } from '../model/common.js'
import { buildPage, keysetRequest, type Page } from '../model/pagination.js'
import { ListTenantsQuerySchema, UpsertTenantSchema, type ListTenantsQuery, type Tenant } from '../model/tenant.js'
import type { TenantRecord, TenantSummary } from '../storage/storage.js'
import { issueTenantToken, verifyTenantToken as verifyTokenClaims } from '../tokens.js'
import type { EngineContext } from './context.js'
import * as v from 'valibot'

function toTenant(record: TenantRecord, summary: TenantSummary | undefined): Tenant {
  return {
    id: record.id,
    destinations_count: summary?.destinations_count ?? 0,
    topics: summary?.topics ?? [],
    metadata: record.metadata ?? {},
    created_at: record.created_at.toISOString(),
    updated_at: record.updated_at.toISOString(),
  }
}

/** The tenant record, or a 404. Every tenant-scoped operation starts here. */
export async function requireTenant(ctx: EngineContext, tenantId: string): Promise<TenantRecord> {
  const tenant = await ctx.storage.getTenant(tenantId)
  if (!tenant) throw notFound('tenant', tenantId)
  return tenant
}

async function withSummary(ctx: EngineContext, record: TenantRecord): Promise<Tenant> {
  const summaries = await ctx.storage.summarizeTenants([record.id])
  return toTenant(record, summaries.get(record.id))
}

export async function listTenants(ctx: EngineContext, query: ListTenantsQuery = {}): Promise<Page<Tenant> & { count: number }> {
  const q = parseInput(ListTenantsQuerySchema, query, { code: 'bad_request' })
  const req = keysetRequest('tenants', q)
  const { rows, count } = await ctx.storage.listTenants({ ...req, createdGte: q['created_at[gte]'], createdLte: q['created_at[lte]'] })
  const summaries = await ctx.storage.summarizeTenants(rows.map((r) => r.id))
  const page = buildPage('tenants', q.order_by, req, rows, (r) => [r.created_at.getTime(), r.id], (r) => toTenant(r, summaries.get(r.id)))
  return { ...page, count }
}

export async function getTenant(ctx: EngineContext, tenantId: string): Promise<Tenant> {
  return withSummary(ctx, await requireTenant(ctx, tenantId))
}

export async function upsertTenant(ctx: EngineContext, tenantId: string, body?: unknown): Promise<{ tenant: Tenant; created: boolean }> {
  const idCheck = v.safeParse(IdSchema, tenantId)
  if (!idCheck.success) throw new OutflowError('validation', 'validation error', { data: { tenant_id: idCheck.issues[0].message } })
  const input = parseInput(UpsertTenantSchema, body ?? undefined)
  const metadata = input.metadata === undefined ? undefined : (input.metadata ?? {})
  const { tenant, created } = await ctx.storage.upsertTenant(tenantId, metadata, ctx.now())
  return { tenant: await withSummary(ctx, tenant), created }
}

/** Delete a tenant with everything it owns; once this resolves nothing more is delivered for it from this instance. */
export async function deleteTenant(ctx: EngineContext, tenantId: string): Promise<{ success: true }> {
  if (!(await ctx.storage.deleteTenant(tenantId))) throw notFound('tenant', tenantId)
  await ctx.stopDeliveries(tenantId)
  return { success: true }
}

export async function getTenantToken(ctx: EngineContext, tenantId: string): Promise<{ token: string; tenant_id: string }> {
  const tenant = await requireTenant(ctx, tenantId)
  return { token: await issueTenantToken(ctx.jwtSecret, tenantId, tenant.created_at, ctx.now()), tenant_id: tenantId }
}

/**
 * The tenant a token grants, or null. A token names its tenant's creation time, so deleting the
 * tenant revokes every token issued for it, also once the id is created again.
 */
export async function verifyTenantToken(ctx: EngineContext, token: string): Promise<string | null> {
  const claims = await verifyTokenClaims(ctx.jwtSecret, token, ctx.now())
  if (!claims) return null
  const tenant = await ctx.storage.getTenant(claims.tenantId)
  return tenant?.created_at.getTime() === claims.tenantCreatedAt ? claims.tenantId : null
}
