/**
 * Publish-to-receive latency at a steady rate: single `publish()` calls fired on an open-loop
 * schedule (`latencyRate` per second), each carrying its due time `t` in its data; the sink
 * records receive - t. One webhook destination, default engine settings besides concurrency.
 *
 * As `latency-prune`, the same measurement runs while the engine's pruner works through
 * `pruneEvents` old delivered events (`retention: { events: '30d' }`, default batches): the pass
 * starts with the engine and must still be running when the last event is published.
 *
 * As `latency-replay`, it runs while a replay job re-sends `replayEvents` delivered events of a second
 * destination (its own sink): the job starts before the warm-up and must still be running when the last
 * event is published, so every measured publish competed with it. `latency-seeded` is the same without
 * the job (the second destination and its stored log only): the replay row's anchor.
 */
import { wallNow } from '../support/clock.js'
import { diskNote } from '../support/disk.js'
import { runPool } from '../support/load.js'
import { deliveryTimeoutMs, measureLatency } from '../support/measure.js'
import { addWebhook, benchRetention, closeOutflow, openOutflow, seedOldEvents, tenantId, topic } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'
import { summarize } from '../support/stats.js'
import { startSink } from '../support/sink-client.js'

runScenario(async (ctx) => {
  const { sizes } = ctx
  const pruning = ctx.name === 'latency-prune'
  const replaying = ctx.name === 'latency-replay'
  const seeded = replaying || ctx.name === 'latency-seeded'
  const sink = await startSink()
  const replaySink = seeded ? await startSink() : undefined
  let outflow = await openOutflow(ctx)
  try {
    await addWebhook(outflow, sink.url)
    let pass: { done?: number; pruned?: number } = {}
    if (pruning) {
      const destinationId = (await outflow.listDestinations(tenantId))[0]!.id
      await closeOutflow(outflow)
      await seedOldEvents(ctx, destinationId, sizes.pruneEvents)
      outflow = await openOutflow(ctx, {}, { retention: benchRetention })
      // The pass began with the engine; prune() joins it.
      void outflow.prune().then((r) => (pass = { done: wallNow(), pruned: r.events }))
    }
    let replay: { destinationId: string; id: string } | undefined
    if (seeded) {
      // A second destination that live events do not match, with a log of delivered events to send again.
      const { id: destinationId } = await outflow.createDestination(tenantId, { type: 'webhook', topics: ['replay.none'], config: { url: replaySink!.url } })
      await closeOutflow(outflow)
      await seedOldEvents(ctx, destinationId, sizes.replayEvents)
      outflow = await openOutflow(ctx)
      if (replaying) replay = { destinationId, id: (await outflow.replayDestination(tenantId, destinationId, { since: '2000-01-01T00:00:00Z', status: 'success' })).id }
    }
    const warmup = Math.min(500, sizes.latencyEvents / 5)
    await runPool(warmup, 10, (i) => outflow.publish({ tenant_id: tenantId, topic, data: { n: -1 - i } }))
    await sink.expect(warmup, deliveryTimeoutMs(warmup))
    const measured = wallNow()
    // How long publish() took to answer (its commit), from when it was due: the part of the latency before delivery.
    const answered: number[] = []
    const latency = await measureLatency(sink, {
      rate: sizes.latencyRate,
      count: sizes.latencyEvents,
      drainMs: sizes.latencyDrainMs,
      fire: async (i, t) => {
        await outflow.publish({ tenant_id: tenantId, topic, data: { n: i, t } })
        answered.push(wallNow() - t)
      },
    })
    const publishAnswered = summarize(answered)
    const lastPublish = measured + ((sizes.latencyEvents / sizes.latencyRate) * 1000)
    const job = replay ? await outflow.getReplay(tenantId, replay.destinationId, replay.id) : undefined
    if (job) log(ctx, `replay: ${job.done} of ${job.matched} re-sent by the end of the measurement (${job.status})`)
    log(
      ctx,
      `p50 ${latency.p50.toFixed(2)} ms, p99 ${latency.p99.toFixed(2)} ms, max ${latency.max.toFixed(1)} ms, lost ${latency.lost}; ` +
        `publish() answered p50 ${publishAnswered.p50.toFixed(2)} ms, p99 ${publishAnswered.p99.toFixed(2)} ms`,
    )
    const notes = [
      diskNote(latency.disk),
      ...(Math.min(latency.publishedPerSec, latency.deliveredPerSec) < 0.95 * sizes.latencyRate
        ? [
            `fell behind the offered ${sizes.latencyRate}/s while publishing (publish() calls completed at ${latency.publishedPerSec.toFixed(0)}/s, the sink received ${latency.deliveredPerSec.toFixed(0)}/s meanwhile), so latency grew through the run`,
          ]
        : []),
      ...(latency.lost ? [`${latency.lost} of ${sizes.latencyEvents} events not received within ${sizes.latencyDrainMs / 1000} s of the last publish (excluded from p50/p99)`] : []),
      ...(job && job.status !== 'running'
        ? [`the replay ended before the measurement did (${job.done} of ${job.matched} re-sent): part of the run had no replay`]
        : []),
      ...(job ? [`the replay re-sent ${job.done} of ${job.matched} events during the run (${(job.done / ((wallNow() - measured) / 1000)).toFixed(0)}/s)`] : []),
      ...(pruning && pass.done !== undefined && pass.done < lastPublish
        ? [`the pruning pass ended ${((lastPublish - pass.done) / 1000).toFixed(1)} s before the last publish (it pruned ${pass.pruned} events): part of the run had no pruning`]
        : []),
    ]
    return { values: { p50: latency.p50, p99: latency.p99, max: latency.max, p99Outside: latency.disk.p99Outside, diskStalledMs: latency.disk.stalledMs, lost: latency.lost, publishedPerSec: latency.publishedPerSec, deliveredPerSec: latency.deliveredPerSec, duplicates: latency.duplicates, pruneRunning: pruning ? Number(pass.done === undefined || pass.done >= lastPublish) : Number.NaN, replayed: job ? job.done : Number.NaN }, notes }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
    await replaySink?.close()
  }
})
