import * as v from 'valibot'
import { destinationRegistry, destinationType, missingPackageIssues, typeSchema } from '../destinations/registry.js'
import type { DestinationTypeDefinition } from '../destinations/types.js'
import type { DestinationTypeSchema } from '../model/destination-type.js'
import { validateFilter } from '../delivery/filter.js'
import { matchesTopic, topicAllowed } from '../delivery/topics.js'
import { OutflowError, notFound, type ErrorData } from '../errors.js'
import { newId } from '../ids.js'
import { issuesToData, parseInput, type JsonObject } from '../model/common.js'
import {
  CreateDestinationSchema,
  ListDestinationsQuerySchema,
  UpdateDestinationSchema,
  type Destination,
  type ListDestinationsQuery,
} from '../model/destination.js'
import { DeliverySettingsSchema, type DeliverySettings } from '../model/delivery-settings.js'
import type { PayloadPolicy } from '../model/payload-policy.js'
import { BatchPolicySchema, type BatchPolicy } from '../model/batch-policy.js'
import type { DestinationRecord } from '../storage/storage.js'
import type { EngineContext } from './context.js'
import { sealCredentials, unsealCredentials, type CredentialsOwner } from '../credentials.js'
import { mergePatch } from './merge-patch.js'
import { requireTenant } from './tenants.js'

/** The API shape of a stored destination: masked credentials, target and target_url for display. */
export function toDestination(ctx: EngineContext, r: DestinationRecord): Destination {
  const def = destinationType(r.type)
  const out: Destination = {
    id: r.id,
    type: r.type,
    topics: r.topics,
    disabled_at: r.disabled_at?.toISOString() ?? null,
    created_at: r.created_at.toISOString(),
    updated_at: r.updated_at.toISOString(),
    config: r.config,
    credentials: maskCredentials(def, unsealCredentials(r.credentials, ctx.credentialKeys, ownerOf(r))),
  }
  if (r.filter) out.filter = r.filter
  if (r.delivery_metadata) out.delivery_metadata = r.delivery_metadata
  if (r.metadata) out.metadata = r.metadata
  if (r.delivery) out.delivery = r.delivery
  if (r.payload) out.payload = r.payload
  if (r.batch) out.batch = r.batch
  const target = def.target(r.config)
  if (target !== undefined) out.target = target
  const targetUrl = def.targetUrl?.(r.config)
  if (targetUrl !== undefined) out.target_url = targetUrl
  return out
}

function ownerOf(r: { tenant_id: string; id: string }): CredentialsOwner {
  return { tenantId: r.tenant_id, destinationId: r.id }
}

async function requireDestination(ctx: EngineContext, tenantId: string, id: string): Promise<DestinationRecord> {
  await requireTenant(ctx, tenantId)
  const record = await ctx.storage.getDestination(tenantId, id)
  if (!record) throw notFound('destination', id)
  return record
}

/** Fields only the server writes, or only create accepts: named in the 422 rather than "unexpected field". */
function rejectFixedFields(body: unknown, fields: Record<string, string>): ErrorData {
  const data: ErrorData = {}
  if (typeof body !== 'object' || body === null) return data
  for (const [field, why] of Object.entries(fields)) if (field in body) data[field] = why
  return data
}

/** valibot's object schemas accept arrays (their indexes become keys): `delivery` must be a JSON object. */
function arrayDelivery(body: unknown): ErrorData {
  const delivery = typeof body === 'object' && body !== null ? (body as { delivery?: unknown }).delivery : undefined
  return Array.isArray(delivery) ? { delivery: 'must be a JSON object' } : {}
}

function validateAgainst(schema: v.GenericSchema, value: unknown, prefix: string, data: ErrorData): Record<string, unknown> {
  const result = v.safeParse(schema, value)
  if (result.success) return result.output as Record<string, unknown>
  Object.assign(data, issuesToData(result.issues, prefix))
  return {}
}

