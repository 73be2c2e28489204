import * as v from 'valibot'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { z } from 'zod'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { PublishResult } from '../../src/model/event.js'
import type { FromJsonSchema } from '../../src/model/typed-publish.js'
import { sqlite } from '../../src/storage/sqlite.js'

// Compile-time tests: `npm run typecheck` (tsc over test/) fails if a `@ts-expect-error` line compiles,
// i.e. if publish accepted a wrong field or an unknown topic. The calls also run, and the engine refuses
// the same inputs at run time (422), so both layers are checked here.

const orderSchema = {
  type: 'object',
  required: ['id', 'total'],
  properties: { id: { type: 'string' }, total: { type: 'number' }, currency: { enum: ['EUR', 'USD'] }, tags: { type: 'array', items: { type: 'string' } } },
  additionalProperties: false,
} as const

const typedEngine = () =>
  createOutflow({
    storage: sqlite({ path: ':memory:' }),
    auth: false,
    topics: {
      'order.created': { description: 'An order was placed', schema: orderSchema },
      'user.signed_up': { schema: v.object({ email: v.string(), plan: v.picklist(['free', 'pro']) }) },
      'audit.logged': { description: 'No schema: any JSON object' },
      'team.joined': { schema: z.object({ team: z.string(), seats: z.number().optional() }) },
    },
  })

describe('typed publish', () => {
  it('derives data types from as-const JSON Schemas', () => {
    expectTypeOf<FromJsonSchema<typeof orderSchema>>().toEqualTypeOf<{ id: string; total: number; currency?: 'EUR' | 'USD'; tags?: string[] }>()
  })

  it('an engine with a catalog accepts only its topics, with data typed from each schema', async () => {
    const outflow = await typedEngine()
    try {
      await outflow.upsertTenant('acme')
      type Input = Parameters<typeof outflow.publish>[0]
      expectTypeOf<Input['topic']>().toEqualTypeOf<'order.created' | 'user.signed_up' | 'audit.logged' | 'team.joined'>()
      expectTypeOf<Extract<Input, { topic: 'team.joined' }>['data']>().toEqualTypeOf<{ team: string; seats?: number | undefined }>()
      expectTypeOf<Extract<Input, { topic: 'order.created' }>['data']>().toEqualTypeOf<{ id: string; total: number; currency?: 'EUR' | 'USD'; tags?: string[] }>()
      expectTypeOf<Extract<Input, { topic: 'user.signed_up' }>['data']>().toEqualTypeOf<{ email: string; plan: 'free' | 'pro' }>()
      expectTypeOf<Extract<Input, { topic: 'audit.logged' }>['data']>().toEqualTypeOf<Record<string, unknown>>()

      const ok = await outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 10, currency: 'EUR' } })
      expectTypeOf(ok).toEqualTypeOf<PublishResult>()
      await outflow.publishMany([
        { tenant_id: 'acme', topic: 'user.signed_up', data: { email: 'a@example.com', plan: 'pro' } },
        { tenant_id: 'acme', topic: 'audit.logged', data: { anything: [1, 2] }, metadata: { source: 'test' } },
      ])

      // A wrong field type is a type error (and a 422).
      // @ts-expect-error total must be a number
      await expect(outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-2', total: '10' } })).rejects.toMatchObject({ status: 422 })
      // An unexpected field is a type error (the schema has additionalProperties: false).
      // @ts-expect-error `note` is not a field of order.created
      await expect(outflow.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-3', total: 1, note: 'x' } })).rejects.toMatchObject({ status: 422 })
      // A missing required field is a type error.
      // @ts-expect-error plan is required
      await expect(outflow.publish({ tenant_id: 'acme', topic: 'user.signed_up', data: { email: 'a@example.com' } })).rejects.toMatchObject({ status: 422 })
      // @ts-expect-error team must be a string (a zod schema types data too)
      await expect(outflow.publish({ tenant_id: 'acme', topic: 'team.joined', data: { team: 7 } })).rejects.toMatchObject({ status: 422 })
      // An unknown topic is a type error (and a 422).
      // @ts-expect-error order.paid is not in the catalog
      await expect(outflow.publish({ tenant_id: 'acme', topic: 'order.paid', data: {} })).rejects.toMatchObject({ status: 422 })
      // @ts-expect-error the same in a batch
      await expect(outflow.publishMany([{ tenant_id: 'acme', topic: 'order.paid', data: {} }])).rejects.toMatchObject({ status: 422 })
    } finally {
      await outflow.close()
    }
  })

  it('an array of names `as const` types the topic, with any JSON object as data', async () => {
    const outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false, topics: ['order.created', 'order.paid'] })
    try {
      await outflow.upsertTenant('acme')
      expectTypeOf<Parameters<typeof outflow.publish>[0]['topic']>().toEqualTypeOf<'order.created' | 'order.paid'>()
      await outflow.publish({ tenant_id: 'acme', topic: 'order.paid', data: { any: 'thing' } })
      // @ts-expect-error order.shipped is not listed
      await expect(outflow.publish({ tenant_id: 'acme', topic: 'order.shipped', data: {} })).rejects.toMatchObject({ status: 422 })
    } finally {
      await outflow.close()
    }
  })

  it('an engine without a catalog keeps the untyped API', async () => {
    const outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false })
    try {
      expectTypeOf<Parameters<typeof outflow.publish>[0]>().toBeUnknown()
      await outflow.upsertTenant('acme')
      const input: unknown = JSON.parse('{"tenant_id":"acme","topic":"any.topic","data":{"n":1}}')
      expect((await outflow.publish(input)).duplicate).toBe(false)
      // Every engine type is assignable to the untyped one (what the HTTP adapters take).
      const typed: Outflow = await typedEngine()
      await typed.close()
    } finally {
      await outflow.close()
    }
  })
})
