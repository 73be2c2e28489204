/**
 * Pruning throughput: `pruneEvents` delivered events 40 days old (each with its delivery and attempt),
 * then one pass of the engine's pruner with `retention: { events: '30d' }` and its default batches,
 * timed from its start to the last batch: old events deleted per second, and rows (events +
 * deliveries + attempts) per second. The table sets it against the publishMany row.
 */
import { wallNow } from '../support/clock.js'
import { addWebhook, benchRetention, closeOutflow, openOutflow, seedOldEvents } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'

runScenario(async (ctx) => {
  const count = ctx.sizes.pruneEvents
  let outflow = await openOutflow(ctx)
  const { destinationId } = await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
  await closeOutflow(outflow)
  await seedOldEvents(ctx, destinationId, count)

  outflow = await openOutflow(ctx, { worker: false }, { retention: benchRetention })
  try {
    const t0 = wallNow()
    const pruned = await outflow.prune()
    const seconds = (wallNow() - t0) / 1000
    if (pruned.events !== count) throw new Error(`pruned ${pruned.events} of ${count} old events`)
    const rows = pruned.events + pruned.deliveries + pruned.attempts
    log(ctx, `pruned ${pruned.events} events (${rows} rows) in ${seconds.toFixed(1)} s: ${(pruned.events / seconds).toFixed(0)} events/s`)
    return { values: { eventsPerSec: pruned.events / seconds, rowsPerSec: rows / seconds, seconds, events: pruned.events }, notes: [] }
  } finally {
    await closeOutflow(outflow)
  }
})
