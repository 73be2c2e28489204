/**
 * Outflow delivery end to end to the kafka and aws_eventbridge types: N events published with publishMany (batches
 * of 100, `publishLanes` batches in flight) to one destination of the type; deliveries/s from the first publish
 * until the receiver holds every event. The receivers are the test suite's wire-level FAKES (a Kafka broker on
 * kafkajs's codec, an EventBridge PutEvents endpoint checking SigV4), running in this process: the figures are
 * Outflow plus the real client SDK talking to a fake over loopback, not a Kafka cluster or AWS, and the CPU per
 * delivery includes the fake's own work.
 */
import type { Outflow } from '../../src/engine.js'
import { startFakeEventBridge } from '../../test/fakes/eventbridge-server.js'
import { startFakeKafka } from '../../test/fakes/kafka-server.js'
import { measureHeld, type HeldFigures } from '../support/measure.js'
import { closeOutflow, openOutflow, publishBatches, tenantId } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'

/** A receiver: how many distinct events it holds so far. */
interface Receiver {
  type: 'kafka' | 'aws_eventbridge'
  target: { config: Record<string, unknown>; credentials?: Record<string, unknown> }
  received(): number
  close(): Promise<void>
}

async function kafkaReceiver(): Promise<Receiver> {
  const broker = await startFakeKafka({ topics: { bench: 3 } })
  return { type: 'kafka', target: { config: { brokers: broker.broker, topic: 'bench' } }, received: () => broker.log.length, close: () => broker.close() }
}

async function eventBridgeReceiver(): Promise<Receiver> {
  const key = 'AKIABENCHEVENTBRIDGE'
  const secret = 'bench-eventbridge-secret-0123456789abcdef'
  const bus = await startFakeEventBridge({ accessKeyId: key, secretAccessKey: secret, buses: ['bench'] })
  return {
    type: 'aws_eventbridge',
    target: { config: { event_bus: 'bench', endpoint: bus.endpoint, source: 'outflow.bench' }, credentials: { key, secret } },
    received: () => bus.events.length,
    close: () => bus.close(),
  }
}

/** Deliveries/s of one type, warm-up first (not counted); the engine and its tenant are the scenario's. */
async function measure(ctx: ScenarioContext, outflow: Outflow, receiver: Receiver): Promise<HeldFigures> {
  const { sizes } = ctx
  const destination = await outflow.createDestination(tenantId, { type: receiver.type, topics: ['*'], ...receiver.target })
  const publish = (from: number, count: number) => publishBatches(outflow, from, count, sizes.batch, sizes.publishLanes)
  const figures = await measureHeld(sizes, receiver.type, receiver.received, publish)
  // The next type's events must not fan out to this one.
  await outflow.deleteDestination(tenantId, destination.id)
  return figures
}

runScenario(async (ctx) => {
  const values: Record<string, number> = {}
  const notes = ['receivers are in-process wire-level fakes (test/fakes), not a Kafka cluster or AWS EventBridge']
  const outflow = await openOutflow(ctx)
  await outflow.upsertTenant(tenantId, {})
  try {
    for (const start of [kafkaReceiver, eventBridgeReceiver]) {
      const receiver = await start()
      try {
        const figures = await measure(ctx, outflow, receiver)
        const name = receiver.type === 'kafka' ? 'kafka' : 'eventbridge'
        values[`${name}DeliveriesPerSec`] = figures.perSec
        values[`${name}CpuUsPerDelivery`] = figures.cpuUsPerDelivery
        log(ctx, `${receiver.type} (fake): ${figures.perSec.toFixed(0)} deliveries/s, ${figures.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery (fake included), publishing took ${figures.produceSeconds.toFixed(2)} of ${figures.seconds.toFixed(2)} s`)
        if (figures.produceSeconds > 0.9 * figures.seconds) notes.push(`${receiver.type}: publishing took ${figures.produceSeconds.toFixed(2)} of ${figures.seconds.toFixed(2)} s, so it may have limited the rate`)
      } finally {
        await receiver.close()
      }
    }
  } finally {
    await closeOutflow(outflow)
  }
  return { values, notes }
})
