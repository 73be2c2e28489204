import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { Catalog, compileCatalog, maxReportedProblems, maxSchemaBytes } from '../../src/delivery/catalog.js'
import { OutflowError } from '../../src/errors.js'
import type { TopicsOption } from '../../src/model/topic.js'
import { order, orderSchema } from '../support/catalog.js'

/** The catalog of `option`, which must compile. */
async function compiled(option: TopicsOption): Promise<Catalog> {
  const catalog = await compileCatalog(option)
  if (!catalog) throw new Error('expected a catalog')
  return catalog
}

/** The 422 `compileCatalog` refuses `option` with. */
async function refusal(option: unknown): Promise<OutflowError> {
  try {
    await compileCatalog(option as TopicsOption)
  } catch (err) {
    expect(err).toBeInstanceOf(OutflowError)
    expect((err as OutflowError).status).toBe(422)
    return err as OutflowError
  }
  throw new Error('expected the catalog to be refused')
}

describe('compileCatalog', () => {
  it('is no catalog without the option', async () => {
    expect(await compileCatalog(undefined)).toBeUndefined()
  })

  it('lists an array of names as topics without schema, validation off, in order', async () => {
    const catalog = await compiled(['order.created', 'order.paid'])
    expect(catalog.names).toEqual(['order.created', 'order.paid'])
    expect(catalog.topics().map(Catalog.info)).toEqual([
      { name: 'order.created', description: '', payload_schema: null, validation: 'off', deprecated: false, replaced_by: null },
      { name: 'order.paid', description: '', payload_schema: null, validation: 'off', deprecated: false, replaced_by: null },
    ])
  })

  it('defaults a topic with a schema to enforce, and fills description, deprecated, replaced_by and examples', async () => {
    const catalog = await compiled({ 'order.created': { schema: orderSchema } })
    expect(Catalog.info(catalog.get('order.created')!)).toEqual({ name: 'order.created', description: '', payload_schema: orderSchema, validation: 'enforce', deprecated: false, replaced_by: null })
    expect(catalog.get('order.created')!.examples).toEqual([])
  })

  it('keeps what the definition gives, examples included in the topic info', async () => {
    const catalog = await compiled({
      'order.created': { description: 'An order was placed', schema: orderSchema, validation: 'warn', examples: [order('o-1')] },
      'order.placed': { replaced_by: 'order.created' },
      'order.noted': { deprecated: true },
    })
    expect(Catalog.info(catalog.get('order.created')!)).toEqual({
      name: 'order.created',
      description: 'An order was placed',
      payload_schema: orderSchema,
      validation: 'warn',
      deprecated: false,
      replaced_by: null,
      examples: [order('o-1')],
    })
    // replaced_by makes a topic deprecated unless it says otherwise.
    expect(catalog.get('order.placed')).toMatchObject({ deprecated: true, replaced_by: 'order.created' })
    expect(catalog.get('order.noted')).toMatchObject({ deprecated: true, replaced_by: null })
    expect((await compiled({ a: {}, b: { replaced_by: 'a', deprecated: false } })).get('b')).toMatchObject({ deprecated: false, replaced_by: 'a' })
  })

  it('prefers jsonSchema over schema', async () => {
    const foreign = { '~standard': { version: 1, vendor: 'acme-schemas', validate: (value: unknown) => ({ value }) } }
    const catalog = await compiled({ 'a.b': { schema: foreign as never, jsonSchema: { type: 'object', required: ['x'] } } })
    expect(catalog.get('a.b')!.schema).toEqual({ type: 'object', required: ['x'] })
    expect(catalog.check('a.b', {})).toEqual([{ path: '.x', message: 'required' }])
  })

  it("derives a valibot schema's JSON Schema without its $schema dialect", async () => {
    const catalog = await compiled({ 'user.signed_up': { schema: v.object({ email: v.pipe(v.string(), v.email()), plan: v.picklist(['free', 'pro']) }) } })
    const schema = catalog.get('user.signed_up')!.schema!
    expect(schema).not.toHaveProperty('$schema')
    expect(schema).toMatchObject({ type: 'object', required: ['email', 'plan'], properties: { email: { type: 'string', format: 'email' }, plan: { enum: ['free', 'pro'] } } })
    expect(catalog.check('user.signed_up', { email: 'a@example.com', plan: 'free' })).toBeUndefined()
    expect(catalog.check('user.signed_up', { email: 'nope', plan: 'team' })).toEqual([
      { path: '.email', message: 'must match format "email"' },
      { path: '.plan', message: 'must be one of ["free","pro"]' },
    ])
  })

  it("derives a zod schema's JSON Schema, for its input, without its $schema dialect", async () => {
    const catalog = await compiled({ 'user.invited': { schema: z.object({ role: z.enum(['admin', 'member']), seats: z.number().default(1) }) } })
    const schema = catalog.get('user.invited')!.schema!
    expect(schema).not.toHaveProperty('$schema')
    // The input type: a field with a default may be left out.
    expect(schema).toMatchObject({ type: 'object', required: ['role'] })
    expect(catalog.check('user.invited', { role: 'admin' })).toBeUndefined()
  })

  it('derives draft 2020-12 tuples from valibot and zod (prefixItems, not the older items array)', async () => {
    const catalog = await compiled({
      'a.valibot': { schema: v.object({ pair: v.tuple([v.string(), v.number()]) }) },
      'a.zod': { schema: z.object({ pair: z.tuple([z.string(), z.number()]) }) },
    })
    for (const topic of ['a.valibot', 'a.zod']) {
      expect(catalog.get(topic)!.schema, topic).toMatchObject({ properties: { pair: { prefixItems: [{ type: 'string' }, { type: 'number' }] } } })
      expect(catalog.check(topic, { pair: ['a', 1] }), topic).toBeUndefined()
      expect(catalog.check(topic, { pair: [1, 'a'] }), topic).toEqual([
        { path: '.pair.0', message: 'must be string' },
        { path: '.pair.1', message: 'must be number' },
      ])
    }
  })

  it('checks what is published against a valibot schema that transforms it: its input, not its output', async () => {
    const catalog = await compiled({ 'a.b': { schema: v.object({ n: v.pipe(v.string(), v.transform(Number), v.number(), v.minValue(5)) }) } })
    expect(catalog.get('a.b')!.schema).toMatchObject({ properties: { n: { type: 'string' } } })
    expect(catalog.check('a.b', { n: '7' })).toBeUndefined()
    expect(catalog.check('a.b', { n: 7 })).toEqual([{ path: '.n', message: 'must be string' }])
  })

  it('leaves unchecked the parts of a valibot schema JSON Schema cannot express, and checks the rest', async () => {
    const catalog = await compiled({ 'a.b': { schema: v.object({ at: v.date(), n: v.custom<number>((x) => typeof x === 'number'), id: v.string() }) } })
    expect(catalog.get('a.b')!.schema).toMatchObject({ properties: { at: {}, n: {}, id: { type: 'string' } }, required: ['at', 'n', 'id'] })
    expect(catalog.check('a.b', { at: 'anything', n: 'anything', id: 'x' })).toBeUndefined()
    expect(catalog.check('a.b', { id: 1 })).toEqual([
      { path: '.at', message: 'required' },
      { path: '.n', message: 'required' },
      { path: '.id', message: 'must be string' },
    ])
  })

  it("uses an arktype schema's own toJsonSchema, and refuses one without it", async () => {
    const jsonSchema = { type: 'object', required: ['id'] }
    const arktype = Object.assign(() => undefined, { '~standard': { version: 1, vendor: 'arktype', validate: (value: unknown) => ({ value }) }, toJsonSchema: () => jsonSchema })
    expect((await compiled({ 'a.b': { schema: arktype as never } })).get('a.b')!.schema).toEqual(jsonSchema)
    const bare = { '~standard': { version: 1, vendor: 'arktype', validate: (value: unknown) => ({ value }) } }
    const err = await refusal({ 'a.b': { schema: bare } })
    expect(err.data).toEqual({ 'topics.a.b.schema': 'no JSON Schema converter for "arktype" schemas: give jsonSchema beside the schema' })
  })

  it("trusts a toJsonSchema method only on arktype schemas, and names only the schema when it also asks for validation", async () => {
    const foreign = { '~standard': { version: 1, vendor: 'acme-schemas', validate: (value: unknown) => ({ value }) }, toJsonSchema: () => ({ type: 'object' }) }
    for (const validation of [undefined, 'enforce', 'warn'] as const) {
      const err = await refusal({ 'a.b': { schema: foreign, validation } })
      expect(err.data, validation).toEqual({ 'topics.a.b.schema': 'no JSON Schema converter for "acme-schemas" schemas: give jsonSchema beside the schema' })
    }
  })

  it.each([
    ['a pattern as a name', { 'order.*': {} }, { 'topics.order.*': 'must be a concrete topic, not a pattern' }],
    ['an empty name', { '': {} }, { 'topics.': 'must be a non-empty topic without white space' }],
    ['a name with white space', { 'order created': {} }, { 'topics.order created': 'must be a non-empty topic without white space' }],
    ['a name with a tab', { 'order\tcreated': {} }, { 'topics.order\tcreated': 'must be a non-empty topic without white space' }],
    ['replaced_by outside the catalog', { 'a.b': { replaced_by: 'c.d' } }, { 'topics.a.b.replaced_by': '"c.d" is not a topic of the catalog' }],
    ['replaced_by naming itself', { 'a.b': { replaced_by: 'a.b' } }, { 'topics.a.b.replaced_by': 'must name another topic' }],
    ['enforce without a schema', { 'a.b': { validation: 'enforce' } }, { 'topics.a.b.validation': '"enforce" needs a schema' }],
    ['warn without a schema', { 'a.b': { validation: 'warn' } }, { 'topics.a.b.validation': '"warn" needs a schema' }],
    ['an unknown keyword (strict mode)', { 'a.b': { schema: { type: 'object', requird: ['x'] } } }, { 'topics.a.b.schema': 'not a valid JSON Schema (draft 2020-12): strict mode: unknown keyword: "requird"' }],
  ])('refuses %s, naming the topic', async (_what, option, data) => {
    const err = await refusal(option)
    expect(err.data).toEqual(data)
    expect(err.message).toBe(`invalid topic catalog: ${Object.entries(data).map(([k, m]) => `${k}: ${m}`).join('; ')}`)
  })

  it('accepts off without a schema', async () => {
    expect((await compiled({ 'a.b': { validation: 'off' } })).get('a.b')!.validation).toBe('off')
  })

  it('names every problem of every topic in one refusal', async () => {
    const err = await refusal({ 'order.*': {}, 'a.b': { replaced_by: 'c.d' }, 'c.e': { validation: 'warn' } })
    expect(err.data).toEqual({
      'topics.order.*': 'must be a concrete topic, not a pattern',
      'topics.a.b.replaced_by': '"c.d" is not a topic of the catalog',
      'topics.c.e.validation': '"warn" needs a schema',
    })
    expect(err.message).toBe(
      'invalid topic catalog: topics.order.*: must be a concrete topic, not a pattern; topics.c.e.validation: "warn" needs a schema; topics.a.b.replaced_by: "c.d" is not a topic of the catalog',
    )
  })

  it('refuses a schema over 256 KiB as JSON, and accepts one just under', async () => {
    const big = (bytes: number) => ({ type: 'object', description: 'x'.repeat(bytes - JSON.stringify({ type: 'object', description: '' }).length) })
    expect(JSON.stringify(big(maxSchemaBytes)).length).toBe(maxSchemaBytes)
    expect((await compiled({ 'a.b': { schema: big(maxSchemaBytes) } })).get('a.b')!.validators).toBeDefined()
    const err = await refusal({ 'a.b': { schema: big(maxSchemaBytes + 1) } })
    expect(err.data).toEqual({ 'topics.a.b.schema': 'larger than 256 KiB as JSON' })
  })

  it('refuses an example its schema refuses, naming up to three problems with their paths', async () => {
    const err = await refusal({ 'a.b': { schema: orderSchema, examples: [order('o-1'), { id: 1, extra: true }, 'text'] } })
    expect(err.data).toEqual({
      'topics.a.b.examples.1': 'does not match the schema: .total required; .currency required; .items required',
      'topics.a.b.examples.2': 'does not match the schema: (data) must be object',
    })
  })

  it('knows the date-time format and the OpenAPI annotation keywords', async () => {
    const annotations = { example: { at: '2026-01-01T00:00:00Z' }, discriminator: { propertyName: 'at' }, xml: { name: 'order' }, externalDocs: { url: 'https://example.com/orders' } }
    const catalog = await compiled({ 'a.b': { schema: { type: 'object', ...annotations, properties: { at: { type: 'string', format: 'date-time' } } } } })
    expect(catalog.check('a.b', { at: '2026-01-01T00:00:00Z' })).toBeUndefined()
    expect(catalog.check('a.b', { at: 'yesterday' })).toEqual([{ path: '.at', message: 'must match format "date-time"' }])
  })

  it('accepts schemas that leave types implicit, and tuples without a length bound', async () => {
    const catalog = await compiled({
      'a.implicit': { schema: { properties: { n: { minimum: 1 } } } },
      'a.tuple': { schema: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }] } },
    })
    expect(catalog.check('a.implicit', { n: 2 })).toBeUndefined()
    expect(catalog.check('a.implicit', 'not an object, so nothing to check')).toBeUndefined()
    expect(catalog.check('a.implicit', { n: 0 })).toEqual([{ path: '.n', message: 'must be >= 1' }])
    expect(catalog.check('a.tuple', ['a', 1, 'more'])).toBeUndefined()
    expect(catalog.check('a.tuple', [1])).toEqual([{ path: '.0', message: 'must be string' }])
  })
})

