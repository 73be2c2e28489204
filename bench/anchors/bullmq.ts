/**
 * Anchor: BullMQ on the local Redis, a Worker with the shared concurrency that POSTs each job to
 * the same sink with fetch; jobs are added with `addBulk` in batches. Keys live under a prefix of
 * this run and are removed afterwards.
 */
import { Queue, Worker } from 'bullmq'
import { measureDelivery, postWithFetch } from '../support/measure.js'
import { log, runScenario } from '../support/scenario.js'
import { deleteRedisKeys } from '../support/services.js'
import { startSink } from '../support/sink-client.js'

interface BenchJob {
  id: string
  n: number
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  const u = new URL(ctx.redisUrl)
  const connection = { host: u.hostname, port: Number(u.port || 6379), maxRetriesPerRequest: null }
  const prefix = `${ctx.prefix}_bullmq`
  const name = 'deliveries'
  const sink = await startSink()
  const queue = new Queue<BenchJob>(name, { connection, prefix })
  const worker = new Worker<BenchJob>(name, (job) => postWithFetch(sink.url, job.data.id, { n: job.data.n }), {
    connection,
    prefix,
    concurrency: sizes.concurrency,
  })
  worker.on('error', (err) => log(ctx, `worker error: ${err.message}`))
  try {
    await worker.waitUntilReady()
    const produce = async (from: number, count: number) => {
      for (let at = from; at < from + count; at += sizes.batch) {
        const size = Math.min(sizes.batch, from + count - at)
        await queue.addBulk(Array.from({ length: size }, (_, k) => ({ name: 'delivery', data: { id: `evt_${at + k}`, n: at + k } })))
      }
    }
    const delivery = await measureDelivery(sink, { warmup: sizes.warmup, warmupMs: sizes.warmupMs, n: sizes.deliveries, produce, profile: ctx })
    log(ctx, `${delivery.perSec.toFixed(0)} deliveries/s`)
    return {
      values: { deliveriesPerSec: delivery.perSec, seconds: delivery.seconds, cpuUsPerDelivery: delivery.cpuUsPerDelivery, duplicates: delivery.duplicates },
      notes: [`BullMQ: addBulk() batches of ${sizes.batch}; Worker concurrency ${sizes.concurrency}, default job options`],
    }
  } finally {
    await worker.close(true).catch(() => {})
    await queue.obliterate({ force: true }).catch(() => {})
    await queue.close().catch(() => {})
    await deleteRedisKeys(ctx.redisUrl, prefix).catch(() => {})
    await sink.close()
  }
})