/** Topic allow-list and filter checks shared by create and update. */
function checkTopicsAndFilter(ctx: EngineContext, topics: string[] | undefined, filter: JsonObject | null | undefined, data: ErrorData) {
  const allowList = ctx.options.topics
  if (allowList && topics)
    topics.forEach((t, i) => {
      if (!topicAllowed(allowList, t)) data[`topics.${i}`] = `"${t}" is not one of the configured topics`
    })
  if (filter && Object.keys(filter).length > 0) Object.assign(data, validateFilter(filter) ?? {})
}

/**
 * What the type itself says once the fields passed their schemas: its packages must load (else nothing could be
 * delivered), then its cross-field checks.
 */
async function checkTypeReady(def: DestinationTypeDefinition, config: Record<string, unknown>, credentials: Record<string, unknown>, data: ErrorData): Promise<void> {
  const missing = await missingPackageIssues(def)
  if (missing) Object.assign(data, missing)
  else if (Object.keys(data).length === 0) Object.assign(data, (await def.validate?.(config, credentials)) ?? {})
}

/**
 * What the settings' schema cannot know: an attempt must end before its lease does, or another instance would
 * take the delivery over while it is still in flight and deliver it twice.
 */
function checkDeliverySettings(ctx: EngineContext, delivery: DeliverySettings | null | undefined, data: ErrorData): void {
  const { leaseMs } = ctx.options.delivery
  if (delivery?.timeout_ms !== undefined && delivery.timeout_ms >= leaseMs)
    data['delivery.timeout_ms'] = `must be less than the engine's delivery lease (${leaseMs} ms)`
  if (delivery && delivery.ordering !== 'fifo') {
    if (delivery.ordering_key !== undefined) data['delivery.ordering_key'] = 'needs ordering: "fifo"'
    if (delivery.on_exhausted !== undefined) data['delivery.on_exhausted'] = 'needs ordering: "fifo"'
  }
}

/** `delivery: {}` is the same as none: the destination follows the engine's options. */
function emptyToNull(delivery: DeliverySettings | null | undefined): DeliverySettings | null {
  return delivery && Object.keys(delivery).length > 0 ? delivery : null
}

/** A thin policy needs links, and links need the engine's public URL: refused rather than silently delivered full. */
function checkPayloadPolicy(ctx: EngineContext, payload: PayloadPolicy | null | undefined, data: ErrorData): void {
  if (payload && payload !== 'full' && !ctx.options.publicUrl)
    data.payload = 'thin deliveries need the engine option publicUrl (OUTFLOW_PUBLIC_URL): the URL their payload links point to'
}

/** A batch policy merge-patched (null removes it, as does nulling every field), then checked whole (422 `batch.*`). */
function patchedBatch(existing: BatchPolicy | null | undefined, patch: Record<string, unknown> | null, data: ErrorData): BatchPolicy | null {
  const merged = mergePatch(existing ?? {}, patch) as Record<string, unknown> | null
  if (!merged || Object.keys(merged).length === 0) return null
  const result = v.safeParse(BatchPolicySchema, merged)
  if (result.success) return result.output
  Object.assign(data, issuesToData(result.issues, 'batch'))
  return null
}

function fail(data: ErrorData): never {
  throw new OutflowError('validation', 'validation error', { data })
}

export async function listDestinations(ctx: EngineContext, tenantId: string, query: ListDestinationsQuery = {}): Promise<Destination[]> {
  const q = parseInput(ListDestinationsQuerySchema, query, { code: 'bad_request' })
  await requireTenant(ctx, tenantId)
  let rows = await ctx.storage.listDestinations(tenantId, { types: q.type })
  // A destination is listed for `topics` when it would receive any of them.
  if (q.topics?.length) rows = rows.filter((r) => q.topics!.some((t) => matchesTopic(r.topics, t) || r.topics.includes(t)))
  return rows.map((r) => toDestination(ctx, r))
}

