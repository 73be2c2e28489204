/**
 * Batched delivery to a webhook and to SQS (docs/delivery.md › Batched delivery), batch 1 against batch 100 in one
 * process:
 * the same end-to-end measurement as the delivery row (publishMany ×100, `publishLanes` in flight, N events to the
 * local sink), first to a webhook without `batch` (one POST per event), then, after the first destination is
 * deleted, to one with `batch: { max_events: 100, max_wait_ms: 20 }` (one CloudEvents batch POST per 100 events,
 * counted by the sink per event id). Then the same pair to a cloudx_sqs destination whose queue is the suite's
 * wire-level fake SQS in this process (SigV4 checked; SendMessage per event, or SendMessageBatch calls of 10 for
 * batch 100): its CPU per delivery includes the fake's own work. Deliveries/s and CPU µs of this process per
 * delivery for each.
 */
import type { Outflow } from '../../src/engine.js'
import { startFakeSqs, type FakeSqs } from '../../test/fakes/sqs-server.js'
import { measureDelivery, measureHeld } from '../support/measure.js'
import { closeOutflow, openOutflow, publishBatches, tenantId } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'
import { startSink, type SinkHandle } from '../support/sink-client.js'

/** One measurement to a fresh webhook destination with this batch policy (none: one event per request). */
async function measure(ctx: ScenarioContext, outflow: Outflow, sink: SinkHandle, batch: { max_events: number; max_wait_ms: number } | undefined) {
  const { sizes } = ctx
  await sink.reset()
  const destination = await outflow.createDestination(tenantId, { type: 'webhook', topics: ['*'], config: { url: sink.url }, ...(batch ? { batch } : {}) })
  try {
    return await measureDelivery(sink, {
      warmup: sizes.warmup,
      warmupMs: sizes.warmupMs,
      n: sizes.deliveries,
      produce: (from, count) => publishBatches(outflow, from, count, sizes.batch, sizes.publishLanes),
      profile: ctx,
    })
  } finally {
    await outflow.deleteDestination(tenantId, destination.id)
  }
}

const sqsKeys = { key: 'AKIABENCHSQSBATCH000', secret: 'bench-sqs-batch-secret-0123456789abcdef' }

/** One measurement to a fresh cloudx_sqs destination on its own fake queue, warm-up first (not counted). */
async function measureSqs(ctx: ScenarioContext, outflow: Outflow, batch: { max_events: number; max_wait_ms: number } | undefined) {
  const { sizes } = ctx
  const sqs = await startFakeSqs({ accessKeyId: sqsKeys.key, secretAccessKey: sqsKeys.secret, queues: ['bench'] })
  const destination = await outflow.createDestination(tenantId, {
    type: 'cloudx_sqs',
    topics: ['*'],
    config: { queue_url: sqs.queueUrl('bench'), endpoint: sqs.endpoint, region: 'us-east-1' },
    credentials: sqsKeys,
    ...(batch ? { batch } : {}),
  })
  try {
    const publish = (from: number, count: number) => publishBatches(outflow, from, count, sizes.batch, sizes.publishLanes)
    const { perSec, cpuUsPerDelivery } = await measureHeld(sizes, 'cloudx_sqs', () => sqs.messages.length, publish)
    return { perSec, cpuUsPerDelivery, calls: sqs.calls.length }
  } finally {
    await outflow.deleteDestination(tenantId, destination.id)
    await sqs.close()
  }
}

runScenario(async (ctx) => {
  const sink = await startSink()
  const outflow = await openOutflow(ctx)
  try {
    await outflow.upsertTenant(tenantId, {})
    const single = await measure(ctx, outflow, sink, undefined)
    log(ctx, `batch 1: ${single.perSec.toFixed(0)} deliveries/s, ${single.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery`)
    // Events of the first measurement are not sent again: their destination is gone. The sink starts afresh.
    const batched = await measure(ctx, outflow, sink, { max_events: 100, max_wait_ms: 20 })
    log(ctx, `batch 100: ${batched.perSec.toFixed(0)} deliveries/s, ${batched.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery`)
    const sqsSingle = await measureSqs(ctx, outflow, undefined)
    log(ctx, `cloudx_sqs batch 1: ${sqsSingle.perSec.toFixed(0)} deliveries/s, ${sqsSingle.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery (fake included), ${sqsSingle.calls} calls`)
    const sqsBatched = await measureSqs(ctx, outflow, { max_events: 100, max_wait_ms: 20 })
    log(ctx, `cloudx_sqs batch 100: ${sqsBatched.perSec.toFixed(0)} deliveries/s, ${sqsBatched.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery (fake included), ${sqsBatched.calls} calls`)
    return {
      values: {
        batch1PerSec: single.perSec,
        batch1Cpu: single.cpuUsPerDelivery,
        batch100PerSec: batched.perSec,
        batch100Cpu: batched.cpuUsPerDelivery,
        sqsBatch1PerSec: sqsSingle.perSec,
        sqsBatch1Cpu: sqsSingle.cpuUsPerDelivery,
        sqsBatch100PerSec: sqsBatched.perSec,
        sqsBatch100Cpu: sqsBatched.cpuUsPerDelivery,
        duplicates: single.duplicates + batched.duplicates,
      },
      notes: ['cloudx_sqs: the queue is the wire-level fake SQS (test/fakes) in this process, not AWS; its CPU is included'],
    }
  } finally {
    await closeOutflow(outflow)
    await sink.close()
  }
})
