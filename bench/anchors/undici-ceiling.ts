/**
 * The ceiling: a bare undici request loop, no storage, `concurrency` requests in flight, to the
 * same sink. Also the latency floor: bare POSTs at the latency rows' rate.
 */
import { Agent, request } from 'undici'
import { runPool } from '../support/load.js'
import { measureDelivery, measureLatency } from '../support/measure.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

runScenario(async (ctx) => {
  const { sizes } = ctx
  const sink = await startSink()
  const dispatcher = new Agent({ connections: sizes.concurrency, keepAliveTimeout: 60_000 })
  const post = async (id: string, data: unknown) => {
    const res = await request(sink.url, {
      method: 'POST',
      dispatcher,
      headers: { 'content-type': 'application/json', 'webhook-id': id },
      body: JSON.stringify(data),
    })
    await res.body.dump()
    if (res.statusCode !== 200) throw new Error(`sink answered ${res.statusCode}`)
  }
  try {
    const delivery = await measureDelivery(sink, {
      warmup: sizes.warmup,
      warmupMs: sizes.warmupMs,
      n: sizes.deliveries,
      produce: (from, count) => runPool(count, sizes.concurrency, (i) => post(`evt_${from + i}`, { n: from + i })),
      profile: ctx,
    })
    log(ctx, `${delivery.perSec.toFixed(0)} requests/s`)
    const latency = await measureLatency(sink, {
      rate: sizes.latencyRate,
      count: sizes.latencyEvents,
      drainMs: sizes.latencyDrainMs,
      fire: (i, t) => post(`lat_${i}`, { n: i, t }),
    })
    return {
      values: {
        cpuUsPerDelivery: delivery.cpuUsPerDelivery,
        deliveriesPerSec: delivery.perSec,
        seconds: delivery.seconds,
        duplicates: delivery.duplicates,
        latencyP50: latency.p50,
        latencyP99: latency.p99,
        latencyLost: latency.lost,
      },
      notes: [],
    }
  } finally {
    await dispatcher.close()
    await sink.close()
  }
})
