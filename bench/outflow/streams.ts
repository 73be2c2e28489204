/**
 * Outflow delivery to the stream types, end to end against the real servers on this machine: N events
 * published with publishMany (as in the delivery row) to one `nats_jetstream` destination (a stream of
 * this run's own on the local nats-server), then to one `redis_streams` destination (a stream key of this
 * run's own on the local Redis). Deliveries/s from the first publish until the server holds every event
 * (the stream's message count, XLEN: each delivery counted once it was acknowledged, so a re-send the server
 * dropped as a duplicate does not count), after a warm-up that is not counted; CPU µs of this process
 * (publishing and delivering) per delivery. The servers run on the same 2 cores.
 */
import { jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { Redis } from 'ioredis'
import type { Outflow } from '../../src/engine.js'
import { sleep, wallNow, withTimeout } from '../support/clock.js'
import { cpuMicros, deliveryTimeoutMs } from '../support/measure.js'
import { closeOutflow, openOutflow, publishBatches, tenantId } from '../support/outflow.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'

const natsUrl = process.env.BENCH_NATS_URL ?? 'nats://127.0.0.1:4222'

/** How a measured destination counts what its server holds, and removes what the run left there. */
interface Target {
  config: Record<string, unknown>
  stored(): Promise<number>
  cleanup(): Promise<void>
}

interface StreamFigures {
  perSec: number
  seconds: number
  cpuUsPerDelivery: number
}

/** Wait until the server holds `count` entries, polling every 20 ms. */
async function until(target: Target, count: number, what: string): Promise<number> {
  return withTimeout(
    (async () => {
      for (;;) {
        if ((await target.stored()) >= count) return wallNow()
        await sleep(20)
      }
    })(),
    deliveryTimeoutMs(count),
    what,
  )
}

/** One destination of `type` for every topic of the tenant, warmed up, then n deliveries timed. */
async function measure(ctx: ScenarioContext, outflow: Outflow, type: 'nats_jetstream' | 'redis_streams', target: Target): Promise<StreamFigures> {
  const { sizes } = ctx
  await outflow.upsertTenant(tenantId, {})
  const destination = await outflow.createDestination(tenantId, { type, topics: ['*'], config: target.config })
  try {
    const warmup = Math.max(100, sizes.warmup)
    await publishBatches(outflow, 0, warmup, sizes.batch, sizes.publishLanes)
    await until(target, warmup, `${type}: the warm-up's ${warmup} deliveries`)
    await sleep(300) // let the warm-up's attempt writes finish
    const cpu0 = cpuMicros()
    const t0 = wallNow()
    await publishBatches(outflow, warmup, sizes.deliveries, sizes.batch, sizes.publishLanes)
    const t1 = await until(target, warmup + sizes.deliveries, `${type}: ${sizes.deliveries} deliveries`)
    const cpuUs = cpuMicros() - cpu0
    const seconds = (t1 - t0) / 1000
    const figures = { perSec: sizes.deliveries / seconds, seconds, cpuUsPerDelivery: cpuUs / sizes.deliveries }
    log(ctx, `${type}: ${figures.perSec.toFixed(0)} deliveries/s, ${figures.cpuUsPerDelivery.toFixed(0)} µs CPU per delivery`)
    return figures
  } finally {
    await outflow.deleteDestination(tenantId, destination.id)
    await target.cleanup()
  }
}

/** A stream of this run's own on the local nats-server. */
async function natsTarget(ctx: ScenarioContext): Promise<Target & { close(): Promise<void> }> {
  const url = new URL(natsUrl)
  const servers = `${url.hostname}:${url.port || 4222}`
  const nc = await connect({ servers })
  const jsm = await jetstreamManager(nc)
  const name = `BENCH_${ctx.prefix.replace(/[^A-Za-z0-9_-]/g, '_')}`
  const subject = `bench-${ctx.prefix.replace(/[^A-Za-z0-9_-]/g, '_')}.events`
  await jsm.streams.add({ name, subjects: [subject] })
  return {
    config: { servers, subject, stream: name },
    stored: async () => (await jsm.streams.info(name)).state.messages,
    cleanup: async () => void (await jsm.streams.delete(name).catch(() => false)),
    close: () => nc.close(),
  }
}

/** A stream key of this run's own on the local Redis (and its duplicate-window keys). */
function redisTarget(ctx: ScenarioContext): Target & { close(): void } {
  const redis = new Redis(ctx.redisUrl)
  const key = `${ctx.prefix}:bench-stream`
  return {
    config: { url: ctx.redisUrl, stream_key: key },
    stored: () => redis.xlen(key),
    async cleanup() {
      // The event ids of the window: one key per delivery, deleted in batches.
      let cursor = '0'
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${key}*`, 'COUNT', 1000)
        if (keys.length) await redis.del(...keys)
        cursor = next
      } while (cursor !== '0')
    },
    close: () => redis.disconnect(),
  }
}

runScenario(async (ctx) => {
  const outflow = await openOutflow(ctx)
  const nats = await natsTarget(ctx)
  const redis = redisTarget(ctx)
  try {
    const n = await measure(ctx, outflow, 'nats_jetstream', nats)
    const r = await measure(ctx, outflow, 'redis_streams', redis)
    return {
      values: {
        natsDeliveriesPerSec: n.perSec,
        natsSeconds: n.seconds,
        natsCpuUsPerDelivery: n.cpuUsPerDelivery,
        redisDeliveriesPerSec: r.perSec,
        redisSeconds: r.seconds,
        redisCpuUsPerDelivery: r.cpuUsPerDelivery,
      },
      notes: ['nats_jetstream and redis_streams to the real nats-server (JetStream, file storage) and Redis on this machine'],
    }
  } finally {
    await closeOutflow(outflow)
    await nats.close()
    redis.close()
  }
})
