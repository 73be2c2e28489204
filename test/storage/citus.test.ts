import postgresJs from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { PublishTarget, Storage } from '../../src/storage/storage.js'
import { citusKind, citusUrl } from '../support/citus.js'
import { attemptWrite, destinationRecord, seedOwners } from '../support/records.js'

// On a Citus cluster (OUTFLOW_CITUS_URL; docs/citus.md): the tables distributed by tenant_id, the tenantClaims
// trigger firing on the shards, and a claim that names one tenant running there with its row locks (Citus refuses
// `FOR UPDATE` in a statement that reaches more than one shard).

const many = Array.from({ length: 12 }, (_, i) => `cm${i}`)

describe.runIf(citusUrl)('citus: claims per tenant on distributed tables', () => {
  const kind = citusKind()
  let s: Storage
  let sql: postgresJs.Sql
  let schema: string
  beforeAll(async () => {
    s = await kind.open()
    sql = postgresJs(citusUrl!, { max: 1, onnotice: () => {} })
    ;[{ schema } = { schema: '' }] = await sql<{ schema: string }[]>`
      select n.nspname as schema from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid join pg_namespace n on n.oid = c.relnamespace
      where c.relname = 'deliveries' order by c.oid desc limit 1`
    await seedOwners(s, Object.fromEntries(['ct', ...many].map((t) => [t, ['d']])))
  })
  afterAll(async () => {
    await sql?.end()
    await kind.cleanup()
  })

  it('distributes the tenant tables by tenant_id, co-located, and the shared ones as reference tables', async () => {
    const rows = await sql<{ table: string; method: string; column: string | null }[]>`
      select c.relname as table, p.partmethod as method, column_to_column_name(p.logicalrelid, p.partkey) as column
      from pg_dist_partition p join pg_class c on c.oid = p.logicalrelid join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = ${schema} order by 1`
    const of = (table: string) => rows.find((r) => r.table === table)
    for (const table of ['attempts', 'deliveries', 'destinations', 'due_tenants', 'events', 'expunge_jobs', 'rate_buckets', 'replay_jobs']) expect(of(table)).toMatchObject({ method: 'h', column: 'tenant_id' })
    expect(of('tenants')).toMatchObject({ method: 'h', column: 'id' })
    for (const table of ['portal_codes', 'signing_keys']) expect(of(table)?.method).toBe('n')
    // So an idle engine looks for jobs and promotes waiting deliveries seldom (delivery/idle-polls.ts).
    expect(s.readsEveryShard).toBe(true)
  })

  it('marks the tenant due from a delivery written on its shard, claims it, and settles the tenant once it is done', async () => {
    const due = new Date(Date.now() - 1_000)
    await sql.unsafe(
      `insert into "${schema}".events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) values ('ct', 'e1', 't', $1, '{}', '{}', true, $1)`,
      [due],
    )
    await sql.unsafe(
      `insert into "${schema}".deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
       values ('dlv-ct-e1', 'ct', 'e1', 'd', 't', $1, 'pending', 0, false, $1, $1)`,
      [due],
    )
    const dueRow = async () => (await sql.unsafe(`select due_at from "${schema}".due_tenants where tenant_id = 'ct'`))[0]?.due_at as Date | undefined
    expect((await dueRow())?.getTime()).toBe(due.getTime())
    const now = new Date()
    const claimed = await s.claimDueDeliveries({ owner: 'w', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 10 })
    expect(claimed.map((c) => [c.id, c.event.id])).toEqual([['dlv-ct-e1', 'e1']])
    // Settled to the lease's end: the claim took all the tenant had.
    expect((await dueRow())?.getTime()).toBe(now.getTime() + 30_000)
    await sql.unsafe(`update "${schema}".deliveries set status = 'success', next_attempt_at = null, lease_owner = null, lease_until = null where tenant_id = 'ct' and id = 'dlv-ct-e1'`)
    const later = new Date(now.getTime() + 60_000)
    expect(await s.claimDueDeliveries({ owner: 'w', now: later, leaseUntil: new Date(later.getTime() + 30_000), limit: 10 })).toEqual([])
    expect(await dueRow()).toBeUndefined()
  })

  it('claims the due deliveries of tenants on several shards in one claim, a statement per shard', async () => {
    const due = new Date(Date.now() - 1_000)
    for (const t of many) {
      await sql.unsafe(
        `insert into "${schema}".events (tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at) values ($1, 'e1', 't', $2, '{}', '{}', true, $2)`,
        [t, due],
      )
      await sql.unsafe(
        `insert into "${schema}".deliveries (id, tenant_id, event_id, destination_id, topic, event_time, status, attempt_count, manual, next_attempt_at, event_created_at)
         values ('dlv-' || $1, $1, 'e1', 'd', 't', $2, 'pending', 0, false, $2, $2)`,
        [t, due],
      )
    }
    const [{ shards } = { shards: 0 }] = await sql.unsafe(
      `select count(distinct get_shard_id_for_distribution_column('"${schema}".due_tenants', t))::int as shards from unnest($1::text[]) t`,
      [many],
    )
    expect(shards).toBeGreaterThan(1)
    const now = new Date()
    const claimed = await s.claimDueDeliveries({ owner: 'w', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 100 })
    expect(claimed.map((c) => c.id).sort()).toEqual(many.map((t) => `dlv-${t}`).sort())
    expect(await s.claimDueDeliveries({ owner: 'w2', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 100 })).toEqual([])
  })

  it('publishes one batch over tenants on several shards, records their results in one write, and holds and releases across shards', async () => {
    const tenants = many.slice(0, 8)
    const at = new Date(Date.now() - 1_000)
    const event = (tenant: string, id: string) => ({ tenant_id: tenant, id, topic: 't', time: at, data: { tenant }, metadata: {}, eligible_for_retry: true, created_at: at })
    const inserted = await s.insertEvents(tenants.map((t) => ({ event: event(t, 'multi'), deliveries: [{ id: `dlv-${t}-multi-d`, destination_id: 'd', next_attempt_at: at }] })))
    expect(inserted).toEqual(tenants.map(() => ({ duplicate: false, destination_ids: ['d'] })))
    // A group naming a tenant that does not exist writes nothing of the group, on any shard; the rest is written.
    const grouped = await s.insertEvents([
      { event: event(tenants[0]!, 'g1'), deliveries: [{ id: `dlv-${tenants[0]}-g1`, destination_id: 'd', next_attempt_at: at }], group: 1 },
      { event: event('no-such-tenant', 'g1'), deliveries: [], group: 1 },
      { event: event(tenants[1]!, 'solo'), deliveries: [{ id: `dlv-${tenants[1]}-solo`, destination_id: 'gone', next_attempt_at: at }] },
    ])
    expect(grouped).toEqual([
      { duplicate: false, destination_ids: [], missing_tenant: 'no-such-tenant' },
      { duplicate: false, destination_ids: [], missing_tenant: 'no-such-tenant' },
      { duplicate: false, destination_ids: [] },
    ])
    const rows = await sql.unsafe(`select tenant_id, id from "${schema}".events where id in ('multi', 'g1', 'solo') order by 1, 2`)
    expect(rows.map((r) => `${r.tenant_id}/${r.id}`)).toEqual([...tenants.map((t) => `${t}/multi`), `${tenants[1]}/solo`].sort())

    const now = new Date()
    const claimed = await s.claimDueDeliveries({ owner: 'w', now, leaseUntil: new Date(now.getTime() + 30_000), limit: 100 })
    expect(claimed.map((c) => c.id).sort()).toEqual(tenants.map((t) => `dlv-${t}-multi-d`).sort())
    expect(await s.extendLeases('w', claimed.map((c) => c.id), new Date(now.getTime() + 60_000))).toBe(tenants.length)
    // Half fail (a retry a minute later), half succeed: one write over every shard.
    const streaks = await s.recordAttempts(tenants.map((t, i) => attemptWrite(t, 'multi', 'd', i % 2 ? 'pending' : 'success', now)))
    expect(streaks.map((x) => [x.tenant_id, x.consecutive_failures]).sort()).toEqual(tenants.map((t, i) => [t, i % 2]).sort())
    const states = await sql.unsafe(`select tenant_id, status, attempt_count, lease_owner from "${schema}".deliveries where event_id = 'multi' order by 1`)
    expect(states.map((r) => [r.tenant_id, r.status, r.attempt_count, r.lease_owner])).toEqual(tenants.map((t, i) => [t, i % 2 ? 'pending' : 'success', 1, null]).sort())
    const attempts = await sql.unsafe(`select count(*)::int as n from "${schema}".attempts where event_id = 'multi'`)
    expect(attempts[0]!.n).toBe(tenants.length)
    // The retries, claimed again, are given back (release) and then held (a destination disabled) across shards.
    const later = new Date(now.getTime() + 120_000)
    // (The earlier cases' deliveries are due again by then too.)
    const retried = (await s.claimDueDeliveries({ owner: 'w3', now: later, leaseUntil: new Date(later.getTime() + 30_000), limit: 100 })).filter((c) => c.event_id === 'multi')
    expect(retried.map((c) => c.tenant_id).sort()).toEqual(tenants.filter((_, i) => i % 2).sort())
    expect(await s.releaseLeases('w3', retried.map((c) => c.id))).toBe(tenants.length / 2)
    await s.holdDeliveries(retried.map((c) => c.id), true, later)
    const held = await sql.unsafe(`select status, count(*)::int as n from "${schema}".deliveries where event_id = 'multi' group by 1 order by 1`)
    expect(held.map((r) => [r.status, r.n])).toEqual([['cancelled', tenants.length / 2], ['success', tenants.length / 2]])
  })

  it("publishes in a host's transaction: written with its commit, nothing with its rollback, and planned again when a destination changed", async () => {
    const host = postgresJs(citusUrl!, { max: 1, onnotice: () => {} })
    const at = new Date(Date.now() - 1_000)
    const plan = (id: string) => (targets: Map<string, PublishTarget[]>) =>
      ['ct', 'cm5'].map((tenant) => ({
        event: { tenant_id: tenant, id, topic: 't', time: at, data: {}, metadata: {}, eligible_for_retry: true, created_at: at },
        deliveries: (targets.get(tenant) ?? []).map((d) => ({ id: `dlv-${tenant}-${id}-${d.id}`, destination_id: d.id, next_attempt_at: at })),
      }))
    const stored = async (id: string) =>
      (await sql.unsafe(`select tenant_id || '/' || destination_id as pair from "${schema}".deliveries where event_id = $1 order by 1`, [id])).map((r) => r.pair)
    try {
      const committed = await host.begin((tx) => s.insertEventsInTransaction!(tx, ['ct', 'cm5'], plan('tx1')))
      expect(committed.results).toEqual([{ duplicate: false, destination_ids: ['d'] }, { duplicate: false, destination_ids: ['d'] }])
      expect(await stored('tx1')).toEqual(['cm5/d', 'ct/d'])
      await host.begin(async (tx) => {
        await s.insertEventsInTransaction!(tx, ['ct', 'cm5'], plan('tx2'))
        throw new Error('rolled back')
      }).catch(() => undefined)
      expect(await stored('tx2')).toEqual([])
      // The targets kept since the first publish are stale: the statement refuses them, and the publish is planned again.
      await s.insertDestination(destinationRecord('cm5', 'd2'))
      const replanned = await host.begin((tx) => s.insertEventsInTransaction!(tx, ['ct', 'cm5'], plan('tx3')))
      expect(replanned.results.map((r) => r.destination_ids)).toEqual([['d'], ['d', 'd2']])
      expect(await stored('tx3')).toEqual(['cm5/d', 'cm5/d2', 'ct/d'])
    } finally {
      await host.end()
    }
  })
})
