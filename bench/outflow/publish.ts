/**
 * Publish throughput, events/s committed: single `publish()` calls from `concurrency` callers,
 * then `publishMany` batches one after another. The tenant has one webhook destination, so every
 * event also writes its delivery row. The delivery worker is off (`delivery.worker: false`) so
 * the figure is the publish path alone, as the bare INSERT anchor's is. CPU µs of this process per
 * event beside each (on Postgres the database server's CPU is another process's).
 */
import { wallNow } from '../support/clock.js'
import { runPool } from '../support/load.js'
import { cpuMicros } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, publishBatches, tenantId, topic } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'

runScenario(async (ctx) => {
  const { sizes } = ctx
  const outflow = await openOutflow(ctx, { worker: false })
  try {
    await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
    const single = (n: number) => outflow.publish({ tenant_id: tenantId, topic, data: { n } })
    // Warm-up: JIT, statement caches, connection pool.
    await runPool(Math.min(500, sizes.publishSingle / 4), sizes.concurrency, (i) => single(-1 - i))
    await publishBatches(outflow, 10_000_000, 10 * sizes.batch, sizes.batch)

    let t0 = wallNow()
    let cpu0 = cpuMicros()
    await runPool(sizes.publishSingle, sizes.concurrency, (i) => single(i))
    const singlePerSec = sizes.publishSingle / ((wallNow() - t0) / 1000)
    const singleCpuUs = (cpuMicros() - cpu0) / sizes.publishSingle
    t0 = wallNow()
    cpu0 = cpuMicros()
    await publishBatches(outflow, 20_000_000, sizes.publishMany, sizes.batch)
    const manyPerSec = sizes.publishMany / ((wallNow() - t0) / 1000)
    const manyCpuUs = (cpuMicros() - cpu0) / sizes.publishMany
    log(ctx, `single ${singlePerSec.toFixed(0)}/s (${singleCpuUs.toFixed(0)} µs CPU each), publishMany ${manyPerSec.toFixed(0)}/s (${manyCpuUs.toFixed(0)} µs CPU each)`)
    return { values: { singlePerSec, manyPerSec, singleCpuUs, manyCpuUs }, notes: [] }
  } finally {
    await closeOutflow(outflow)
  }
})
