import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clusterAvailable, startCluster, type Cluster } from '../support/pg-cluster.js'
import { runHeldXmin } from './held-xmin.js'
import { postgresTarget } from './scenarios.js'

// Fault scenario 7, short version (the long one holds the XID for two minutes: `npm run chaos -- xmin`).
describe.runIf(clusterAvailable)('held xmin: a session idle in transaction while the engine runs', () => {
  let cluster: Cluster
  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it('the queue keeps up while dead rows pile up, and vacuum reclaims them once the session ends', async () => {
    const r = await runHeldXmin(await postgresTarget(cluster, 'xmin'), {
      name: 'held xmin',
      publishers: 4,
      rate: 25,
      beforeMs: 3_000,
      holdMs: 12_000,
      afterMs: 6_000,
      engine: { timeoutMs: 5_000, leaseMs: 10_000 },
      drainMs: 30_000,
    })
    console.log(JSON.stringify(r, null, 1))
    expect(r.engineErrors).toEqual([])
    expect(r.lost).toBe(0)
    expect(r.unrecorded).toBe(0)
  }, 90_000)
})
