/**
 * What checking `data` against the topic catalog costs at publish: `publishMany` batches of a realistic
 * order (customer, address, five line items, totals; 2020-12 schema with required fields, enums, bounds,
 * formats and `additionalProperties: false`) on a topic with `validation: "enforce"`, against the same
 * events on a topic with `validation: "off"`. One engine, both topics; the two modes alternate round by
 * round so drift of the machine or the database affects both alike. The delivery worker is off: the figure
 * is the publish path alone (as in publish.ts). `enforceRatio` = enforce rate / off rate (target ≥ 0.85).
 */
import { createOutflow } from '../../src/create-outflow.js'
import { wallNow } from '../support/clock.js'
import { cpuMicros } from '../support/measure.js'
import { addWebhook, apiKey, closeOutflow, storageOf, tenantId } from '../support/outflow.js'
import { log, runScenario } from '../support/scenario.js'

const money = { type: 'number', minimum: 0, maximum: 1_000_000 } as const
const address = {
  type: 'object',
  required: ['line1', 'city', 'postal_code', 'country'],
  additionalProperties: false,
  properties: { line1: { type: 'string', maxLength: 200 }, line2: { type: 'string', maxLength: 200 }, city: { type: 'string' }, postal_code: { type: 'string' }, country: { type: 'string', pattern: '^[A-Z]{2}$' } },
} as const

/** A realistic order payload's schema. */
export const orderSchema = {
  type: 'object',
  required: ['id', 'customer', 'items', 'subtotal', 'tax', 'total', 'currency', 'status', 'placed_at'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 },
    customer: {
      type: 'object',
      required: ['id', 'email'],
      properties: { id: { type: 'string' }, email: { type: 'string', format: 'email' }, name: { type: 'string' } },
    },
    shipping_address: address,
    items: {
      type: 'array',
      minItems: 1,
      maxItems: 500,
      items: {
        type: 'object',
        required: ['sku', 'quantity', 'unit_price'],
        additionalProperties: false,
        properties: { sku: { type: 'string', pattern: '^[A-Z0-9-]{3,32}$' }, name: { type: 'string' }, quantity: { type: 'integer', minimum: 1 }, unit_price: money },
      },
    },
    subtotal: money,
    tax: money,
    total: money,
    currency: { enum: ['EUR', 'USD', 'GBP', 'JPY'] },
    status: { enum: ['placed', 'paid', 'shipped', 'cancelled'] },
    placed_at: { type: 'string', format: 'date-time' },
    note: { type: 'string', maxLength: 2000 },
  },
} as const

function order(n: number) {
  const items = Array.from({ length: 5 }, (_, i) => ({ sku: `SKU-${1000 + i}`, name: `Item ${i}`, quantity: 1 + (i % 3), unit_price: 9.99 + i }))
  const subtotal = items.reduce((sum, i) => sum + i.quantity * i.unit_price, 0)
  return {
    id: `ord_${n}`,
    customer: { id: `cus_${n % 977}`, email: `customer${n % 977}@example.com`, name: 'Ada Lovelace' },
    shipping_address: { line1: '1 Main Street', city: 'Lyon', postal_code: '69001', country: 'FR' },
    items,
    subtotal,
    tax: subtotal * 0.2,
    total: subtotal * 1.2,
    currency: 'EUR' as const,
    status: 'placed' as const,
    placed_at: '2026-11-27T08:00:00.000Z',
  }
}

const topics = {
  'order.enforced': { description: 'An order, checked at publish', schema: orderSchema, validation: 'enforce' },
  'order.unchecked': { description: 'The same order, not checked', schema: orderSchema, validation: 'off' },
} as const

runScenario(async (ctx) => {
  const { sizes } = ctx
  const outflow = await createOutflow({
    storage: storageOf(ctx),
    apiKey,
    jwtSecret: 'outflow-bench-jwt-secret',
    encryptionKey: 'outflow-bench-encryption-key',
    allowPrivateNetworks: true,
    delivery: { worker: false },
    topics,
  })
  try {
    await addWebhook(outflow, 'http://127.0.0.1:9/never-called')
    let next = 0
    /** `count` events on `topic` in publishMany batches of `sizes.batch`, one after another: wall ms and CPU µs. */
    const round = async (topic: 'order.enforced' | 'order.unchecked', count: number) => {
      const t0 = wallNow()
      const cpu0 = cpuMicros()
      for (let done = 0; done < count; done += sizes.batch) {
        const size = Math.min(sizes.batch, count - done)
        // One topic per batch: a union-typed topic would not narrow to one catalog entry.
        await outflow.publishMany(Array.from({ length: size }, () => ({ tenant_id: tenantId, topic: topic as 'order.enforced', data: order(next++) })))
      }
      return { ms: wallNow() - t0, cpuUs: cpuMicros() - cpu0 }
    }
    // Warm-up of both paths (JIT, validators, statement caches).
    await round('order.enforced', 5 * sizes.batch)
    await round('order.unchecked', 5 * sizes.batch)
    const rounds = 10
    const perRound = Math.max(sizes.batch, Math.round(sizes.publishMany / rounds / sizes.batch) * sizes.batch)
    const total = { enforce: { ms: 0, cpuUs: 0 }, off: { ms: 0, cpuUs: 0 } }
    for (let r = 0; r < rounds; r++) {
      // Alternate which goes first, so neither always follows the other's writes.
      const sequence = r % 2 === 0 ? (['enforce', 'off'] as const) : (['off', 'enforce'] as const)
      for (const mode of sequence) {
        const took = await round(mode === 'enforce' ? 'order.enforced' : 'order.unchecked', perRound)
        total[mode].ms += took.ms
        total[mode].cpuUs += took.cpuUs
      }
    }
    const count = rounds * perRound
    const enforcePerSec = count / (total.enforce.ms / 1000)
    const offPerSec = count / (total.off.ms / 1000)
    const enforceCpuUs = total.enforce.cpuUs / count
    const offCpuUs = total.off.cpuUs / count
    const enforceRatio = enforcePerSec / offPerSec
    log(
      ctx,
      `publishMany of a realistic order: enforce ${enforcePerSec.toFixed(0)}/s (${enforceCpuUs.toFixed(0)} µs CPU each), off ${offPerSec.toFixed(0)}/s (${offCpuUs.toFixed(0)} µs CPU each): ${(enforceRatio * 100).toFixed(1)} %`,
    )
    return { values: { enforcePerSec, offPerSec, enforceCpuUs, offCpuUs, enforceRatio }, notes: [`${count} events per mode in ${rounds} alternating rounds, batches of ${sizes.batch}`] }
  } finally {
    await closeOutflow(outflow)
  }
})
