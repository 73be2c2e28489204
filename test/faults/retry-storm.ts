// Fault scenario 6, the retry storm: a burst of deliveries (published through an API-only engine before
// the workers start: all due at once) to one receiver that answers 503 (with Retry-After) for a
// while, then 200. Every delivery fails at about the same moment; the retries must
// not all come back at the same moment, no delivery may be completed twice, and every request the
// receiver saw must be a recorded attempt. Engines are processes (test/faults/engine-process.ts).
import { setTimeout as sleep } from 'node:timers/promises'
import { startReceiver, waitFor } from '../support/receiver.js'
import { api, engineErrors, startEngine, startEngines, stopEngines, type EngineOptions, type EngineProcess } from './engine-process.js'
import { byId, unrecorded, type ScenarioTarget } from './scenarios.js'

export interface StormOptions {
  name: string
  /** Events published (one delivery each). */
  deliveries: number
  /**
   * The receiver answers 503 until this long after its first request, ms, and to every event's first
   * request (so every delivery fails once, however slowly a loaded machine starts the workers).
   */
  outageMs: number
  /** Its 503s carry `Retry-After: <seconds>`. */
  retryAfterS: number
  /** Worker engines, started once the burst is published. */
  engines: number
  engine: EngineOptions
  /** Publish requests in flight at once. */
  publishConcurrency: number
  drainMs: number
}

export interface StormResult {
  scenario: string
  published: number
  /** Events the receiver answered 200 for. */
  delivered: number
  lost: number
  /** Events answered 200 more than once. */
  duplicates: number
  /** Requests the receiver got, and attempt rows recorded: equal when no attempt was lost. */
  requests: number
  attempts: number
  /** Events whose requests at the receiver and recorded attempts differ in number. */
  mismatched: number
  unrecorded: number
  /** Retry delays the engines scheduled after the first failures (next_attempt_at − last attempt), ms. */
  delays: number[]
  /** Retries per second at the receiver: the busiest second of the wave, and the mean over it. */
  peakRate: number
  meanRate: number
  /** From the end of the outage to the last event answered 200, ms. */
  recoverMs: number
  engineErrors: string[]
}

export async function runRetryStorm(target: ScenarioTarget, options: StormOptions): Promise<StormResult> {
  let outageEnds = Infinity
  const refused = new Set<string>()
  const ok = new Map<string, number>()
  const receiver = await startReceiver((r) => {
    const id = String(r.headers['webhook-id'])
    if (outageEnds === Infinity) outageEnds = Date.now() + options.outageMs
    const first = !refused.has(id) && !ok.has(id)
    if (Date.now() < outageEnds || first) {
      refused.add(id)
      // The outage lasts until every event met it (a first request after the window extends it).
      if (first) outageEnds = Math.max(outageEnds, Date.now())
      return { status: 503, headers: { 'retry-after': String(options.retryAfterS) } }
    }
    ok.set(id, (ok.get(id) ?? 0) + 1)
    return { status: 200 }
  })
  const engines: EngineProcess[] = []
  try {
    // The burst is published through an API-only engine and waits until the workers start: all due at once.
    const front = await startEngine(target.url, { ...options.engine, worker: false })
    engines.push(front)
    await api(front.port, 'PUT', '/tenants/acme', {})
    await api(front.port, 'POST', '/tenants/acme/destinations', { id: 'hook', type: 'webhook', topics: '*', config: { url: `${receiver.url}/hook` } })

    const ids = Array.from({ length: options.deliveries }, (_, i) => `e${i}`)
    let next = 0
    const publisher = async (p: number) => {
      while (next < ids.length) {
        const id = ids[next++]!
        // Every publish must be acknowledged (no fault on the database here).
        await api(front.port, 'POST', '/publish', { id, tenant_id: 'acme', topic: 'order.created', data: { id } })
      }
    }
    await Promise.all(Array.from({ length: options.publishConcurrency }, (_, p) => publisher(p)))
    engines.push(...(await startEngines(target.url, options.engines, { autoDisable: false, ...options.engine })))

    // The scheduled retries, read before they fall due (all but the slowest deliveries are still waiting).
    await waitFor(async () => Number((await target.query<{ n: number }>(`select count(distinct event_id) as n from attempts`))[0]!.n) >= ids.length, options.drainMs, 'the first attempts recorded')
    const scheduled = await target.query<{ last: Date | number; next: Date | number }>(
      `select last_attempt_at as last, next_attempt_at as next from deliveries where status = 'pending' and attempt_count = 1`,
    )
    const delays = scheduled.map((r) => time(r.next) - time(r.last))

    await waitFor(() => ids.every((id) => ok.has(id)), options.drainMs, 'every event answered 200').catch(() => undefined)
    let left = -1
    await waitFor(async () => (left = await unrecorded(target)) === 0, 10_000, 'every delivery recorded').catch(() => undefined)
    await sleep(500) // stragglers
    return { scenario: options.name, ...(await tally(target, receiver.on('/hook'), ids, ok, outageEnds)), unrecorded: left, delays, engineErrors: engineErrors(engines) }
  } finally {
    await stopEngines(engines)
    await receiver.close()
  }
}

/** A timestamp column as ms: postgres.js gives a Date, SQLite the stored integer. */
function time(value: Date | number): number {
  return typeof value === 'number' ? value : value.getTime()
}

async function tally(target: ScenarioTarget, received: { headers: Record<string, unknown>; at: number }[], ids: string[], ok: Map<string, number>, outageEnds: number) {
  const attemptRows = await target.query<{ event_id: string; n: number | string }>(`select event_id, count(*) as n from attempts group by event_id`)
  const recorded = new Map(attemptRows.map((r) => [r.event_id, Number(r.n)]))
  const requests = byId(received)
  const mismatched = ids.filter((id) => (requests.get(id)?.length ?? 0) !== (recorded.get(id) ?? 0)).length
  // The wave: the retries (every request after an event's first), per second.
  const wave = [...requests.values()].flatMap((at) => at.slice(1))
  const start = Math.min(...wave)
  const perSecond = new Map<number, number>()
  for (const at of wave) perSecond.set(Math.floor((at - start) / 1000), (perSecond.get(Math.floor((at - start) / 1000)) ?? 0) + 1)
  const span = wave.length ? Math.max(1, (Math.max(...wave) - start) / 1000) : 1
  return {
    published: ids.length,
    delivered: ids.filter((id) => ok.has(id)).length,
    lost: ids.filter((id) => !ok.has(id)).length,
    duplicates: [...ok.values()].filter((n) => n > 1).length,
    requests: received.length,
    attempts: [...recorded.values()].reduce((a, b) => a + b, 0),
    mismatched,
    peakRate: Math.max(0, ...perSecond.values()),
    meanRate: wave.length / span,
    recoverMs: Math.max(0, ...[...requests.values()].map((at) => at.at(-1)!)) - outageEnds,
  }
}
