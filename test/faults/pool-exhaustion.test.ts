import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clusterAvailable, startCluster, type Cluster } from '../support/pg-cluster.js'
import { expectRecovered } from './expect-recovered.js'
import { holdWriteLock, lockQueueTable } from './fault-actions.js'
import { postgresTarget, runScenario, sqliteTarget, type ScenarioOptions } from './scenarios.js'

// Fault scenario 5, pool exhaustion: something else holds what the engine's connections need, so every
// connection is taken by a statement that waits and every other call queues behind them. The engine
// must slow down (503s with Retry-After), never answer 500 or hang, and deliver everything afterwards
// without a restart. (The long version: `npm run chaos -- pool`.)
const base: Omit<ScenarioOptions, 'name' | 'fault'> = {
  before: 1_000,
  after: 2_000,
  publishers: 4,
  engine: { timeoutMs: 2_000, leaseMs: 5_000 },
  requestBoundMs: 10_000,
  drainMs: 30_000,
}

describe.runIf(clusterAvailable)('pool exhaustion on Postgres', () => {
  let cluster: Cluster
  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  it('a host job locks the deliveries table for 5 s: the pool fills with waiting statements, publishes answer 503, then everything is delivered', async () => {
    const r = await runScenario(await postgresTarget(cluster, 'pool'), { ...base, name: 'pool exhaustion', fault: lockQueueTable(5_000) })
    expectRecovered(r)
    expect(r.outcomes['503']).toBeGreaterThan(0)
  }, 600_000)
})

describe('pool exhaustion on SQLite', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outflow-busy-'))
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  // better-sqlite3 is synchronous: SQLite's own wait for the lock (busy_timeout) held the event loop,
  // so while the lock was held the process answered nothing at all, one blocked call after the other.
  it('another process holds the write lock for 5 s: writes answer 503 within the bound, reads go on, then everything is delivered', async () => {
    const r = await runScenario(sqliteTarget(dir, 'busy'), { ...base, publishers: 8, readers: 2, name: 'write lock held', fault: holdWriteLock(5_000) })
    expectRecovered(r)
    expect(r.outcomes['503']).toBeGreaterThan(0)
    // Reading needs no write lock (WAL): reads are answered 200 all along (before: about one per busyTimeoutMs).
    expect(r.reads.bad).toEqual([])
    expect(r.reads.outcomes['503']).toBeUndefined()
    expect(r.reads.okDuringFault).toBeGreaterThan(20)
  }, 600_000)
})
