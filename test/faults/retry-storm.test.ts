import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestDatabase, postgresAvailable } from '../support/services.js'
import { runRetryStorm, type StormOptions, type StormResult } from './retry-storm.js'
import { postgresDatabase, sqliteTarget } from './scenarios.js'

// Fault scenario 6, short version (the long one, 10,000 deliveries and a 30 s outage: `npm run chaos -- storm`).
// A burst of deliveries falls due at once (published before the workers start) and meets a receiver
// answering 503 with Retry-After for a second. Engine processes with a 2 s first retry (±20 % jitter) and the Retry-After at 2 s, so a
// retry that only obeyed Retry-After would come back after exactly 2 s.
const base: Omit<StormOptions, 'name'> = {
  deliveries: 200,
  outageMs: 1_000,
  retryAfterS: 2,
  engines: 1,
  engine: { timeoutMs: 5_000, leaseMs: 10_000, retry: { schedule: [2_000, ...Array.from({ length: 10 }, () => 500)], jitter: 0.2 } },
  publishConcurrency: 16,
  drainMs: 30_000,
}

function expectStormWeathered(r: StormResult) {
  expect(r.engineErrors).toEqual([])
  expect(r.lost).toBe(0)
  expect(r.duplicates).toBe(0) // no delivery completed twice
  expect(r.mismatched).toBe(0) // every request the receiver saw is a recorded attempt, and the other way round
  expect(r.requests).toBe(r.attempts)
  expect(r.unrecorded).toBe(0)
  // The retries are spread by the jitter, also where Retry-After sets the floor: before, every delay the
  // jitter drew below 2 s became exactly 2000 ms (about half of them, one spike at the receiver).
  expect(r.delays.length).toBeGreaterThan(30)
  for (const d of r.delays) expect(d).toBeGreaterThanOrEqual(2_000) // never sooner than Retry-After
  expect(r.delays.filter((d) => d === 2_000).length / r.delays.length).toBeLessThan(0.1)
  expect(Math.max(...r.delays) - Math.min(...r.delays)).toBeGreaterThan(200) // over half the jitter's 400 ms
}

describe.runIf(postgresAvailable)('retry storm: Postgres, two engine processes', () => {
  let db: Awaited<ReturnType<typeof createTestDatabase>>
  beforeAll(async () => {
    db = await createTestDatabase()
  })
  afterAll(async () => {
    await db?.drop()
  })

  it('200 deliveries fail at once and are retried spread out: none completed twice, every attempt recorded', async () => {
    expectStormWeathered(await runRetryStorm(postgresDatabase(db.url), { ...base, name: 'retry storm', engines: 2 }))
  }, 60_000)
})

describe('retry storm: SQLite', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outflow-storm-'))
  })
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
  })

  it('200 deliveries fail at once and are retried spread out: none completed twice, every attempt recorded', async () => {
    expectStormWeathered(await runRetryStorm(sqliteTarget(dir, 'storm'), { ...base, name: 'retry storm' }))
  }, 60_000)
})
