import { describe, expect, it } from 'vitest'
import { matchesFilter, validateFilter, type FilterSubject } from '../../src/delivery/filter.js'

const event: FilterSubject = {
  id: 'evt_1',
  topic: 'order.created',
  time: '2025-03-01T12:00:00.000Z',
  metadata: { source: 'checkout', region: 'eu-west' },
  data: {
    amount: 250,
    currency: 'EUR',
    note: null,
    customer: { email: 'ada@example.com', tier: 'gold', address: { country: 'FR' } },
    tags: ['vip', 'first-order'],
    code: '250',
    scores: [3, 9],
    items: [
      { sku: 'A-1', qty: 2, price: 10 },
      { sku: 'B-7', qty: 1, price: 230 },
    ],
    matrix: [
      [1, 2],
      [3, 4],
    ],
  },
}

type Case = [name: string, filter: Record<string, unknown>, expected: boolean]

function table(cases: Case[]): void {
  it.each(cases)('%s', (_name, filter, expected) => {
    expect(matchesFilter(filter, event)).toBe(expected)
  })
}

describe('matchesFilter: plain values, nesting and keys', () => {
  table([
    ['{} matches everything', {}, true],
    ['exact topic matches', { topic: 'order.created' }, true],
    ['other topic does not match', { topic: 'order.paid' }, false],
    ['metadata value matches', { metadata: { source: 'checkout' } }, true],
    ['metadata value differs', { metadata: { source: 'admin' } }, false],
    ['nested objects recurse', { data: { customer: { address: { country: 'FR' } } } }, true],
    ['nested mismatch', { data: { customer: { address: { country: 'DE' } } } }, false],
    ['keys are ANDed (all hold)', { topic: 'order.created', data: { currency: 'EUR', amount: 250 } }, true],
    ['keys are ANDed (one fails)', { topic: 'order.created', data: { currency: 'USD' } }, false],
    ['missing field does not match a value', { data: { coupon: 'X' } }, false],
    ['null matches a null field', { data: { note: null } }, true],
    ['null does not match an absent field', { data: { coupon: null } }, false],
    ['number does not match its string form', { data: { amount: '250' } }, false],
  ])
})

describe('matchesFilter: arrays', () => {
  table([
    ['array field contains the value', { data: { tags: 'vip' } }, true],
    ['array field does not contain the value', { data: { tags: 'churned' } }, false],
    ['array filter value deep-equals the field', { data: { tags: ['vip', 'first-order'] } }, true],
    ['array filter value in another order does not match', { data: { tags: ['first-order', 'vip'] } }, false],
    ['array filter value matches an equal element', { data: { matrix: [3, 4] } }, true],
    ['nested keys match one element of an array of objects', { data: { items: { sku: 'B-7', qty: 1 } } }, true],
    ['nested keys must hold on the same element', { data: { items: { sku: 'B-7', qty: 2 } } }, false],
    ['operator object matches any element', { data: { items: { price: { $gt: 100 } } } }, true],
    ['operator object matching no element', { data: { items: { price: { $gt: 1000 } } } }, false],
    ['nested keys with an operator hold on one element', { data: { items: { sku: 'B-7', $not: { sku: 'A-1' } } } }, true],
    ['a comparison matches when any element of a number array does', { data: { scores: { $gt: 5 } } }, true],
    ['a comparison matching no element of a number array', { data: { scores: { $gt: 10 } } }, false],
    ['a string test ignores the non-string elements of an array', { data: { scores: { $startsWith: '3' } } }, false],
  ])
})