describe('Catalog.check', () => {
  const schema = {
    type: 'object',
    required: ['id'],
    additionalProperties: false,
    properties: { id: { type: 'string' }, 'a/b': { type: 'integer' }, 'c~d': { type: 'integer' }, kind: { enum: ['x', 'y'] }, items: { type: 'array', items: { type: 'object', unevaluatedProperties: false, properties: { sku: { type: 'string' } } } } },
  }

  it('is undefined for valid data, an unknown topic, a topic without schema and validation off', async () => {
    const catalog = await compiled({ 'a.b': { schema }, 'a.off': { schema, validation: 'off' }, 'a.none': {} })
    expect(catalog.check('a.b', { id: 'x' })).toBeUndefined()
    expect(catalog.check('a.unknown', 42)).toBeUndefined()
    expect(catalog.check('a.none', 42)).toBeUndefined()
    expect(catalog.check('a.off', 42)).toBeUndefined()
  })

  it('checks warn topics like enforce ones', async () => {
    expect((await compiled({ 'a.b': { schema, validation: 'warn' } })).check('a.b', {})).toEqual([{ path: '.id', message: 'required' }])
  })

  it('names every problem by its path below data, in the project wording', async () => {
    const catalog = await compiled({ 'a.b': { schema } })
    expect(catalog.check('a.b', { 'a/b': 'x', 'c~d': 1.5, kind: 'z', extra: 1, items: [{ sku: 1, more: true }] })).toEqual([
      { path: '.id', message: 'required' },
      { path: '.extra', message: 'unexpected field' },
      { path: '.a/b', message: 'must be integer' },
      { path: '.c~d', message: 'must be integer' },
      { path: '.kind', message: 'must be one of ["x","y"]' },
      { path: '.items.0.sku', message: 'must be string' },
      { path: '.items.0.more', message: 'unexpected field' },
    ])
    expect(catalog.check('a.b', 'text')).toEqual([{ path: '', message: 'must be object' }])
  })

  it('names one problem per path', async () => {
    const catalog = await compiled({ 'a.b': { schema: { type: 'object', properties: { n: { type: 'integer', minimum: 5, multipleOf: 2 } } } } })
    expect(catalog.check('a.b', { n: 3 })).toEqual([{ path: '.n', message: 'must be >= 5' }])
  })

  it('names at most the bound, then how many more there were', async () => {
    const many = { type: 'object', additionalProperties: { type: 'string' } }
    const catalog = await compiled({ 'a.b': { schema: many } })
    const data = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]))
    expect(catalog.check('a.b', data(maxReportedProblems))).toHaveLength(maxReportedProblems)
    const oneOver = catalog.check('a.b', data(maxReportedProblems + 1))!
    expect(oneOver).toHaveLength(maxReportedProblems + 1)
    expect(oneOver.slice(0, maxReportedProblems)).toEqual(Array.from({ length: maxReportedProblems }, (_, i) => ({ path: `.f${i}`, message: 'must be string' })))
    expect(oneOver.at(-1)).toEqual({ path: '', message: '1 more problem not listed' })
    expect(catalog.check('a.b', data(maxReportedProblems + 7))!.at(-1)).toEqual({ path: '', message: '7 more problems not listed' })
  })
})

describe('Catalog.warnDue', () => {
  it('is due once per topic per minute', async () => {
    const catalog = await compiled(['a.b', 'c.d'])
    expect(catalog.warnDue('a.b', 1_000)).toBe(true)
    expect(catalog.warnDue('a.b', 1_000)).toBe(false)
    expect(catalog.warnDue('c.d', 1_001)).toBe(true)
    expect(catalog.warnDue('a.b', 60_999)).toBe(false)
    expect(catalog.warnDue('a.b', 61_000)).toBe(true)
    expect(catalog.warnDue('a.b', 61_001)).toBe(false)
  })
})
