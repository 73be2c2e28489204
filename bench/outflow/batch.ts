/**
 * Batched delivery to a webhook (docs/delivery.md › Batched delivery), batch 1 against batch 100 in one process:
 * the same end-to-end measurement as the delivery row (publishMany ×100, `publishLanes` in flight, N events to the
 * local sink), first to a webhook without `batch` (one POST per event), then, after the first destination is
 * deleted, to one with `batch: { max_events: 100, max_wait_ms: 20 }` (one CloudEvents batch POST per 100 events,
 * counted by the sink per event id). Deliveries/s and CPU µs of this process per delivery for each.
 */
import type { Outflow } from '../../src/engine.js'
import { measureDelivery } from '../support/measure.js'
import { closeOutflow, openOutflow, publishBatches, tenantId } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'
import { startSink, type SinkHandle } from '../support/sink-client.js'

/** One measurement to a fresh webhook destination with this batch policy (none: one event per request). */
async function measure(ctx: ScenarioContext, outflow: Outflow, sink: SinkHandle, batch: { max_events: number; max_wait_ms: number } | undefined) {
  const { sizes } = ctx
  await sink.reset()
  const destination = await outflow.createDestination(tenantId, { type: 'webhook', topics: ['*'], config: { url: sink.url }, ...(batch ? { batch } : {}) })
  try {
    return await measureDelivery(sink, {
      warmup: sizes.warmup,
      warmupMs: sizes.warmupMs,
      n: sizes.deliveries,
      produce: (from, count) => publishBatches(outflow, from, count, sizes.batch, sizes.publishLanes),
      profile: ctx,
    })
  } finally {
    await outflow.deleteDestination(tenantId, destination.id)
  }
}

runScenario(async (ctx) => {
  const sink = await startSink()
  const outflow = await openOutflow(ctx)
  try {
    await outflow.upsertTenant(tenantId, {})
    const single = await measure(ctx, outflow, sink, undefined)
    log(ctx, `batch 1: ${single.perSec.toFixed(0)} deliveries/s, ${single.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery`)
    // Events of the first measurement are not sent again: their destination is gone. The sink starts afresh.
    const batched = await measure(ctx, outflow, sink, { max_events: 100, max_wait_ms: 20 })
    log(ctx, `batch 100: ${batched.perSec.toFixed(0)} deliveries/s, ${batched.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery`)
    return {
      values: {
        batch1PerSec: single.perSec,
        batch1Cpu: single.cpuUsPerDelivery,
        batch100PerSec: batched.perSec,
        batch100Cpu: batched.cpuUsPerDelivery,
        duplicates: single.duplicates + batched.duplicates,
      },
      notes: [],
    }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
  }
})
