import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { Logger } from '../../src/logger.js'
import { postgres, type PostgresOptions } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, rejection } from '../support/engines.js'
import { startCluster, type Cluster } from '../support/pg-cluster.js'
import { replicaAvailable, startStandby, type Standby } from '../support/pg-replica.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// postgres({ url, readUrl }) against a real streaming replica: a throwaway primary and a hot standby made with
// pg_basebackup -R. Pausing the standby's replay (pg_wal_replay_pause) freezes what it shows, which tells the
// reads it answers from those the primary answers.

/** A logger that keeps what it is given (to count the replica's log lines). */
function recordingLogger() {
  const lines: { level: string; message: string; fields: Record<string, unknown> }[] = []
  const at = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, message, fields })
  const logger: Logger = { debug: () => {}, info: at('info'), warn: at('warn'), error: at('error') }
  return { logger, lines, about: (words: string) => lines.filter((l) => l.message.includes(words)) }
}

describe.runIf(replicaAvailable)('Postgres read replica: postgres({ url, readUrl })', () => {
  let primary: Cluster
  let standby: Standby
  let url: string
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  const engines: Outflow[] = []

  beforeAll(async () => {
    primary = await startCluster()
    url = await primary.createDatabase('outflow')
    const storage = await postgres({ url })()
    await storage.migrate()
    await storage.close()
    standby = await startStandby(primary)
    receiver = await startReceiver()
  }, 120_000)
  afterAll(async () => {
    await receiver?.close()
    await standby?.remove()
    await primary?.stop()
  })
  afterEach(async () => {
    await Promise.all(engines.splice(0).map((e) => e.close()))
    await standby.resumeReplay().catch(() => undefined)
  })

  async function engine(options: Partial<PostgresOptions> = {}, logger: Logger = recordingLogger().logger): Promise<Outflow> {
    const storage = postgres({ url, readUrl: standby.urlOf('outflow'), max: 4, readMax: 2, ...options })
    const outflow = await createOutflow({ storage, apiKey, encryptionKey, allowPrivateNetworks: true, migrate: false, logger, delivery: { pollIntervalMs: 200 } })
    engines.push(outflow)
    return outflow
  }

  /** A tenant with one webhook destination to the receiver. */
  async function tenantWithHook(outflow: Outflow, tenant: string): Promise<void> {
    await outflow.upsertTenant(tenant)
    await outflow.createDestination(tenant, { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/${tenant}` } })
  }

  /** Publish an event and wait until the primary shows it delivered (a GET of it). */
  async function publishDelivered(outflow: Outflow, tenant: string, id: string): Promise<void> {
    await outflow.publish({ id, tenant_id: tenant, topic: 'order.created', data: { id } })
    await waitFor(() => outflow.getEvent(tenant, id).then((e) => e.status === 'success', () => false), 30_000, `event ${id} delivered`)
  }

  const listed = async (outflow: Outflow, tenant: string) => (await outflow.listEvents(tenant)).models.map((e) => e.id).sort()
  const window = () => ({ start: new Date(Date.now() - 3_600_000), end: new Date(Date.now() + 3_600_000) })
  const eventCount = async (outflow: Outflow, tenant: string) =>
    (await outflow.eventMetrics({ time: window(), measures: 'count', filters: { tenant_id: tenant } })).data[0]?.metrics.count ?? 0
  const attemptCount = async (outflow: Outflow, tenant: string) =>
    (await outflow.attemptMetrics({ time: window(), measures: 'count', filters: { tenant_id: tenant } })).data[0]?.metrics.count ?? 0

  it('reads event listings and metrics from the replica: with replay paused a delivered event is missing from them while a GET on the primary shows it, and appears once replay resumes', async () => {
    const outflow = await engine()
    await tenantWithHook(outflow, 'lag')
    await publishDelivered(outflow, 'lag', 'e1')
    await standby.caughtUp()
    expect(await listed(outflow, 'lag')).toEqual(['e1'])

    await standby.pauseReplay()
    await publishDelivered(outflow, 'lag', 'e2')
    expect(receiver.on('/lag')).toHaveLength(2)
    // The replica's view: one event, one attempt.
    expect(await listed(outflow, 'lag')).toEqual(['e1'])
    expect(await outflow.listEvents('lag', { destination_id: 'hook' }).then((p) => p.models.map((e) => e.id))).toEqual(['e1'])
    expect(await eventCount(outflow, 'lag')).toBe(1)
    expect(await attemptCount(outflow, 'lag')).toBe(1)
    // An event the replica does not have yet: its attempts are read from the primary rather than answer 404.
    expect((await outflow.listDeliveries('lag', 'e2')).map((a) => a.status)).toEqual(['success'])

    await standby.resumeReplay()
    await waitFor(async () => (await listed(outflow, 'lag')).length === 2, 30_000, 'the replica to show e2')
    expect(await listed(outflow, 'lag')).toEqual(['e1', 'e2'])
    expect(await eventCount(outflow, 'lag')).toBe(2)
    expect(await attemptCount(outflow, 'lag')).toBe(2)
  }, 90_000)

  it('keeps on the primary the reads that must see a write just made: tenants, destinations, publish, a GET of an event, an attempt listing', async () => {
    const outflow = await engine()
    await standby.pauseReplay()
    // None of this exists on the paused replica.
    await tenantWithHook(outflow, 'fresh')
    expect((await outflow.getTenant('fresh')).id).toBe('fresh')
    expect((await outflow.listTenants()).models.map((t) => t.id)).toContain('fresh')
    expect((await outflow.getDestination('fresh', 'hook')).id).toBe('hook')
    expect((await outflow.listDestinations('fresh')).map((d) => d.id)).toEqual(['hook'])
    await publishDelivered(outflow, 'fresh', 'f1')
    expect((await outflow.getEvent('fresh', 'f1', { destination_id: 'hook' })).status).toBe('success')
    expect((await outflow.listDeliveries('fresh', 'f1')).map((a) => a.status)).toEqual(['success'])
    // While the listing, from the replica, does not know the tenant's events yet.
    expect(await listed(outflow, 'fresh')).toEqual([])
    // A retry is a write on the primary: the manual attempt is made.
    await outflow.retryDelivery('fresh', 'hook', 'f1')
    await waitFor(() => receiver.on('/fresh').length === 2, 30_000, 'the manual attempt')
  }, 90_000)

  it('answers listings and metrics from the primary while the replica is stopped (logged once), and reads from the replica again once it is back', async () => {
    const log = recordingLogger()
    const outflow = await engine({}, log.logger)
    await tenantWithHook(outflow, 'down')
    await standby.stop()
    try {
      await publishDelivered(outflow, 'down', 'd1')
      // Only the primary has d1.
      expect(await listed(outflow, 'down')).toEqual(['d1'])
      expect(await eventCount(outflow, 'down')).toBe(1)
      expect(await attemptCount(outflow, 'down')).toBe(1)
      const http = await outflow.fetch(new Request('http://host/api/v1/tenants/down/events', { headers: { authorization: `Bearer ${apiKey}` } }))
      expect(http.status).toBe(200)
      expect(log.about('read replica unavailable')).toHaveLength(1)
      expect(log.about('read replica unavailable')[0]).toMatchObject({ level: 'warn' })
    } finally {
      await standby.start()
    }
    // Back: the replica is tried again (after replicaRetryMs) and, paused, no longer shows what the primary has.
    await standby.caughtUp()
    await standby.pauseReplay()
    await publishDelivered(outflow, 'down', 'd2')
    await waitFor(async () => !(await listed(outflow, 'down')).includes('d2'), 30_000, 'listings read from the replica again')
    expect(log.about('read replica answers again')).toHaveLength(1)
    expect(log.about('read replica unavailable')).toHaveLength(1)
  }, 120_000)

  it('answers listings from the primary when the replica accepts connections but does not answer (SIGSTOP): after the callers\' bound, not with a 503', async () => {
    const log = recordingLogger()
    const outflow = await engine({}, log.logger)
    await tenantWithHook(outflow, 'silent')
    await publishDelivered(outflow, 'silent', 's1')
    await standby.caughtUp()
    expect(await listed(outflow, 'silent')).toEqual(['s1'])
    standby.signal('SIGSTOP')
    try {
      await publishDelivered(outflow, 'silent', 's2')
      // The replica's connection is open and silent: the read waits out the callers' bound (requestTimeoutMs), then asks the primary.
      expect(await listed(outflow, 'silent')).toEqual(['s1', 's2'])
      expect(await attemptCount(outflow, 'silent')).toBe(2)
      expect(log.about('read replica unavailable')).toHaveLength(1)
      expect(log.about('read replica unavailable')[0]!.fields).toMatchObject({ error: { message: 'storage unavailable: no answer within 3000 ms' } })
    } finally {
      standby.signal('SIGCONT')
    }
  }, 90_000)

  it('with maxReplicaLagMs, reads from the primary while the replica is further behind (logged once), and from the replica once it caught up', async () => {
    const log = recordingLogger()
    const outflow = await engine({ maxReplicaLagMs: 50 }, log.logger)
    await tenantWithHook(outflow, 'behind')
    await standby.pauseReplay()
    await publishDelivered(outflow, 'behind', 'b1')
    // Replay is paused with WAL waiting: the delay grows past 50 ms and the primary answers.
    await waitFor(async () => (await listed(outflow, 'behind')).includes('b1'), 30_000, 'the listing from the primary')
    expect(await attemptCount(outflow, 'behind')).toBe(1)
    expect(log.about('read replica is behind')).toHaveLength(1)

    await standby.resumeReplay()
    await standby.caughtUp()
    // The engine's own writes may leave the replica a few ms behind at times: polled until a read finds it within the bound.
    await waitFor(async () => (await listed(outflow, 'behind')).includes('b1') && log.about('read replica caught up').length > 0, 30_000, 'the replica caught up')
    expect(log.about('read replica caught up')[0]).toMatchObject({ level: 'info' })
  }, 90_000)

  it('delivers end to end with readUrl set: publish, a real HTTP receiver, the attempts listed', async () => {
    const outflow = await engine()
    await tenantWithHook(outflow, 'e2e')
    // x3 is dated year 50: the replica's pool reads timestamps as the primary's does (postgres-timestamps.ts).
    const times = [undefined, undefined, '0050-01-01T00:00:00Z']
    const published = await outflow.publishMany(times.map((time, i) => ({ id: `x${i + 1}`, tenant_id: 'e2e', topic: 'order.created', time, data: { n: i + 1 } })))
    expect(published.map((p) => p.duplicate)).toEqual([false, false, false])
    await waitFor(async () => (await listed(outflow, 'e2e')).length === 3, 30_000, 'three events listed')
    const page = await outflow.listEvents('e2e')
    for (const id of ['x1', 'x2', 'x3']) expect(page.models.find((e) => e.id === id)).toEqual(await outflow.getEvent('e2e', id))
    expect(page.models.find((e) => e.id === 'x3')!.time).toBe('0050-01-01T00:00:00.000Z')
    expect(receiver.on('/e2e').map((r) => JSON.parse(r.body).n).sort()).toEqual([1, 2, 3])
    for (const id of ['x1', 'x2', 'x3']) expect((await outflow.listDeliveries('e2e', id)).map((a) => [a.status, a.response_status_code])).toEqual([['success', 200]])
    expect(await attemptCount(outflow, 'e2e')).toBe(3)
  }, 90_000)

  it('refuses a readUrl that is not a postgres:// URL, a readMax below 1 and a maxReplicaLagMs of 0', async () => {
    expect(await rejection(postgres({ url, readUrl: 'http://replica' })())).toMatchObject({ code: 'validation', data: { readUrl: 'must be a postgres:// or postgresql:// URL' } })
    expect(await rejection(postgres({ url, readUrl: url, readMax: 0 })())).toMatchObject({ code: 'validation', data: { readMax: 'must be an integer of at least 1' } })
    expect(await rejection(postgres({ url, readUrl: url, maxReplicaLagMs: 0 })())).toMatchObject({ code: 'validation', data: { maxReplicaLagMs: 'must be a number above 0' } })
  })
})
