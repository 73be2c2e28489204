/**
 * Drain: how fast the delivery worker empties a backlog, with publishing out of the picture. N
 * events are published (publishMany ×100) with the worker off, so N pending deliveries are
 * committed before any worker runs; then an engine with its worker on is opened and timed until
 * the sink has every event. Deliveries/s and CPU µs of this process per delivery (the engine's
 * start, its claims, attempts and result writes; the sink is another process) over that window.
 *
 * A warm-up first delivers events end to end through an engine of the same code, closed before
 * the backlog is published, so the measured engine runs JIT-compiled code.
 */
import { sleep, wallNow } from '../support/clock.js'
import { cpuMicros, deliveryTimeoutMs, warmUp } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, publishBatches } from '../support/outflow.js'
import { profileWindow } from '../support/profile.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

runScenario(async (ctx) => {
  const { sizes } = ctx
  const n = sizes.deliveries
  const sink = await startSink()
  try {
    const warm = await openOutflow(ctx)
    try {
      await addWebhook(warm, sink.url)
      await warmUp(sink, { warmup: sizes.warmup, warmupMs: sizes.warmupMs, produce: (from, count) => publishBatches(warm, from, count, sizes.batch) })
    } finally {
      await closeOutflow(warm)
    }

    const publisher = await openOutflow(ctx, { worker: false })
    const published = wallNow()
    try {
      await publishBatches(publisher, 10_000_000, n, sizes.batch, sizes.publishLanes)
    } finally {
      await closeOutflow(publisher)
    }
    log(ctx, `${n} pending deliveries committed in ${((wallNow() - published) / 1000).toFixed(2)} s, worker off`)
    await sink.reset()

    const reached = sink.expect(n, deliveryTimeoutMs(n))
    reached.catch(() => {})
    const stopProfile = await profileWindow(ctx)
    const cpu0 = cpuMicros()
    const t0 = wallNow()
    const outflow = await openOutflow(ctx)
    try {
      const startCpuMs = (cpuMicros() - cpu0) / 1000
      const t1 = await reached
      await sleep(200) // a late duplicate would arrive about now; the last results are written meanwhile
      const cpuUsPerDelivery = (cpuMicros() - cpu0) / n
      await stopProfile()
      const { duplicates } = await sink.stats()
      const seconds = (t1 - t0) / 1000
      const perSec = n / seconds
      log(ctx, `${perSec.toFixed(0)} deliveries/s, ${cpuUsPerDelivery.toFixed(0)} µs CPU per delivery (engine start ${startCpuMs.toFixed(0)} ms of it)`)
      return {
        values: { deliveriesPerSec: perSec, seconds, cpuUsPerDelivery, startCpuMs, duplicates },
        notes: [`engine start (opening storage, migrations check, first claim) took ${startCpuMs.toFixed(0)} ms of CPU, counted in the drain's CPU per delivery`],
      }
    } finally {
      await closeOutflow(outflow)
    }
  } finally {
    await sink.close()
  }
})
