import { metrics } from '@opentelemetry/api'
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { createOutflow } from '../../src/create-outflow.js'
import { maxReportedProblems } from '../../src/delivery/catalog.js'
import type { Outflow } from '../../src/engine.js'
import type { Logger } from '../../src/logger.js'
import type { TopicsOption } from '../../src/model/topic.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { hostKinds } from '../outbox/hosts.js'
import { engineKinds, rejection } from '../support/engines.js'
import { catalog, order, orderSchema } from '../support/catalog.js'
import { startReceiver, waitFor } from '../support/receiver.js'

/** A logger that keeps what it was told. */
function recordingLogger() {
  const lines: { level: string; fields: Record<string, unknown>; message: string }[] = []
  const log = (level: string) => (fields: Record<string, unknown>, message: string) => void lines.push({ level, fields, message })
  const logger: Logger = { debug: log('debug'), info: log('info'), warn: log('warn'), error: log('error') }
  return { logger, lines }
}

describe('catalog options', () => {
  const create = (topics: unknown) => createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false, topics: topics as TopicsOption })

  it.each([
    ['a replaced_by outside the catalog', { 'a.b': { replaced_by: 'c.d' } }, 'topics.a.b.replaced_by', '"c.d" is not a topic of the catalog'],
    ['a schema the validator cannot compile', { 'a.b': { schema: { type: 'nope' } } }, 'topics.a.b.schema', 'not a valid JSON Schema'],
    ['a schema with an unknown keyword', { 'a.b': { schema: { type: 'object', requird: ['x'] } } }, 'topics.a.b.schema', 'unknown keyword'],
    ['a pattern as a topic name', { 'order.*': {} }, 'topics.order.*', 'not a pattern'],
    ['an example its schema refuses', { 'a.b': { schema: orderSchema, examples: [{ id: 1 }] } }, 'topics.a.b.examples.0', 'does not match the schema'],
    ['validation without a schema', { 'a.b': { validation: 'enforce' } }, 'topics.a.b.validation', 'needs a schema'],
    ['an unknown validation mode', { 'a.b': { schema: orderSchema, validation: 'strict' } }, 'topics.a.b.validation', 'must be "off", "warn" or "enforce"'],
  ])('refuses %s at createOutflow, naming the topic', async (_what, topics, key, message) => {
    const err = await rejection(create(topics))
    expect(err.status).toBe(422)
    expect(err.message).toContain(key)
    expect(Object.keys(err.data ?? {}).some((k) => k.includes(key.slice('topics.'.length)))).toBe(true)
    expect(err.message).toContain(message)
  })

  it('refuses a Standard Schema of a library it cannot convert unless jsonSchema is given beside it', async () => {
    const foreign = { '~standard': { version: 1, vendor: 'acme-schemas', validate: (value: unknown) => ({ value }) } }
    const err = await rejection(create({ 'a.b': { schema: foreign } }))
    expect(err.message).toContain('topics.a.b.schema: no JSON Schema converter for "acme-schemas" schemas')
    const outflow = await create({ 'a.b': { schema: foreign, jsonSchema: { type: 'object', required: ['x'] } } })
    try {
      expect((await outflow.getTopic('a.b')).payload_schema).toEqual({ type: 'object', required: ['x'] })
    } finally {
      await outflow.close()
    }
  })

  it('derives the JSON Schema of a zod 4 schema with zod’s own converter (loaded because a zod schema is there) and checks data with it', async () => {
    const outflow = await create({ 'user.invited': { schema: z.object({ email: z.email(), role: z.enum(['admin', 'member']), seats: z.number().int().min(1).optional() }) } })
    try {
      await outflow.upsertTenant('acme')
      expect((await outflow.getTopic('user.invited')).payload_schema).toMatchObject({
        type: 'object',
        required: ['email', 'role'],
        properties: { email: { type: 'string', format: 'email' }, role: { enum: ['admin', 'member'] }, seats: { type: 'integer', minimum: 1 } },
      })
      const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'user.invited', data: { email: 'nope', role: 'owner', seats: 0 } }))
      // zod's email schema carries a pattern beside format: email; the first one to fail names the path.
      expect(err.data).toEqual({ 'data.email': expect.stringMatching(/^must match (format "email"|pattern ")/), 'data.role': 'must be one of ["admin","member"]', 'data.seats': 'must be >= 1' })
      expect((await outflow.publish({ tenant_id: 'acme', topic: 'user.invited', data: { email: 'a@example.com', role: 'admin' } })).duplicate).toBe(false)
    } finally {
      await outflow.close()
    }
  })

  it('keeps accepting an array of names: listed as topics without schema, others refused at publish', async () => {
    const outflow = await create(['order.created'])
    try {
      await outflow.upsertTenant('acme')
      expect(await outflow.listTopics()).toEqual([{ name: 'order.created', description: '', payload_schema: null, validation: 'off', deprecated: false, replaced_by: null }])
      expect((await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { any: 'thing' } })).duplicate).toBe(false)
      const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'order.paid', data: {} } as never))
      expect(err.data).toEqual({ topic: '"order.paid" is not one of the configured topics' })
    } finally {
      await outflow.close()
    }
  })
})

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`topic catalog: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    const { logger, lines } = recordingLogger()
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })

    beforeAll(async () => {
      metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))
      receiver = await startReceiver()
      outflow = await kind.create({ topics: catalog, logger })
      await outflow.upsertTenant('acme')
      await outflow.createDestination('acme', { id: 'all', type: 'webhook', topics: '*', config: { url: `${receiver.url}/all` } })
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
      await reader.shutdown()
      metrics.disable()
    })

    const listed = async (id: string) => (await outflow.listEvents('acme', { limit: 1000 })).models.find((e) => e.id === id)

    it('lists the catalog with JSON Schemas, the valibot one derived', async () => {
      const topics = await outflow.listTopics()
      expect(topics.map((t) => t.name)).toEqual(Object.keys(catalog))
      expect(topics[0]).toEqual({
        name: 'order.created',
        description: 'An order was placed',
        payload_schema: orderSchema,
        validation: 'enforce',
        deprecated: false,
        replaced_by: null,
        examples: [order('o-1')],
      })
      const user = await outflow.getTopic('user.signed_up')
      expect(user.payload_schema).toMatchObject({ type: 'object', required: ['email', 'plan'], properties: { email: { type: 'string', format: 'email' }, plan: { enum: ['free', 'pro'] } } })
      expect(await outflow.getTopic('order.placed')).toMatchObject({ deprecated: true, replaced_by: 'order.created', payload_schema: null, validation: 'off' })
      expect((await rejection(outflow.getTopic('order.nope'))).status).toBe(404)
    })

    it('enforce: refuses invalid data with a 422 naming each failing path, and writes nothing', async () => {
      const err = await rejection(
        outflow.publish({ id: 'bad-1', tenant_id: 'acme', topic: 'order.created', data: { id: 'o-2', total: 'ten', currency: 'GBP', items: [{ sku: 'A' }], extra: 1 } }),
      )
      expect(err.status).toBe(422)
      expect(err.data).toEqual({
        'data.total': 'must be number',
        'data.currency': 'must be one of ["EUR","USD"]',
        'data.items.0.quantity': 'required',
        'data.extra': 'unexpected field',
      })
      // Nothing was written: the same id publishes afresh.
      expect(await outflow.publish({ id: 'bad-1', tenant_id: 'acme', topic: 'order.created', data: order('o-2') })).toEqual({ id: 'bad-1', duplicate: false, destination_ids: ['all'] })
      expect(await waitFor(() => listed('bad-1'))).toMatchObject({ topic: 'order.created', schema_valid: true, data: order('o-2') })
    })

    it('enforce: the valibot-derived schema is checked too', async () => {
      const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'user.signed_up', data: { email: 'not-an-email', plan: 'gold' } }))
      expect(err.data).toEqual({ 'data.email': 'must match format "email"', 'data.plan': 'must be one of ["free","pro"]' })
    })

    it('publishMany: one invalid event refuses the whole batch, every failure named by index', async () => {
      const batch = [
        { id: 'batch-1', tenant_id: 'acme', topic: 'order.created', data: order('b1') },
        { id: 'batch-2', tenant_id: 'acme', topic: 'order.created', data: { ...order('b2'), total: -1 } },
        { id: 'batch-3', tenant_id: 'acme', topic: 'user.signed_up', data: { email: 'a@example.com' } },
      ]
      const err = await rejection(outflow.publishMany(batch))
      expect(err.data).toEqual({ '1.data.total': 'must be >= 0', '2.data.plan': 'required' })
      const results = await outflow.publishMany([batch[0]!, { ...batch[1]!, data: order('b2') }])
      expect(results.map((r) => r.duplicate)).toEqual([false, false])
    })

    it('names at most a bounded number of problems, however many the payload has', async () => {
      const items = Array.from({ length: 5000 }, () => ({ sku: 1, quantity: 0 }))
      const err = await rejection(outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { ...order('big'), items } }))
      const keys = Object.keys(err.data!)
      expect(keys).toHaveLength(maxReportedProblems + 1)
      expect(err.data!.data).toMatch(/^\d+ more problems not listed$/)
      expect(Number(err.data!.data!.split(' ')[0])).toBe(10_000 - maxReportedProblems)
    })

    it('warn: stores and delivers invalid data marked schema_valid: false, logs once per topic per minute and counts it', async () => {
      const before = lines.filter((l) => l.message.includes('topic "order.updated"')).length
      for (const id of ['warn-1', 'warn-2']) expect((await outflow.publish({ id, tenant_id: 'acme', topic: 'order.updated', data: { id, total: 'lots' } })).destination_ids).toEqual(['all'])
      await outflow.publish({ id: 'warn-ok', tenant_id: 'acme', topic: 'order.updated', data: order('warn-ok') })
      await waitFor(() => receiver.received.filter((r) => r.headers['webhook-id'] === 'warn-2').length === 1, 15_000, 'delivery of warn-2')
      expect(JSON.parse(receiver.received.find((r) => r.headers['webhook-id'] === 'warn-1')!.body)).toEqual({ id: 'warn-1', total: 'lots' })
      expect(await waitFor(() => listed('warn-1'))).toMatchObject({ schema_valid: false, data: { id: 'warn-1', total: 'lots' } })
      // A pair is readable from its first attempt on (written back in batches after the delivery).
      expect((await waitFor(() => outflow.getEvent('acme', 'warn-2').catch(() => undefined))).schema_valid).toBe(false)
      expect((await waitFor(() => listed('warn-ok'))).schema_valid).toBe(true)
      const warned = lines.filter((l) => l.message.includes('topic "order.updated"'))
      expect(warned.length - before).toBe(1)
      expect(warned.at(-1)).toMatchObject({ level: 'warn', fields: { topic: 'order.updated', problems: { 'data.total': 'must be number', 'data.currency': 'required', 'data.items': 'required' } } })
      await reader.forceFlush()
      const metric = exporter
        .getMetrics()
        .at(-1)
        ?.scopeMetrics.flatMap((s) => s.metrics)
        .find((m) => m.descriptor.name === 'schema_invalid_events')
      const points = (metric?.dataPoints ?? []) as { attributes: Record<string, unknown>; value: number }[]
      expect(points.find((p) => p.attributes.topic === 'order.updated' && p.attributes.validation === 'warn')?.value).toBe(2)
      expect(points.find((p) => p.attributes.topic === 'order.created' && p.attributes.validation === 'enforce')?.value).toBeGreaterThanOrEqual(1)
    })

    it('off: nothing is checked and the event carries no schema_valid', async () => {
      await outflow.publish({ id: 'off-1', tenant_id: 'acme', topic: 'order.noted', data: { whatever: true } })
      const event = await waitFor(() => listed('off-1'))
      expect(event).not.toHaveProperty('schema_valid')
    })

    it('a destination subscribing to a deprecated topic is created and updated, its answer and the log naming the replacement', async () => {
      const created = await outflow.createDestination('acme', { id: 'old', type: 'webhook', topics: ['order.placed'], config: { url: `${receiver.url}/old` } })
      expect(created.deprecated_topics).toEqual([{ name: 'order.placed', replaced_by: 'order.created' }])
      expect(lines.at(-1)).toMatchObject({ level: 'warn', message: 'destination created with deprecated topics: "order.placed" (replaced by "order.created")' })
      const updated = await outflow.updateDestination('acme', 'old', { topics: ['order.placed', 'order.created'] })
      expect(updated.deprecated_topics).toEqual([{ name: 'order.placed', replaced_by: 'order.created' }])
      const moved = await outflow.updateDestination('acme', 'old', { topics: ['order.created'] })
      expect(moved).not.toHaveProperty('deprecated_topics')
      expect(await outflow.getDestination('acme', 'old')).not.toHaveProperty('deprecated_topics')
    })
  })
}

for (const host of hostKinds) {
  describe.runIf(host.available)(`topic catalog inside a host transaction: ${host.name}`, () => {
    it('enforce refuses invalid data with a 422 and nothing of the call is written; valid data commits', async () => {
      const h = await host.open({ topics: catalog })
      try {
        await h.outflow.upsertTenant('acme')
        const bad = { id: 'tx-bad', tenant_id: 'acme', topic: 'order.created', data: { id: 'x' } }
        const good = { id: 'tx-good', tenant_id: 'acme', topic: 'order.created', data: order('x') }
        const err = await rejection(h.transaction(1, [good, bad], 'commit'))
        expect(err.status).toBe(422)
        expect(err.data).toEqual({ '1.data.total': 'required', '1.data.currency': 'required', '1.data.items': 'required' })
        expect(await h.rows('tx-good')).toEqual({ events: 0, deliveries: 0 })
        expect(await h.orders()).toEqual([])
        await h.transaction(2, [good], 'commit')
        expect(await h.rows('tx-good')).toMatchObject({ events: 1 })
        expect(await h.orders()).toEqual([2])
      } finally {
        await h.close()
      }
    })
  })
}