describe('matchesFilter: operators', () => {
  table([
    ['$eq match', { data: { currency: { $eq: 'EUR' } } }, true],
    ['$eq non-match', { data: { currency: { $eq: 'USD' } } }, false],
    ['$eq deep-equals an object', { data: { customer: { address: { $eq: { country: 'FR' } } } } }, true],
    ['$neq match', { data: { currency: { $neq: 'USD' } } }, true],
    ['$neq non-match', { data: { currency: { $neq: 'EUR' } } }, false],
    ['$neq on an array means "does not contain"', { data: { tags: { $neq: 'vip' } } }, false],
    ['$gt match', { data: { amount: { $gt: 100 } } }, true],
    ['$gt non-match (equal)', { data: { amount: { $gt: 250 } } }, false],
    ['$gte match (equal)', { data: { amount: { $gte: 250 } } }, true],
    ['$gte non-match', { data: { amount: { $gte: 251 } } }, false],
    ['$lt match', { data: { amount: { $lt: 300 } } }, true],
    ['$lt non-match', { data: { amount: { $lt: 250 } } }, false],
    ['$lte match (equal)', { data: { amount: { $lte: 250 } } }, true],
    ['$lte non-match', { data: { amount: { $lte: 249 } } }, false],
    ['$gte on an ISO time string', { time: { $gte: '2025-01-01T00:00:00Z' } }, true],
    ['$lt on an ISO time string', { time: { $lt: '2025-01-01T00:00:00Z' } }, false],
    ['$gt on an ISO time string', { time: { $gt: '2025-01-01T00:00:00Z' } }, true],
    ['$gt on an equal string', { time: { $gt: '2025-03-01T12:00:00.000Z' } }, false],
    ['$gt on a later string', { time: { $gt: '2026-01-01' } }, false],
    ['$gte on an equal string', { time: { $gte: '2025-03-01T12:00:00.000Z' } }, true],
    ['$lt on a later string', { time: { $lt: '2026-01-01' } }, true],
    ['$lt on an equal string', { time: { $lt: '2025-03-01T12:00:00.000Z' } }, false],
    ['$lte on an equal string', { time: { $lte: '2025-03-01T12:00:00.000Z' } }, true],
    ['$lte on an earlier string', { time: { $lte: '2025-01-01' } }, false],
    ['comparison across types never matches', { data: { amount: { $gt: '100' } } }, false],
    ['a numeric string is not compared with a number', { data: { code: { $gt: 100 } } }, false],
    ['a string is not ordered against a number', { data: { currency: { $gte: 5 } } }, false],
    ['range with two operators', { data: { amount: { $gt: 100, $lt: 300 } } }, true],
    ['range excluding the value', { data: { amount: { $gt: 100, $lt: 200 } } }, false],
    ['$in match', { data: { currency: { $in: ['EUR', 'GBP'] } } }, true],
    ['$in non-match', { data: { currency: { $in: ['USD', 'GBP'] } } }, false],
    ['$in on an array field matches a shared element', { data: { tags: { $in: ['vip', 'other'] } } }, true],
    ['$nin match', { data: { currency: { $nin: ['USD', 'GBP'] } } }, true],
    ['$nin non-match', { data: { currency: { $nin: ['EUR'] } } }, false],
    ['$nin non-match among others', { data: { currency: { $nin: ['USD', 'EUR'] } } }, false],
    ['$exist true on a present field', { data: { currency: { $exist: true } } }, true],
    ['$exist true on an absent field', { data: { coupon: { $exist: true } } }, false],
    ['$exist false on an absent field', { data: { coupon: { $exist: false } } }, true],
    ['$exist false on a present field', { data: { currency: { $exist: false } } }, false],
    ['$exist true on a null field', { data: { note: { $exist: true } } }, true],
    ['$startsWith match', { topic: { $startsWith: 'order.' } }, true],
    ['$startsWith non-match', { topic: { $startsWith: 'user.' } }, false],
    ['$startsWith on a non-string', { data: { amount: { $startsWith: '2' } } }, false],
    ['$endsWith match', { data: { customer: { email: { $endsWith: '@example.com' } } } }, true],
    ['$endsWith non-match', { data: { customer: { email: { $endsWith: '@example.org' } } } }, false],
    ['$endsWith on an array field', { data: { tags: { $endsWith: '-order' } } }, true],
  ])
})