export async function createDestination(ctx: EngineContext, tenantId: string, body: unknown): Promise<Destination> {
  await requireTenant(ctx, tenantId)
  const fixed = { ...rejectFixedFields(body, { target: 'read-only field', target_url: 'read-only field' }), ...arrayDelivery(body) }
  if (Object.keys(fixed).length) fail(fixed)
  const input = parseInput(CreateDestinationSchema, body)
  const def = destinationType(input.type)
  const data: ErrorData = {}
  if (def.configRequired && input.config === undefined) data.config = 'required'
  if (def.credentialsRequired && input.credentials === undefined) data.credentials = 'required'
  const config = validateAgainst(def.configSchema, input.config ?? {}, 'config', data)
  const credentials = validateAgainst(def.credentialsSchema, input.credentials ?? {}, 'credentials', data)
  checkTopicsAndFilter(ctx, input.topics, input.filter, data)
  checkDeliverySettings(ctx, input.delivery, data)
  checkPayloadPolicy(ctx, input.payload, data)
  await checkTypeReady(def, config, credentials, data)
  if (Object.keys(data).length) fail(data)

  const now = ctx.now()
  const stored = def.prepareCredentials?.({ credentials, now }) ?? credentials
  const id = input.id ?? newId('des')
  const record: DestinationRecord = {
    tenant_id: tenantId,
    id,
    type: input.type,
    topics: input.topics,
    filter: input.filter && Object.keys(input.filter).length ? input.filter : null,
    config,
    credentials: sealCredentials(stored, ctx.credentialKeys, { tenantId, destinationId: id }),
    delivery_metadata: input.delivery_metadata ?? null,
    metadata: input.metadata ?? null,
    disabled_at: null,
    created_at: now,
    updated_at: now,
    consecutive_failures: 0,
    delivery: emptyToNull(input.delivery),
    payload: input.payload ?? null,
    batch: input.batch ?? null,
  }
  const outcome = await ctx.storage.insertDestination(record)
  // The tenant was checked above; `no-tenant` means it was deleted meanwhile.
  if (outcome === 'no-tenant') throw notFound('tenant', tenantId)
  if (outcome === 'exists') throw new OutflowError('conflict', `destination ${record.id} already exists`, { data: { id: 'already exists' } })
  return toDestination(ctx, record)
}

export async function getDestination(ctx: EngineContext, tenantId: string, id: string): Promise<Destination> {
  return toDestination(ctx, await requireDestination(ctx, tenantId, id))
}

/** A masked value sent back unchanged (`abcd****`) keeps the stored secret instead of overwriting it. */
function keepMaskedValues(def: DestinationTypeDefinition, patch: unknown, stored: Record<string, unknown>): unknown {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return patch
  const masked = maskCredentials(def, stored)
  const out: Record<string, unknown> = { ...(patch as Record<string, unknown>) }
  for (const [key, value] of Object.entries(out)) if (typeof value === 'string' && value.endsWith('****') && masked[key] === value) delete out[key]
  return out
}

export async function updateDestination(ctx: EngineContext, tenantId: string, id: string, body: unknown): Promise<Destination> {
  const fixed = rejectFixedFields(body, {
    type: 'cannot be changed after create',
    id: 'cannot be changed after create',
    target: 'read-only field',
    target_url: 'read-only field',
  })
  Object.assign(fixed, arrayDelivery(body))
  if (Object.keys(fixed).length) fail(fixed)
  const input = parseInput(UpdateDestinationSchema, body ?? {})
  // Read, patch, write if nothing changed since the read; else patch the newer state (another PATCH, a
  // disable, a secret rotation), so concurrent updates all persist. Each retry follows a write that landed.
  for (;;) {
    const existing = await requireDestination(ctx, tenantId, id)
    const record = await patched(ctx, existing, input)
    const outcome = await ctx.storage.updateDestination(record, existing.updated_at)
    if (outcome === 'missing') throw notFound('destination', id)
    if (outcome === 'stale') continue
    ctx.destinationChanged(tenantId, id)
    return toDestination(ctx, record)
  }
}

