import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postgres } from '../../src/storage/postgres.js'
import { clusterAvailable, startCluster, type Cluster } from '../support/pg-cluster.js'
import { waitFor } from '../support/receiver.js'

const fixture = join(import.meta.dirname, '../fixtures/pg-backend-kill.ts')

function runFixture(url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fixture, url], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })))
}

describe.runIf(clusterAvailable)('Postgres storage: connections killed under load', () => {
  let cluster: Cluster
  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await cluster?.stop()
  })

  // postgres.js 3.4.9 answers the failed statement with a ROLLBACK written on the dead socket from a
  // setImmediate: an uncaught TypeError (porsager/postgres #1208). The storage must never let it happen.
  it('rejects the call with `unavailable`, and the process lives on with a pool that reconnects', async () => {
    const url = await cluster.createDatabase('backend_kill')
    const { code, stdout, stderr } = await runFixture(url)
    expect(stderr).not.toContain('TypeError')
    expect(stdout.trim().split('\n')).toEqual(['rejected unavailable', 'alive'])
    expect(code).toBe(0)
  }, 60_000)

  // postgres.js waits 3^n / 100 s (up to 20 s) before reconnecting after n closes with an error in a
  // row, and every killed backend counts: after a few kills the pool stayed closed for seconds while
  // the server was up, and every call meanwhile ran into its deadline.
  it('reconnects as soon as the server takes connections again, after repeated backend kills', async () => {
    const url = await cluster.createDatabase('repeated_kills')
    const storage = await postgres({ url, max: 4, timeoutMs: 2_000 })()
    try {
      await storage.migrate()
      let phase: 'kills' | 'after' | 'done' = 'kills'
      const outcomes = { kills: new Map<string, number>(), after: new Map<string, number>() }
      const count = (key: string) => {
        if (phase === 'done') return
        const map = outcomes[phase]
        map.set(key, (map.get(key) ?? 0) + 1)
      }
      const loop = async () => {
        while (phase !== 'done') {
          try {
            await storage.getTenant('nobody')
            count('ok')
          } catch (err) {
            count((err as Error).message)
            await new Promise((r) => setTimeout(r, 50))
          }
        }
      }
      const loops = Array.from({ length: 6 }, loop)
      for (let round = 0; round < 8; round++) {
        await new Promise((r) => setTimeout(r, 500))
        await cluster.terminateBackends('repeated_kills')
      }
      phase = 'after'
      await new Promise((r) => setTimeout(r, 3_000))
      phase = 'done'
      await Promise.all(loops)
      // Every failure was a typed `unavailable`; none after the kills was a call left waiting.
      for (const map of Object.values(outcomes)) for (const key of map.keys()) expect(key === 'ok' || key.startsWith('storage unavailable: ')).toBe(true)
      expect([...outcomes.after.keys()].filter((k) => k.includes('no answer within'))).toEqual([])
      expect(outcomes.after.get('ok')).toBeGreaterThan(0)
    } finally {
      await storage.close()
    }
  }, 60_000)

  // A NOTIFY sent while the LISTEN session is gone is lost: the worker must claim once it listens again.
  it('calls the work listener again when the LISTEN session is re-established after a kill, and NOTIFYs arrive again', async () => {
    const url = await cluster.createDatabase('listen_again')
    const storage = await postgres({ url, max: 2, timeoutMs: 2_000 })()
    try {
      await storage.migrate()
      const now = new Date()
      await storage.upsertTenant('t', {}, now)
      await storage.insertDestination({ tenant_id: 't', id: 'd', type: 'webhook', topics: ['*'], filter: null, config: { url: 'http://127.0.0.1:9/' }, credentials: '{}', delivery_metadata: null, metadata: null, disabled_at: null, created_at: now, updated_at: now, consecutive_failures: 0 })
      let calls = 0
      await storage.onWork!(() => calls++)
      expect(calls).toBe(1) // the first subscription
      await cluster.terminateBackends('listen_again')
      await waitFor(() => calls > 1, 15_000, 'the listener called on the new subscription')
      // The new subscription hears announcements: an event inserted without a lease is announced.
      const heard = calls
      let n = 0
      await waitFor(
        async () => {
          const at = new Date()
          n++
          await storage
            .insertEvents([{ event: { tenant_id: 't', id: `e${n}`, topic: 'x', time: at, data: {}, metadata: {}, eligible_for_retry: true, created_at: at }, deliveries: [{ id: `dl${n}`, destination_id: 'd', next_attempt_at: at }] }])
            .catch(() => undefined) // the first statement after the kill may meet the killed session's error
          await new Promise((r) => setTimeout(r, 200))
          return calls > heard
        },
        15_000,
        'a NOTIFY heard on the new subscription',
      )
    } finally {
      await storage.close()
    }
  }, 60_000)
})
