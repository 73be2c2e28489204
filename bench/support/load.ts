import { sleep, wallNow } from './clock.js'

/**
 * Run `fn(i)` for i in [0, total) with at most `concurrency` calls in flight (a closed loop).
 * The first error stops new calls and is rethrown once the in-flight ones settle.
 *
 * @example
 * await runPool(20_000, 50, (i) => outflow.publish({ tenant_id: 't1', topic: 'bench', data: { n: i } }))
 */
export async function runPool(total: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0
  let failure: unknown
  const lane = async () => {
    while (failure === undefined && next < total) {
      const i = next++
      try {
        await fn(i)
      } catch (err) {
        failure ??= err
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, lane))
  if (failure !== undefined) throw failure
}

/**
 * Fire `fire(i, intendedAt)` at a steady `ratePerSec`, without waiting for earlier calls (an open
 * loop, so a slow system does not slow the arrivals down and hide its own latency). `intendedAt`
 * is the wall-clock time the call was due; latency should be measured from it. Resolves when
 * every call has settled; rejects with the first error.
 *
 * @example
 * await openLoop(500, 3000, (i, t) => outflow.publish({ tenant_id: 't1', topic: 'bench', data: { n: i, t } }))
 */
export async function openLoop(ratePerSec: number, count: number, fire: (i: number, intendedAt: number) => Promise<unknown>): Promise<{ lateMsMax: number }> {
  const interval = 1000 / ratePerSec
  const start = wallNow() + 5
  const pending: Promise<unknown>[] = []
  let failure: unknown
  let lateMsMax = 0
  for (let i = 0; i < count && failure === undefined; ) {
    const now = wallNow()
    const due = start + i * interval
    if (now < due) {
      await sleep(due - now)
      continue
    }
    // Everything due by now goes out at once; each keeps its own intended time.
    while (i < count && start + i * interval <= now) {
      const intendedAt = start + i * interval
      lateMsMax = Math.max(lateMsMax, now - intendedAt)
      pending.push(
        fire(i, intendedAt).catch((err) => {
          failure ??= err
        }),
      )
      i++
    }
  }
  await Promise.all(pending)
  if (failure !== undefined) throw failure
  return { lateMsMax }
}