/** The destination after a PATCH: merged, validated as a whole (422), credentials prepared and sealed. */
async function patched(ctx: EngineContext, existing: DestinationRecord, input: v.InferOutput<typeof UpdateDestinationSchema>): Promise<DestinationRecord> {
  const def = destinationType(existing.type)
  const data: ErrorData = {}
  const storedCredentials = unsealCredentials(existing.credentials, ctx.credentialKeys, ownerOf(existing))

  const mergedConfig = input.config === undefined ? existing.config : mergePatch(existing.config, input.config)
  if (mergedConfig === null && def.configRequired) data.config = 'required'
  const config = validateAgainst(def.configSchema, mergedConfig ?? {}, 'config', data)
  const credentialsPatch = keepMaskedValues(def, input.credentials, storedCredentials)
  const mergedCredentials = input.credentials === undefined ? storedCredentials : mergePatch(storedCredentials, credentialsPatch)
  if (mergedCredentials === null && def.credentialsRequired) data.credentials = 'required'
  const credentials = validateAgainst(def.credentialsSchema, mergedCredentials ?? {}, 'credentials', data)
  checkTopicsAndFilter(ctx, input.topics, input.filter, data)
  const delivery = input.delivery === undefined ? existing.delivery : validateAgainst(DeliverySettingsSchema, mergePatch(existing.delivery ?? {}, input.delivery ?? null) ?? {}, 'delivery', data)
  checkDeliverySettings(ctx, delivery as DeliverySettings | null | undefined, data)
  const payload = input.payload === undefined ? existing.payload : input.payload
  if (input.payload !== undefined) checkPayloadPolicy(ctx, payload, data)
  const batch = input.batch === undefined ? existing.batch : patchedBatch(existing.batch, input.batch, data)
  await checkTypeReady(def, config, credentials, data)
  if (Object.keys(data).length) fail(data)

  const now = ctx.now()
  const stored = def.prepareCredentials?.({ credentials, previous: storedCredentials, now }) ?? credentials
  return {
    ...existing,
    topics: input.topics ?? existing.topics,
    filter: input.filter === undefined ? existing.filter : input.filter && Object.keys(input.filter).length ? input.filter : null,
    config,
    credentials: sealCredentials(stored, ctx.credentialKeys, ownerOf(existing)),
    delivery_metadata:
      input.delivery_metadata === undefined ? existing.delivery_metadata : (mergePatch(existing.delivery_metadata, input.delivery_metadata) as Record<string, string> | null),
    metadata: input.metadata === undefined ? existing.metadata : (mergePatch(existing.metadata, input.metadata) as JsonObject | null),
    delivery: emptyToNull(delivery as DeliverySettings | null | undefined),
    payload: payload ?? null,
    batch: batch ?? null,
    // updated_at versions the row (the compare-and-set above), so it moves on even within one millisecond.
    updated_at: new Date(Math.max(now.getTime(), existing.updated_at.getTime() + 1)),
  }
}

/** Delete a destination; once this resolves nothing more is delivered to it from this instance. */
export async function deleteDestination(ctx: EngineContext, tenantId: string, id: string): Promise<{ success: true }> {
  await requireTenant(ctx, tenantId)
  if (!(await ctx.storage.deleteDestination(tenantId, id))) throw notFound('destination', id)
  await ctx.stopDeliveries(tenantId, id)
  return { success: true }
}

/** Enable (`disabled: false`) or disable a destination; idempotent, disabling twice keeps the first time. */
export async function setDestinationDisabled(ctx: EngineContext, tenantId: string, id: string, disabled: boolean): Promise<Destination> {
  await requireTenant(ctx, tenantId)
  const now = ctx.now()
  const record = await ctx.storage.setDestinationDisabled(tenantId, id, disabled ? now : null, now)
  if (!record) throw notFound('destination', id)
  ctx.destinationChanged(tenantId, id)
  return toDestination(ctx, record)
}

export function listDestinationTypes(): DestinationTypeSchema[] {
  return Object.values(destinationRegistry).map(typeSchema)
}

export function getDestinationType(type: string): DestinationTypeSchema {
  return typeSchema(destinationType(type))
}

/** Mask sensitive credential values for responses: first 4 characters then `****`. */
export function maskCredentials(def: DestinationTypeDefinition, credentials: Record<string, unknown>): Record<string, unknown> {
  const sensitive = new Set(def.credential_fields.filter((f) => f.sensitive).map((f) => f.key))
  for (const key of def.revealedCredentials ?? []) sensitive.delete(key)
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(credentials)) {
    out[key] = sensitive.has(key) && typeof value === 'string' ? `${value.slice(0, 4)}****` : value
  }
  return out
}
