import * as v from 'valibot'
import type { TopicsOption } from '../../src/model/topic.js'

// The topic catalog the catalog tests share (engine, HTTP, portal, OpenAPI).

/** A realistic order schema (JSON Schema 2020-12). */
export const orderSchema = {
  type: 'object',
  required: ['id', 'total', 'currency', 'items'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: 'The order id' },
    total: { type: 'number', minimum: 0 },
    currency: { enum: ['EUR', 'USD'] },
    placed_at: { type: 'string', format: 'date-time' },
    items: {
      type: 'array',
      items: { type: 'object', required: ['sku', 'quantity'], properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1 } } },
    },
  },
} as const

export const order = (id: string) => ({ id, total: 12.5, currency: 'EUR', items: [{ sku: 'A-1', quantity: 2 }] })

/** A catalog with every validation mode, a valibot schema and a deprecated topic. */
export const catalog = {
  'order.created': { description: 'An order was placed', schema: orderSchema, examples: [order('o-1')] },
  'order.updated': { description: 'An order changed', schema: orderSchema, validation: 'warn' },
  'order.noted': { description: 'Free-form notes', schema: orderSchema, validation: 'off' },
  'user.signed_up': { description: 'A user signed up', schema: v.object({ email: v.pipe(v.string(), v.email()), plan: v.picklist(['free', 'pro']) }) },
  'order.placed': { description: 'Old name of order.created', deprecated: true, replaced_by: 'order.created' },
} satisfies TopicsOption