describe('matchesFilter: $or, $and, $not at any level', () => {
  table([
    ['$or at the top level: one branch holds', { $or: [{ topic: 'order.paid' }, { metadata: { source: 'checkout' } }] }, true],
    ['$or at the top level: no branch holds', { $or: [{ topic: 'order.paid' }, { metadata: { source: 'admin' } }] }, false],
    ['$and at the top level: all hold', { $and: [{ topic: 'order.created' }, { data: { amount: { $gt: 1 } } }] }, true],
    ['$and at the top level: one fails', { $and: [{ topic: 'order.created' }, { data: { amount: { $gt: 1000 } } }] }, false],
    ['$not at the top level: inner fails', { $not: { topic: 'order.paid' } }, true],
    ['$not at the top level: inner holds', { $not: { topic: 'order.created' } }, false],
    ['$or inside data', { data: { $or: [{ currency: 'USD' }, { amount: { $gte: 200 } }] } }, true],
    ['$or on a field value', { data: { amount: { $or: [{ $lt: 10 }, { $gt: 200 }] } } }, true],
    ['$or on a field value, no branch', { data: { amount: { $or: [{ $lt: 10 }, { $gt: 300 }] } } }, false],
    ['$and on a field value', { data: { amount: { $and: [{ $gt: 10 }, { $lt: 300 }] } } }, true],
    ['$not on a field value', { data: { currency: { $not: { $in: ['USD', 'GBP'] } } } }, true],
    ['$not on a field value that matches', { data: { currency: { $not: { $eq: 'EUR' } } } }, false],
    ['$or over an array of objects', { data: { items: { $or: [{ sku: 'Z-0' }, { sku: 'A-1' }] } } }, true],
    ['$or combined with a sibling key (ANDed)', { topic: 'order.paid', $or: [{ data: { currency: 'EUR' } }] }, false],
    ['$or over an array of objects, no element carrying the value', { data: { items: { $or: [{ sku: 'Z-0' }, { qty: 9 }] } } }, false],
    ['$or with keys over an array of strings', { data: { tags: { $or: [{ length: 3 }] } } }, false],
  ])
})

// Filters stored before validation existed, or built by a host that skipped it: a positive operator with an
// argument of the wrong type never matches, even where JavaScript would coerce it.
describe('matchesFilter: an operator argument of the wrong type', () => {
  table([
    ['$startsWith with an array', { topic: { $startsWith: ['order'] } }, false],
    ['$endsWith with an array', { topic: { $endsWith: ['created'] } }, false],
    ['$in with a string', { data: { currency: { $in: 'EUR' } } }, false],
    ['$gt with a boolean', { data: { amount: { $gt: false } } }, false],
    ['$or with an object', { $or: { topic: 'order.created' } }, false],
    ['$and with an object', { $and: { topic: 'order.created' } }, false],
    ['$or with a non-object element', { $or: ['order.created'] }, false],
    ['$not with a string', { $not: 'order.paid' }, false],
    ['$exist with a string', { data: { currency: { $exist: 'yes' } } }, false],
  ])
})

