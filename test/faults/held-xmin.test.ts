import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clusterAvailable, startCluster, type Cluster } from '../support/pg-cluster.js'
import { runHeldXmin } from './held-xmin.js'
import { postgresTarget } from './scenarios.js'

// Fault scenario 7, short version (the long ones hold the XID for two minutes: `npm run chaos -- xmin`).
// The XID is held by an outbox host: a transaction that published an event with publish(e, { tx }) and
// stays open (an idle session holding one does the same to vacuum; the chaos run has both).
describe.runIf(clusterAvailable)('held xmin: an outbox host transaction left open while the engine runs', () => {
  let cluster: Cluster
  beforeAll(async () => {
    cluster = await startCluster({ statements: true })
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it('the queue keeps up while dead rows pile up, vacuum reclaims them once the transaction ends, and its event is delivered', async () => {
    const publishers = 4
    const rate = 25
    const r = await runHeldXmin(await postgresTarget(cluster, 'xmin'), {
      name: 'held xmin',
      publishers,
      rate,
      beforeMs: 2_000,
      holdMs: 8_000,
      afterMs: 5_000,
      engine: { timeoutMs: 5_000, leaseMs: 10_000, pollIntervalMs: 1_000 },
      drainMs: 30_000,
      holder: 'outbox',
    })
    expect(r.engineErrors).toEqual([])
    expect(r.badPublishes).toBe(0)
    expect(r.lost).toBe(0)
    expect(r.duplicates).toBe(0)
    expect(r.unrecorded).toBe(0)
    const [before, held, after] = r.phases
    // The fault bit: finished deliveries could not be vacuumed while the XID was held, and could after.
    expect(held!.dead.deliveries).toBeGreaterThan(before!.dead.deliveries + 200)
    expect(after!.dead.deliveries).toBeLessThan(held!.dead.deliveries / 2)
    // The queue kept up: at the end of each phase at most two seconds' worth of publishes waited.
    for (const phase of r.phases) expect(phase.backlog).toBeLessThanOrEqual(publishers * rate * 2)
    // Claims do not re-read every dead row: a scan of the due index from its oldest entry reads them all
    // (the full-scan figure), the engine's claims on average less (before the claim window every claim
    // scanned it whole: 72 buffers a claim against 161 for the full scan at the hold's end). On Postgres the
    // claim is one statement that also leases the rows and reads their events, so its buffers include that
    // per-row work: a claim that scanned the whole index would read more than the full scan alone.
    expect(held!.claims.perSecond).toBeGreaterThan(0)
    expect(held!.claims.buffersPerCall).toBeLessThan(held!.claimBuffers)
  }, 90_000)
})
