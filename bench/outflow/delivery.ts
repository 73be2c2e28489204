/**
 * Outflow delivery throughput: N events published with publishMany (batches of 100) to one
 * webhook destination on the local sink; deliveries/s from the first publish until the sink has
 * every event, on the scenario's database.
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
      produce: (from, count) => publishBatches(outflow, from, count, sizes.batch),
    })
    log(ctx, `${delivery.perSec.toFixed(0)} deliveries/s, publishing took ${delivery.produceSeconds.toFixed(2)} of ${delivery.seconds.toFixed(2)} s`)
    return {
      values: { deliveriesPerSec: delivery.perSec, seconds: delivery.seconds, produceSeconds: delivery.produceSeconds, duplicates: delivery.duplicates },
      notes: [],
    }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
  }
})
