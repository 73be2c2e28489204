/**
 * Claims per tenant (postgres({ tenantClaims: true }), what Citus needs) against the global claim, in one process
 * on one database: each measurement drains `deliveries` pending deliveries (committed with the worker off, as the
 * drain row does) spread over 1 tenant and over 1,000 tenants, each with its own webhook to the sink. Every
 * configuration gets its own schema; the two claims alternate, global first, then per tenant, per spread.
 * Deliveries/s and this process's CPU µs per delivery over the drain.
 */
import { sleep, wallNow } from '../support/clock.js'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import { cpuMicros, deliveryTimeoutMs } from '../support/measure.js'
import { apiKey, closeOutflow, topic } from '../support/outflow.js'
import { runPool } from '../support/load.js'
import { log, runScenario, type ScenarioContext } from '../support/scenario.js'
import { startSink, type SinkHandle } from '../support/sink-client.js'

const spreads = [1, 1_000]

function engine(ctx: ScenarioContext, schema: string, tenantClaims: boolean, worker: boolean): Promise<Outflow> {
  const c = ctx.sizes.concurrency
  return createOutflow({
    storage: postgres({ url: ctx.pgUrl!, schema, tenantClaims }),
    apiKey,
    jwtSecret: 'outflow-bench-jwt-secret',
    encryptionKey: 'outflow-bench-encryption-key',
    allowPrivateNetworks: true,
    delivery: { concurrency: c, perDestinationConcurrency: c, worker },
  })
}

/** `n` events over `tenants` tenants (round robin), each tenant with a webhook to the sink, committed with the worker off. */
async function backlog(ctx: ScenarioContext, schema: string, tenantClaims: boolean, sinkUrl: string, tenants: number, n: number): Promise<void> {
  const publisher = await engine(ctx, schema, tenantClaims, false)
  try {
    await runPool(tenants, 8, async (i) => {
      await publisher.upsertTenant(`t${i}`, {})
      await publisher.createDestination(`t${i}`, { type: 'webhook', topics: ['*'], config: { url: sinkUrl } })
    })
    const batch = ctx.sizes.batch
    await runPool(Math.ceil(n / batch), ctx.sizes.publishLanes, async (b) => {
      const size = Math.min(batch, n - b * batch)
      await publisher.publishMany(Array.from({ length: size }, (_, k) => ({ tenant_id: `t${(b * batch + k) % tenants}`, topic, data: { n: b * batch + k } })))
    })
  } finally {
    await closeOutflow(publisher)
  }
}

async function drain(ctx: ScenarioContext, sink: SinkHandle, schema: string, tenantClaims: boolean, n: number): Promise<{ perSec: number; cpuUs: number }> {
  await sink.reset()
  const reached = sink.expect(n, deliveryTimeoutMs(n))
  reached.catch(() => {})
  const cpu0 = cpuMicros()
  const t0 = wallNow()
  const outflow = await engine(ctx, schema, tenantClaims, true)
  try {
    const t1 = await reached
    await sleep(200)
    const { duplicates } = await sink.stats()
    if (duplicates > 0) throw new Error(`${schema}: ${duplicates} duplicates`)
    return { perSec: n / ((t1 - t0) / 1000), cpuUs: (cpuMicros() - cpu0) / n }
  } finally {
    await closeOutflow(outflow)
  }
}

runScenario(async (ctx) => {
  const n = ctx.sizes.deliveries
  const sink = await startSink()
  const values: Record<string, number> = {}
  try {
    // Warm-up: a small drain of each claim, so the measured ones run JIT-compiled code.
    for (const tenantClaims of [false, true]) {
      const schema = `warm_${tenantClaims ? 'tenant' : 'global'}`
      await backlog(ctx, schema, tenantClaims, sink.url, 10, ctx.sizes.warmup)
      await drain(ctx, sink, schema, tenantClaims, ctx.sizes.warmup)
    }
    for (const tenants of spreads) {
      for (const tenantClaims of [false, true]) {
        const name = `${tenantClaims ? 'tenant' : 'global'}${tenants}`
        await backlog(ctx, `b_${name}`, tenantClaims, sink.url, tenants, n)
        const { perSec, cpuUs } = await drain(ctx, sink, `b_${name}`, tenantClaims, n)
        log(ctx, `${tenants} tenant(s), ${tenantClaims ? 'claims per tenant' : 'global claim'}: ${perSec.toFixed(0)} deliveries/s, ${cpuUs.toFixed(0)} µs CPU per delivery`)
        values[`${name}PerSec`] = perSec
        values[`${name}CpuUs`] = cpuUs
      }
    }
  } finally {
    await sink.close()
  }
  return { values, notes: [] }
})
