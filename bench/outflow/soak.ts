/**
 * Soak (`--soak` only): `soakDeliveries` deliveries end to end to one webhook, published with
 * publishMany while the worker delivers, the publisher holding the backlog under `soakBacklog` so
 * the run measures delivery over time, not a growing queue. Every `soakSampleMs` the window's
 * delivery rate and the process's RSS are recorded; the figures are the whole run's rate, the
 * slowest and fastest window and the last against the first (the warm-up window left out), and the
 * peak RSS (VmHWM).
 */
import { readFileSync } from 'node:fs'
import { sleep, wallNow } from '../support/clock.js'
import { cpuMicros } from '../support/measure.js'
import { addWebhook, closeOutflow, openOutflow, tenantId, topic } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

const peakRssBytes = () => Number(/^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? Number.NaN) * 1024

runScenario(async (ctx) => {
  const { soakDeliveries: total, soakBacklog, soakSampleMs, batch } = ctx.sizes
  const sink = await startSink()
  const outflow = await openOutflow(ctx)
  try {
    await addWebhook(outflow, sink.url)
    let received = 0
    let done = false
    const watcher = (async () => {
      while (!done) {
        received = (await sink.stats()).received
        await sleep(50)
      }
    })()

    const windows: { rate: number; rssMiB: number }[] = []
    let lastCount = 0
    let lastAt = wallNow()
    const sampler = setInterval(() => {
      const now = wallNow()
      windows.push({ rate: ((received - lastCount) * 1000) / (now - lastAt), rssMiB: process.memoryUsage().rss / 2 ** 20 })
      log(ctx, `${received} delivered, ${windows.at(-1)!.rate.toFixed(0)}/s, RSS ${windows.at(-1)!.rssMiB.toFixed(0)} MiB`)
      lastCount = received
      lastAt = now
    }, soakSampleMs)

    const cpu0 = cpuMicros()
    const t0 = wallNow()
    let published = 0
    while (published < total) {
      if (published - received >= soakBacklog) {
        await sleep(5)
        continue
      }
      const size = Math.min(batch, total - published)
      const from = published
      await outflow.publishMany(Array.from({ length: size }, (_, k) => ({ tenant_id: tenantId, topic, data: { n: from + k } })))
      published += size
    }
    while (received < total) await sleep(50)
    const seconds = (wallNow() - t0) / 1000
    const cpuUs = (cpuMicros() - cpu0) / total
    clearInterval(sampler)
    done = true
    await watcher
    const { duplicates } = await sink.stats()
    // The first window is the warm-up (JIT, pools); every recorded window is whole (the sampler stops at the end).
    const rates = windows.slice(1).map((w) => w.rate)
    const values = {
      deliveries: total,
      seconds,
      rate: total / seconds,
      cpuUsPerDelivery: cpuUs,
      minWindowRate: Math.min(...rates),
      maxWindowRate: Math.max(...rates),
      firstWindowRate: rates[0] ?? Number.NaN,
      lastWindowRate: rates.at(-1) ?? Number.NaN,
      peakRss: peakRssBytes(),
      duplicates,
    }
    log(ctx, `${total} deliveries in ${seconds.toFixed(0)} s: ${values.rate.toFixed(0)}/s, windows ${values.minWindowRate.toFixed(0)}–${values.maxWindowRate.toFixed(0)}/s, peak RSS ${(values.peakRss / 2 ** 20).toFixed(0)} MiB`)
    return {
      values,
      notes: [`soak ${ctx.db}: deliveries/s per ${soakSampleMs / 1000} s window (the first is the warm-up): ${windows.map((w) => w.rate.toFixed(0)).join(', ')}; RSS MiB: ${windows.map((w) => w.rssMiB.toFixed(0)).join(', ')}`],
    }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
  }
})
