/**
 * Cost with growth: the drain (a committed backlog, then a worker timed until the sink has every
 * delivery) at 1, 10 and 100 webhook destinations per event with 1 KB payloads, and at one
 * destination with 64 KB payloads. Each case has a tenant of its own and the same number of
 * deliveries (64 KB: a quarter of them); deliveries/s and CPU µs of this process per delivery show
 * how the cost per delivery grows with fan-out and with size.
 */
import { sleep, wallNow } from '../support/clock.js'
import { cpuMicros, deliveryTimeoutMs, warmUp } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, publishBatches, topic } from '../support/outflow.js'
import { runPool } from '../support/load.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'
import { startSink, type SinkHandle } from '../support/sink-client.js'

/** The cases, as `values` keys: `<key>Rate`, `<key>Cpu`. */
export const growthCases = [
  { key: 'd1k1', destinations: 1, payloadBytes: 1024, share: 1 },
  { key: 'd10k1', destinations: 10, payloadBytes: 1024, share: 1 },
  { key: 'd100k1', destinations: 100, payloadBytes: 1024, share: 1 },
  { key: 'd1k64', destinations: 1, payloadBytes: 64 * 1024, share: 0.25 },
] as const

type GrowthCase = (typeof growthCases)[number]

async function drainCase(ctx: ScenarioContext, sink: SinkHandle, c: GrowthCase): Promise<{ rate: number; cpu: number }> {
  const deliveries = Math.round(ctx.sizes.deliveries * c.share)
  const events = Math.ceil(deliveries / c.destinations)
  const tenant = `growth-${c.key}`
  const pad = 'x'.repeat(c.payloadBytes - 40)
  const publisher = await openOutflow(ctx, { worker: false })
  try {
    await publisher.upsertTenant(tenant, {})
    for (let d = 0; d < c.destinations; d++)
      await publisher.createDestination(tenant, { type: 'webhook', topics: ['*'], config: { url: `${sink.url}/${c.key}/${d}` } })
    await runPool(Math.ceil(events / ctx.sizes.batch), ctx.sizes.publishLanes, async (b) => {
      const from = b * ctx.sizes.batch
      const size = Math.min(ctx.sizes.batch, events - from)
      await publisher.publishMany(Array.from({ length: size }, (_, k) => ({ tenant_id: tenant, topic, data: { n: from + k, pad } })))
    })
  } finally {
    await closeOutflow(publisher)
  }
  await sink.reset()
  const total = events * c.destinations
  const reached = sink.expect(total, deliveryTimeoutMs(total))
  reached.catch(() => {})
  const cpu0 = cpuMicros()
  const t0 = wallNow()
  const outflow = await openOutflow(ctx)
  try {
    const t1 = await reached
    await sleep(200) // the last results are written meanwhile
    const cpu = (cpuMicros() - cpu0) / total
    const rate = total / ((t1 - t0) / 1000)
    log(ctx, `${c.destinations} destination(s), ${c.payloadBytes / 1024} KB: ${total} deliveries at ${rate.toFixed(0)}/s, ${cpu.toFixed(0)} µs CPU each`)
    return { rate, cpu }
  } finally {
    await closeOutflow(outflow)
  }
}

runScenario(async (ctx) => {
  const sink = await startSink()
  try {
    const warm = await openOutflow(ctx)
    try {
      await addWebhook(warm, sink.url)
      await warmUp(sink, { warmup: ctx.sizes.warmup, warmupMs: ctx.sizes.warmupMs, produce: (from, count) => publishBatches(warm, from, count, ctx.sizes.batch) })
    } finally {
      await closeOutflow(warm)
    }
    const values: Record<string, number> = {}
    for (const c of growthCases) {
      const { rate, cpu } = await drainCase(ctx, sink, c)
      values[`${c.key}Rate`] = rate
      values[`${c.key}Cpu`] = cpu
    }
    return { values, notes: [] }
  } finally {
    await sink.close()
  }
})
