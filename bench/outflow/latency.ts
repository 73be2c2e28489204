/**
 * Publish-to-receive latency at a steady rate: single `publish()` calls fired on an open-loop
 * schedule (`latencyRate` per second), each carrying its due time `t` in its data; the sink
 * records receive - t. One webhook destination, default engine settings besides concurrency.
 */
import { runPool } from '../support/load.js'
import { deliveryTimeoutMs, measureLatency } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, tenantId, topic } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

runScenario(async (ctx) => {
  const { sizes } = ctx
  const sink = await startSink()
  const outflow = await openOutflow(ctx)
  try {
    await addWebhook(outflow, sink.url)
    const warmup = Math.min(500, sizes.latencyEvents / 5)
    await runPool(warmup, 10, (i) => outflow.publish({ tenant_id: tenantId, topic, data: { n: -1 - i } }))
    await sink.expect(warmup, deliveryTimeoutMs(warmup))
    const latency = await measureLatency(sink, {
      rate: sizes.latencyRate,
      count: sizes.latencyEvents,
      drainMs: sizes.latencyDrainMs,
      fire: (i, t) => outflow.publish({ tenant_id: tenantId, topic, data: { n: i, t } }),
    })
    log(ctx, `p50 ${latency.p50.toFixed(2)} ms, p99 ${latency.p99.toFixed(2)} ms, max ${latency.max.toFixed(1)} ms, lost ${latency.lost}`)
    const notes = [
      ...(Math.min(latency.publishedPerSec, latency.deliveredPerSec) < 0.95 * sizes.latencyRate
        ? [
            `fell behind the offered ${sizes.latencyRate}/s while publishing (publish() calls completed at ${latency.publishedPerSec.toFixed(0)}/s, the sink received ${latency.deliveredPerSec.toFixed(0)}/s meanwhile), so latency grew through the run`,
          ]
        : []),
      ...(latency.lost ? [`${latency.lost} of ${sizes.latencyEvents} events not received within ${sizes.latencyDrainMs / 1000} s of the last publish (excluded from p50/p99)`] : []),
    ]
    return { values: { p50: latency.p50, p99: latency.p99, max: latency.max, lost: latency.lost, publishedPerSec: latency.publishedPerSec, deliveredPerSec: latency.deliveredPerSec, duplicates: latency.duplicates }, notes }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
  }
})
