import { sql, type SQL } from 'drizzle-orm'
import type { Tables } from './sql-context.js'
import { column, prepared, slot, type Driver } from './postgres-prepared.js'
import type { PublishTarget } from './storage.js'

// The publish targets of tenants that publish inside host transactions, kept between publishes so a publish
// need not read them on the engine's pool first (a round trip the host's transaction would wait for).

/** A tenant's publish targets (oldest destination first) and the version they were read at. */
export interface TenantTargets {
  targets: PublishTarget[]
  version: string
}

/**
 * The version of a tenant's publish targets: a digest of what publishing reads of its destinations (ids, topics,
 * filters, enabled or not, delivery settings, in order). Equal versions, equal publish plans. jsonb's text form
 * and md5 depend on no session setting, so the host's session computes what the engine's did.
 */
export const targetsVersion = (t: Tables, tenant: SQL) => sql`(select ${versionOf('v')}
  from ${t.destinations} v where v.tenant_id = ${tenant})`

/** The version of the destinations `v` (aggregated). */
const versionOf = (v: string) =>
  sql.raw(`md5(coalesce(string_agg(jsonb_build_array(${v}.id, ${v}.topics, ${v}.filter, ${v}.disabled_at is null, ${v}.delivery)::text, ',' order by ${v}.created_at, ${v}.id), ''))`)

/**
 * On Citus, which refuses a correlated subquery over a set-returning function or a lateral one: the versions of the
 * tenants `tenants` (a text array) as a table (tenant_id, version), absent for a tenant with no destination
 * (whose version is `emptyVersion`).
 */
const versionsOf = (t: Tables, tenants: SQL) =>
  sql`(select v.tenant_id, ${versionOf('v')} as version from ${t.destinations} v where v.tenant_id = any(${tenants}) group by v.tenant_id)`
const emptyVersion = sql.raw(`md5('')`)

/**
 * The check the event insert makes in the host's transaction (placeholders `version_tenant`, `version`): each
 * listed tenant's targets, as that transaction sees them, are still at the version they were planned from.
 */
export const targetsUnchanged = (t: Tables, byShard = false) =>
  byShard
    ? sql`not exists (
    select 1 from unnest(${column('version_tenant', 'text')}, ${column('version', 'text')}) as c(tenant_id, version)
      left join ${versionsOf(t, column('version_tenant', 'text'))} now on now.tenant_id = c.tenant_id
    where c.version is distinct from coalesce(now.version, ${emptyVersion}))`
    : sql`not exists (
    select 1 from unnest(${column('version_tenant', 'text')}, ${column('version', 'text')}) as c(tenant_id, version)
    where c.version is distinct from ${targetsVersion(t, sql`c.tenant_id`)})`

/** Reads tenants' publish targets with their versions, one statement (one snapshot). */
export function targetsReader(t: Tables, driver: Driver, byShard = false): (tenantIds: string[]) => Promise<Map<string, TenantTargets>> {
  const version = byShard
    ? sql`left join ${versionsOf(t, sql`${slot('ids')}::text[]`)} ver on ver.tenant_id = tn.id`
    : sql`cross join lateral (select ${targetsVersion(t, sql`tn.id`)} as version) ver`
  const read = prepared<'ids'>(sql`
    select tn.id, ${byShard ? sql`coalesce(ver.version, ${emptyVersion})` : sql`ver.version`}, d.id, d.topics, d.filter, d.disabled_at, d.delivery
    from ${t.tenants} tn ${version}
      left join ${t.destinations} d on d.tenant_id = tn.id
    where tn.id = any(${slot('ids')}::text[])
    order by tn.id, d.created_at, d.id`)
  return async (tenantIds) => {
    const result = new Map<string, TenantTargets>()
    for (const [tenant, version, id, topics, filter, disabled_at, delivery] of await read(driver, { ids: tenantIds })) {
      let entry = result.get(tenant as string)
      if (!entry) result.set(tenant as string, (entry = { targets: [], version: version as string }))
      if (id !== null) entry.targets.push({ id, topics, filter, disabled_at, delivery } as PublishTarget)
    }
    return result
  }
}

/**
 * Tenants' publish targets kept between publishes. An entry is never trusted as it is: the statement that writes
 * the events checks, in the host's transaction, that the tenant's targets are still at the entry's version
 * (`targetsUnchanged`), and the publish is planned again from a fresh read if not. So a destination created,
 * changed, enabled or deleted through any engine on the database is seen by the next publish after it, here too,
 * without telling this engine. Bounded: the entries read longest ago go first.
 */
export class PublishTargetCache {
  readonly #entries = new Map<string, TenantTargets>()
  readonly #read: (tenantIds: string[]) => Promise<Map<string, TenantTargets>>
  readonly #max: number

  constructor(read: (tenantIds: string[]) => Promise<Map<string, TenantTargets>>, max = 10_000) {
    this.#read = read
    this.#max = max
  }

  /** The tenants' targets as kept, read for those not kept yet (unknown tenants are absent). */
  async get(tenantIds: string[]): Promise<Map<string, TenantTargets>> {
    const result = new Map<string, TenantTargets>()
    const missing: string[] = []
    for (const id of tenantIds) {
      const kept = this.#entries.get(id)
      if (kept) result.set(id, kept)
      else missing.push(id)
    }
    if (missing.length === 0) return result
    for (const [id, read] of await this.read(missing)) result.set(id, read)
    return result
  }

  /** Read the tenants' targets now, and keep them. */
  async read(tenantIds: string[]): Promise<Map<string, TenantTargets>> {
    const read = await this.#read(tenantIds)
    for (const id of tenantIds) {
      this.#entries.delete(id)
      const entry = read.get(id)
      if (entry) this.#entries.set(id, entry)
    }
    for (const id of this.#entries.keys()) {
      if (this.#entries.size <= this.#max) break
      this.#entries.delete(id)
    }
    return read
  }
}