describe('validateFilter', () => {
  it('accepts a valid filter and returns null', () => {
    expect(
      validateFilter({
        topic: { $startsWith: 'order.' },
        data: { amount: { $gte: 10, $lt: '9' }, tags: { $in: ['a'] }, $or: [{ a: 1 }, { b: { $exist: false } }], c: { $not: { $eq: [1] } } },
      }),
    ).toBeNull()
  })

  it('accepts the empty filter', () => {
    expect(validateFilter({})).toBeNull()
  })

  const cases: [name: string, filter: unknown, errors: Record<string, string>][] = [
    ['a non-object filter', ['x'], { filter: 'must be an object' }],
    ['a null filter', null, { filter: 'must be an object' }],
    ['an unknown operator', { data: { amount: { $between: [1, 2] } } }, { 'filter.data.amount.$between': 'unknown operator' }],
    ['$in with a non-array', { data: { c: { $in: 'EUR' } } }, { 'filter.data.c.$in': '$in needs an array' }],
    ['$nin with a non-array', { c: { $nin: 1 } }, { 'filter.c.$nin': '$nin needs an array' }],
    ['$or with an empty array', { $or: [] }, { 'filter.$or': '$or needs a non-empty array of objects' }],
    ['$and with a non-object element', { data: { $and: [{ a: 1 }, 2] } }, { 'filter.data.$and': '$and needs a non-empty array of objects' }],
    ['$not with a non-object', { data: { a: { $not: 'x' } } }, { 'filter.data.a.$not': '$not needs an object' }],
    ['$exist with a non-boolean', { data: { a: { $exist: 'yes' } } }, { 'filter.data.a.$exist': '$exist needs a boolean' }],
    ['$startsWith with a non-string', { topic: { $startsWith: 1 } }, { 'filter.topic.$startsWith': '$startsWith needs a string' }],
    ['$endsWith with a non-string', { topic: { $endsWith: null } }, { 'filter.topic.$endsWith': '$endsWith needs a string' }],
    ['$gt with a boolean', { data: { amount: { $gt: true } } }, { 'filter.data.amount.$gt': '$gt needs a number or a string' }],
    ['$gte with a boolean', { data: { amount: { $gte: false } } }, { 'filter.data.amount.$gte': '$gte needs a number or a string' }],
    ['$lt with an array', { data: { amount: { $lt: [1] } } }, { 'filter.data.amount.$lt': '$lt needs a number or a string' }],
    ['$gt with an infinite number', { amount: { $gt: Number.POSITIVE_INFINITY } }, { 'filter.amount.$gt': '$gt needs a number or a string' }],
    ['$lt with NaN', { amount: { $lt: Number.NaN } }, { 'filter.amount.$lt': '$lt needs a number or a string' }],
    ['an error inside $and, with its index', { data: { $and: [{ a: { $oops: 1 } }] } }, { 'filter.data.$and.0.a.$oops': 'unknown operator' }],
    ['$lte with an object', { data: { amount: { $lte: {} } } }, { 'filter.data.amount.$lte': '$lte needs a number or a string' }],
    ['an error inside $or, with its index', { $or: [{ a: 1 }, { b: { $gt: [] } }] }, { 'filter.$or.1.b.$gt': '$gt needs a number or a string' }],
    ['an error inside $not', { $not: { a: { $oops: 1 } } }, { 'filter.$not.a.$oops': 'unknown operator' }],
    [
      'several errors at once',
      { a: { $in: 1 }, b: { $exist: 0 } },
      { 'filter.a.$in': '$in needs an array', 'filter.b.$exist': '$exist needs a boolean' },
    ],
  ]
  it.each(cases)('reports %s', (_name, filter, errors) => {
    expect(validateFilter(filter)).toEqual(errors)
  })

  it('uses the given prefix for paths', () => {
    expect(validateFilter({ a: { $gt: true } }, 'body.filter')).toEqual({ 'body.filter.a.$gt': '$gt needs a number or a string' })
  })

  it('treats $in elements and plain array values as values to compare, not as filters', () => {
    expect(validateFilter({ data: { c: { $in: [{ $oops: 1 }] } } })).toBeNull()
    expect(validateFilter({ data: { tags: [{ $oops: 1 }] } })).toBeNull()
    expect(validateFilter({ data: { c: { $eq: { $oops: 1 } } } })).toBeNull()
  })

  /** `inner` wrapped `levels` times by `wrap`. */
  const nest = (levels: number, wrap: (inner: Record<string, unknown>) => Record<string, unknown>) => {
    let filter: Record<string, unknown> = { x: 1 }
    for (let i = 0; i < levels; i++) filter = wrap(filter)
    return filter
  }
  it.each([
    ['keys', (inner: Record<string, unknown>) => ({ n: inner }), '.n'],
    ['$not', (inner: Record<string, unknown>) => ({ $not: inner }), '.$not'],
    ['$or', (inner: Record<string, unknown>) => ({ $or: [inner] }), '.$or.0'],
    ['$and', (inner: Record<string, unknown>) => ({ $and: [inner] }), '.$and.0'],
  ])('accepts 32 levels of %s and refuses 33, naming the path where it stops', (_, wrap, step) => {
    expect(validateFilter(nest(32, wrap))).toBeNull()
    expect(validateFilter(nest(33, wrap))).toEqual({ [`filter${step.repeat(33)}`]: 'must not be nested deeper than 32 levels' })
  })

  it('refuses filters nested deeper than 32 levels', () => {
    let deep: Record<string, unknown> = { x: 1 }
    for (let i = 0; i < 40; i++) deep = { n: deep }
    const errors = validateFilter(deep)
    expect(errors).not.toBeNull()
    expect(Object.values(errors ?? {})).toEqual(['must not be nested deeper than 32 levels'])
  })
})
