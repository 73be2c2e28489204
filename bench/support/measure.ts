import { sleep, wallNow } from './clock.js'
import { diskFigures, watchDisk, type DiskFigures } from './disk.js'
import { openLoop } from './load.js'
import { profileWindow } from './profile.js'
import type { ScenarioContext } from './scenario.js'
import type { SinkHandle } from './sink-client.js'
import { summarize, type LatencySummary } from './stats.js'

/** Publishes events [from, from + count) into the system under test (it may return before they are delivered). */
export type Produce = (from: number, count: number) => Promise<void>

export interface DeliveryFigures {
  perSec: number
  seconds: number
  /** How long producing (publishing/enqueuing) all events took, inside `seconds`. */
  produceSeconds: number
  duplicates: number
  /** Events of the warm-up. */
  warmed: number
  /** CPU time (user + system) of this process per delivery, µs, from the first event produced until 200 ms after the last was received. */
  cpuUsPerDelivery: number
}

/**
 * CPU time (user + system) this process has used so far, µs. Every thread of the process counts
 * (libuv's pool, V8's GC helpers); a child process such as the sink does not.
 *
 * @example
 * const c0 = cpuMicros(); await work(); const perItem = (cpuMicros() - c0) / n
 */
export function cpuMicros(): number {
  const { user, system } = process.cpuUsage()
  return user + system
}

/** How long to wait for n deliveries before calling the system stuck (25 ms each, at least 30 s). */
export function deliveryTimeoutMs(n: number): number {
  return Math.max(30_000, n * 25)
}

/**
 * Deliveries per second end to end: from the first event produced until the sink has received
 * `n` distinct ids. A warm-up runs first and is not counted: at least `warmup` events and at
 * least `warmupMs` of traffic (JIT, connection pools, caches), so a fast system is measured warm
 * too, not only a slow one. With `profile` (the scenario's context, under `--cpu-prof`) the
 * measured window is also profiled on its own.
 *
 * @example
 * const f = await measureDelivery(sink, { warmup: 1000, warmupMs: 1500, n: 5000, produce: (from, count) => publishBatches(from, count) })
 */
export async function measureDelivery(
  sink: SinkHandle,
  options: { warmup: number; warmupMs: number; n: number; produce: Produce; profile?: ScenarioContext },
): Promise<DeliveryFigures> {
  const { n, produce } = options
  const warmed = await warmUp(sink, options)
  const reached = sink.expect(n, deliveryTimeoutMs(n))
  reached.catch(() => {})
  const stopProfile = options.profile ? await profileWindow(options.profile) : async () => {}
  const cpu0 = cpuMicros()
  const t0 = wallNow()
  await produce(warmed, n)
  const produced = wallNow()
  const t1 = await reached
  await sleep(200) // a late duplicate would arrive about now; the last results are written meanwhile
  const cpuUs = cpuMicros() - cpu0
  await stopProfile()
  const { duplicates } = await sink.stats()
  const seconds = (t1 - t0) / 1000
  return { perSec: n / seconds, seconds, produceSeconds: (produced - t0) / 1000, duplicates, warmed, cpuUsPerDelivery: cpuUs / n }
}

/** Deliveries/s, CPU per delivery and the time producing took, of one measurement without a sink process. */
export interface HeldFigures {
  perSec: number
  cpuUsPerDelivery: number
  produceSeconds: number
  seconds: number
}

/**
 * Deliveries per second to an in-process receiver (a wire-level fake) that counts what it holds: `warmup` events
 * first, not counted, then `deliveries` events, the clock stopping when `held()` reaches them all (polled every
 * 2 ms). `name` is the receiver's, for the error when it does not get there in time.
 *
 * @example
 * const f = await measureHeld({ warmup: 500, deliveries: 5000 }, 'cloudx_sqs', () => sqs.messages.length, (from, count) => publishBatches(outflow, from, count, 100, 4))
 */
