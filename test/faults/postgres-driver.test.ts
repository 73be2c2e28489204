import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { clusterAvailable, startCluster, type Cluster } from '../support/pg-cluster.js'

const fixture = join(import.meta.dirname, '../fixtures/pg-backend-kill.ts')

function runFixture(url: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', fixture, url], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
  proc.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ code, stdout, stderr })))
}

describe.runIf(clusterAvailable)('Postgres storage: a connection that dies inside a transaction', () => {
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
})
