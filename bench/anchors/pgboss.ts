/**
 * Anchor: pg-boss 10 on the same Postgres, a worker that POSTs each job to the same sink with
 * fetch. Tuned for throughput the way its docs allow: jobs are enqueued with `insert` in batches,
 * fetched in batches by several loops at once (`loops x batchSize` = the shared concurrency), and
 * completed in one call per batch, not awaited (as pg-boss's own worker does). (`work()` would wait out its polling interval — at least
 * 500 ms — between batches, which caps a worker at batchSize per half second.)
 */
import PgBoss from 'pg-boss'
import { sleep } from '../support/clock.js'
import { measureDelivery, postWithFetch } from '../support/measure.js'
import { log, runScenario } from '../support/scenario.js'
import { startSink } from '../support/sink-client.js'

interface BenchJob {
  id: string
  n: number
}

runScenario(async (ctx) => {
  const { sizes } = ctx
  if (!ctx.pgUrl) throw new Error('the pg-boss anchor needs Postgres')
  const loops = Number(process.env.BENCH_PGBOSS_LOOPS ?? 5)
  const batchSize = Math.max(1, Math.floor(sizes.concurrency / loops))
  const sink = await startSink()
  const boss = new PgBoss({ connectionString: ctx.pgUrl, max: loops + 4, schedule: false, supervise: false })
  boss.on('error', (err) => log(ctx, `pg-boss error: ${err.message}`))
  const queue = `${ctx.prefix}_deliveries`
  let stopping = false
  const settling = new Set<Promise<unknown>>()
  const track = (p: Promise<unknown>) => {
    const settled = p.catch((err: Error) => log(ctx, `pg-boss completion failed: ${err.message}`)).finally(() => settling.delete(settled))
    settling.add(settled)
  }
  const workerLoops: Promise<void>[] = []
  try {
    await boss.start()
    await boss.createQueue(queue)
    const work = async () => {
      while (!stopping) {
        const jobs = await boss.fetch<BenchJob>(queue, { batchSize, priority: false })
        if (jobs.length === 0) {
          await sleep(20)
          continue
        }
        const results = await Promise.allSettled(jobs.map((job) => postWithFetch(sink.url, job.data.id, { n: job.data.n })))
        const done = jobs.filter((_, i) => results[i]!.status === 'fulfilled').map((job) => job.id)
        const failed = jobs.filter((_, i) => results[i]!.status === 'rejected').map((job) => job.id)
        // Like pg-boss's own work() loop: completion is not awaited before the next fetch.
        if (done.length) track(boss.complete(queue, done))
        if (failed.length) track(boss.fail(queue, failed))
      }
    }
    for (let i = 0; i < loops; i++) workerLoops.push(work())

    const produce = async (from: number, count: number) => {
      for (let at = from; at < from + count; at += sizes.batch) {
        const size = Math.min(sizes.batch, from + count - at)
        await boss.insert(Array.from({ length: size }, (_, k) => ({ name: queue, data: { id: `evt_${at + k}`, n: at + k } })))
      }
    }
    const delivery = await measureDelivery(sink, { warmup: sizes.warmup, warmupMs: sizes.warmupMs, n: sizes.deliveries, produce, profile: ctx })
    log(ctx, `${delivery.perSec.toFixed(0)} deliveries/s (${loops} fetch loops x batch ${batchSize})`)
    return {
      values: { deliveriesPerSec: delivery.perSec, seconds: delivery.seconds, cpuUsPerDelivery: delivery.cpuUsPerDelivery, duplicates: delivery.duplicates },
      notes: [`pg-boss: insert() batches of ${sizes.batch}; ${loops} fetch loops x batchSize ${batchSize}, complete() per batch`],
    }
  } finally {
    stopping = true
    await Promise.race([Promise.allSettled([...workerLoops, ...settling]), sleep(5_000)])
    await boss.deleteQueue(queue).catch(() => {})
    await boss.stop({ graceful: false, timeout: 1000, wait: true }).catch(() => {})
    await sink.close()
  }
})