export async function measureHeld(sizes: { warmup: number; deliveries: number }, name: string, held: () => number, produce: Produce): Promise<HeldFigures> {
  const holding = async (count: number, timeoutMs: number): Promise<number> => {
    const deadline = wallNow() + timeoutMs
    while (held() < count) {
      if (wallNow() > deadline) throw new Error(`${name}: ${held()} of ${count} held after ${timeoutMs} ms`)
      await sleep(2)
    }
    return wallNow()
  }
  await produce(0, sizes.warmup)
  await holding(sizes.warmup, deliveryTimeoutMs(sizes.warmup))
  await sleep(300)
  const cpu0 = cpuMicros()
  const t0 = wallNow()
  const reached = holding(sizes.warmup + sizes.deliveries, deliveryTimeoutMs(sizes.deliveries))
  reached.catch(() => {})
  await produce(sizes.warmup, sizes.deliveries)
  const produced = wallNow()
  const t1 = await reached
  const cpuUs = cpuMicros() - cpu0
  const seconds = (t1 - t0) / 1000
  return { perSec: sizes.deliveries / seconds, cpuUsPerDelivery: cpuUs / sizes.deliveries, produceSeconds: (produced - t0) / 1000, seconds }
}

/**
 * The warm-up before a delivery measurement, not counted: at least `warmup` events and at least
 * `warmupMs` of traffic, each round produced and received before the next. Resets the sink after
 * it; resolves with the number of events produced (the next free index).
 *
 * @example
 * const from = await warmUp(sink, { warmup: 1000, warmupMs: 1500, produce })
 */
export async function warmUp(sink: SinkHandle, options: { warmup: number; warmupMs: number; produce: Produce }): Promise<number> {
  const { warmup, warmupMs, produce } = options
  const warmStart = wallNow()
  let warmed = 0
  while (warmed < warmup || (warmed > 0 && wallNow() - warmStart < warmupMs && warmed < 100 * warmup)) {
    const count = Math.max(100, Math.min(warmup, Math.round(warmup / 4)))
    await produce(warmed, count)
    warmed += count
    await sink.expect(warmed, deliveryTimeoutMs(count))
  }
  if (warmed > 0) await sleep(300) // let the warm-up's bookkeeping (attempt writes, completions) finish
  await sink.reset()
  return warmed
}

export interface LatencyFigures extends LatencySummary {
  /** Events not received within the wait after the last publish. */
  lost: number
  duplicates: number
  /** Rate at which the publish calls completed (the offered rate when the system keeps up). */
  publishedPerSec: number
  /** Rate at which the sink received them while the load ran. */
  deliveredPerSec: number
  /** The disk's stalls meanwhile (see disk.ts). */
  disk: DiskFigures
}

/**
 * Publish-to-receive latency: `fire(i, t)` must publish an event whose JSON data carries `t`
 * (the wall-clock time it was due), at `rate` per second for `count` events; the sink records
 * receive - t.
 */
export async function measureLatency(
  sink: SinkHandle,
  options: { rate: number; count: number; drainMs: number; fire: (i: number, intendedAt: number) => Promise<unknown> },
): Promise<LatencyFigures> {
  await sink.reset()
  const disk = watchDisk()
  let first = Number.NaN
  let last = Number.NaN
  await openLoop(options.rate, options.count, async (i, t) => {
    if (i === 0) first = t
    await options.fire(i, t)
    last = Math.max(Number.isNaN(last) ? 0 : last, wallNow())
  })
  // Below the offered rate while the load ran, the system fell behind and latency grew through the run.
  const publishedPerSec = options.count / ((last - first) / 1000)
  const deliveredPerSec = (await sink.stats()).received / ((wallNow() - first) / 1000)
  await sink.expect(options.count, options.drainMs).catch(() => {})
  const stalls = await disk.stop()
  const stats = await sink.stats({ latencies: true })
  const latencies = stats.latencies ?? []
  const samples = latencies.map((latency, i): [number, number] => [stats.dues![i]!, latency])
  return { ...summarize(latencies), lost: options.count - stats.received, duplicates: stats.duplicates, publishedPerSec, deliveredPerSec, disk: diskFigures(stalls, samples) }
}

/**
 * POST one event to the sink with the global fetch, as the pg-boss and BullMQ workers do.
 * The body is the event data, as an Outflow webhook's is.
 */
export async function postWithFetch(url: string, id: string, data: unknown): Promise<void> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'webhook-id': id },
    body: JSON.stringify(data),
  })
  await res.arrayBuffer()
  if (!res.ok) throw new Error(`sink answered ${res.status}`)
}
