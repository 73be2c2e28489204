/**
 * Outflow delivery end to end: N events published with publishMany (batches of 100,
 * `publishLanes` batches in flight, so publishing is not the limit) to one webhook destination
 * on the local sink; deliveries/s from the first publish until the sink has every event, and CPU
 * µs of this process (publishing and delivering; the sink is another process) per delivery.
 */
import { measureDelivery } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, publishBatches } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

runScenario(async (ctx) => {
  const { sizes } = ctx
  const sink = await startSink()
  const outflow = await openOutflow(ctx)
  try {
    await addWebhook(outflow, sink.url)
    const delivery = await measureDelivery(sink, {
      warmup: sizes.warmup,
      warmupMs: sizes.warmupMs,
      n: sizes.deliveries,
      produce: (from, count) => publishBatches(outflow, from, count, sizes.batch, sizes.publishLanes),
      profile: ctx,
    })
    log(ctx, `${delivery.perSec.toFixed(0)} deliveries/s, ${delivery.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery, publishing took ${delivery.produceSeconds.toFixed(2)} of ${delivery.seconds.toFixed(2)} s`)
    return {
      values: { deliveriesPerSec: delivery.perSec, seconds: delivery.seconds, produceSeconds: delivery.produceSeconds, cpuUsPerDelivery: delivery.cpuUsPerDelivery, duplicates: delivery.duplicates },
      notes: delivery.produceSeconds > 0.9 * delivery.seconds ? [`publishing took ${delivery.produceSeconds.toFixed(2)} of ${delivery.seconds.toFixed(2)} s, so it may have limited the rate`] : [],
    }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
  }
})
