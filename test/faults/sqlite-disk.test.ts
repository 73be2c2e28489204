import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { apiKey, rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { expectRecovered } from './expect-recovered.js'
import { diskFull, fill } from './fault-actions.js'
import { runScenario, sqliteTarget } from './scenarios.js'

// SQLite on a small file system of its own (a tmpfs the test mounts, so it needs root) that fills up.
// (A read-only directory cannot be staged the same way: root ignores permission bits, and a file system
// with the database open for writing refuses to be remounted read-only. SQLITE_READONLY maps like
// SQLITE_FULL, see src/storage/sqlite.ts.)

const mount = (...args: string[]) => execFileSync('mount', args, { stdio: 'pipe' })

/** Mounting a tmpfs works here (root, and a kernel that lets this container mount). */
const canMount = (() => {
  if (process.getuid?.() !== 0) return false
  const probe = mkdtempSync(join(tmpdir(), 'outflow-mount-'))
  try {
    mount('-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', probe)
    execFileSync('umount', [probe])
    return true
  } catch {
    return false
  } finally {
    rmSync(probe, { recursive: true, force: true })
  }
})()
if (!canMount) console.warn('[outflow tests] cannot mount a tmpfs (needs root): skipping the SQLite disk fault suite')

const admin = { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }
const big = 'x'.repeat(16 * 1024)

describe.runIf(canMount)('SQLite: the disk fills up', () => {
  let dir: string
  let outflow: Outflow
  let receiver: Awaited<ReturnType<typeof startReceiver>>
  const errors: string[] = []
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'outflow-disk-'))
    mount('-t', 'tmpfs', '-o', 'size=8m', 'tmpfs', dir)
    receiver = await startReceiver()
    const logger = { debug() {}, info() {}, warn() {}, error: (_: unknown, message: string) => void errors.push(message) }
    outflow = await createOutflow({ storage: sqlite({ path: join(dir, 'outflow.db') }), apiKey, logger, allowPrivateNetworks: true, delivery: { pollIntervalMs: 50 } })
    await outflow.upsertTenant('acme', {})
    await outflow.createDestination('acme', { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/hook` } })
  })
  afterAll(async () => {
    await outflow?.close().catch(() => {})
    await receiver?.close()
    try {
      execFileSync('umount', [dir])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  const delivered = (ids: string[]) => waitFor(() => ids.every((id) => receiver.on('/hook').some((r) => r.headers['webhook-id'] === id)), 20_000, 'deliveries')
  const batch = (prefix: string, n = 20) => Array.from({ length: n }, (_, i) => ({ id: `${prefix}-${i}`, tenant_id: 'acme', topic: 'order.created', data: { big } }))

  it('a full disk fails publishes with `unavailable` (503), writes nothing of them, and delivery resumes when space returns', async () => {
    const before = await outflow.publishMany(batch('before'))
    await delivered(before.map((p) => p.id))

    const filler = fill(dir)
    // Fill what the file system still takes (the WAL may have room left) until a publish fails.
    let failed: ReturnType<typeof batch> | undefined
    for (let i = 0; i < 50 && !failed; i++) {
      const events = batch(`full-${i}`)
      const err = await outflow.publishMany(events).then(
        () => undefined,
        (e: unknown) => e,
      )
      if (err) {
        expect(err).toMatchObject({ code: 'unavailable', status: 503 })
        expect((err as Error).message).toMatch(/^storage unavailable: SQLITE_(FULL|IOERR)/)
        failed = events
      }
    }
    expect(failed).toBeDefined()
    // Through HTTP: a 503 with Retry-After, never a 500. (The checkpointer may have let the WAL start over
    // in the room it already has, so a publish or two can still fit: publish until one does not.)
    let response: Response | undefined
    for (let i = 0; i < 50 && response?.status !== 503; i++) {
      response = await outflow.fetch(new Request('http://host/api/v1/publish', { method: 'POST', headers: admin, body: JSON.stringify({ id: `http-full-${i}`, tenant_id: 'acme', topic: 'order.created', data: { big } }) }))
      expect([202, 503]).toContain(response.status)
    }
    response = response!
    expect(response.status).toBe(503)
    expect(response.headers.get('retry-after')).toBe('1')
    // Nothing of the failed batch was written.
    for (const e of failed!) expect(await rejection(outflow.getEvent('acme', e.id))).toMatchObject({ status: 404 })

    rmSync(filler)
    const after = await outflow.publishMany(failed!)
    expect(after.every((p) => !p.duplicate)).toBe(true)
    await delivered([...after.map((p) => p.id)])
    // Every delivery ends recorded as a success (results held during the outage were written).
    await waitFor(async () => (await outflow.health()).queue?.depth === 0, 20_000, 'an empty queue')
    expect(errors.filter((m) => m !== 'http request failed')).toEqual([])
  }, 600_000)
})

// Under load, with engine processes and publishers over HTTP (the long version: `npm run chaos -- disk`).
// The space returns in full: when only a few MiB return while publishers go on, new rows fill them again and
// the outage simply lasts (nothing acknowledged is lost, but delivery waits for more room), so a test of that
// depends on how fast this machine publishes.
describe.runIf(canMount)('SQLite: the disk fills up under load', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'outflow-disk-load-'))
    mount('-t', 'tmpfs', '-o', 'size=32m', 'tmpfs', dir)
  })
  afterAll(() => {
    try {
      execFileSync('umount', [dir])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('publishes answer 503 while it is full, and everything is delivered once space returns', async () => {
    const r = await runScenario(sqliteTarget(dir, 'disk'), {
      name: 'disk full',
      before: 2_000,
      after: 5_000,
      publishers: 8,
      engine: { timeoutMs: 2_000, leaseMs: 5_000 },
      requestBoundMs: 10_000,
      drainMs: 20_000,
      fault: diskFull(2_000),
    })
    expectRecovered(r)
    expect(r.outcomes['503']).toBeGreaterThan(0)
    // Publishing went on after the fault.
    expect(r.rateAfter).toBeGreaterThan(0)
  }, 600_000)
})
