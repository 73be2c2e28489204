import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { isTopicPattern, matchSegments, matchesTopic, topicAllowed } from '../../src/delivery/topics.js'

describe('matchesTopic', () => {
  const cases: [patterns: string[], topic: string, expected: boolean][] = [
    [['*'], 'order.created', true],
    [['*'], 'anything', true],
    [['order.created'], 'order.created', true],
    [['order.created'], 'order.paid', false],
    [['order.created'], 'order.created.v2', false],
    [['order.*'], 'order.created', true],
    [['order.*'], 'order.created.v2', true],
    [['order.*'], 'order', false],
    [['order.*'], 'orders.created', false],
    [['*.created'], 'order.created', true],
    [['*.created'], 'shop.order.created', true],
    [['*.created'], 'created', false],
    [['*.created'], 'order.created.v2', false],
    [['order.*.v2'], 'order.created.v2', true],
    [['order.*.v2'], 'order.created.paid.v2', true],
    [['order.*.v2'], 'order.v2', false],
    [['*.*'], 'a.b', true],
    [['*.*'], 'a', false],
    [['order*'], 'order.created', false],
    [['order*'], 'order*', true],
    [['user.deleted', 'order.*'], 'order.paid', true],
    [['user.deleted', 'order.*'], 'user.created', false],
    [[], 'order.created', false],
  ]
  it.each(cases)('%j matches %s: %s', (patterns, topic, expected) => {
    expect(matchesTopic(patterns, topic)).toBe(expected)
  })
})

describe('isTopicPattern', () => {
  it('treats only whole "*" segments as wildcards', () => {
    expect(isTopicPattern('order.*')).toBe(true)
    expect(isTopicPattern('*')).toBe(true)
    expect(isTopicPattern('order*')).toBe(false)
    expect(isTopicPattern('order.created')).toBe(false)
  })
})

describe('topicAllowed', () => {
  const allowList = ['order.created', 'order.paid', 'user.deleted']
  const cases: [topicOrPattern: string, expected: boolean][] = [
    ['*', true],
    ['order.created', true],
    ['order.refunded', false],
    ['order.*', true],
    ['*.deleted', true],
    ['invoice.*', false],
    ['*.created.*', false],
    ['order', false],
  ]
  it.each(cases)('with the allow-list, %s is accepted: %s', (topic, expected) => {
    expect(topicAllowed(allowList, topic)).toBe(expected)
  })

  it('accepts "*" even with an empty allow-list', () => {
    expect(topicAllowed([], '*')).toBe(true)
    expect(topicAllowed([], 'order.created')).toBe(false)
  })
})

describe('matchSegments', () => {
  /** The rule of DESIGN §3 as a regular expression: `*` is one or more dot segments, anything else one literal segment. */
  function reference(pattern: string, topic: string): boolean {
    const segment = '[^.]*'
    const parts = pattern.split('.').map((s) => (s === '*' ? `${segment}(?:\\.${segment})*` : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    return new RegExp(`^${parts.join('\\.')}$`).test(topic)
  }
  const pattern = fc.array(fc.constantFrom('*', 'a', 'b', ''), { minLength: 1, maxLength: 7 }).map((s) => s.join('.'))
  const topic = fc.array(fc.constantFrom('a', 'b', ''), { minLength: 1, maxLength: 10 }).map((s) => s.join('.'))

  it('agrees with the regular-expression reference on random patterns and topics', () => {
    fc.assert(
      fc.property(pattern, topic, (p, t) => {
        expect(matchesTopic([p], t)).toBe(p === '*' || p === t || reference(p, t))
        expect(matchSegments(p.split('.'), t.split('.'))).toBe(reference(p, t))
      }),
      { numRuns: 1000 },
    )
  })

  it('agrees with the reference on every pattern of up to 4 segments and every topic of up to 5, over two letters', () => {
    const words = (alphabet: string[], max: number): string[][] => {
      const all: string[][] = []
      let level: string[][] = [[]]
      for (let length = 1; length <= max; length++) {
        level = level.flatMap((prefix) => alphabet.map((s) => [...prefix, s]))
        all.push(...level)
      }
      return all
    }
    const topics = words(['a', 'b'], 5)
    for (const p of words(['*', 'a', 'b'], 4)) for (const t of topics) expect(matchSegments(p, t), `${p.join('.')} ~ ${t.join('.')}`).toBe(reference(p.join('.'), t.join('.')))
  })

  it('does not let a wildcard row start from a cell of two rows back', () => {
    // The rows alternate between two buffers: a `*` row must clear the cell before its band, left over from row i - 2.
    expect(matchSegments('*.a.*.a.*'.split('.'), 'a.b.a.a.b.a'.split('.'))).toBe(false)
    expect(reference('*.a.*.a.*', 'a.b.a.a.b.a')).toBe(false)
    expect(matchSegments('*.a.*.a.*'.split('.'), 'a.b.a.b.a.b'.split('.'))).toBe(true)
  })

  it('counts exactly the cells of the band a match can use: one row per pattern segment, stopping at the first empty row', () => {
    const steps = (p: string, t: string) => {
      const meter = { steps: 0 }
      matchSegments(p.split('.'), t.split('.'), meter)
      return meter.steps
    }
    // Rows of 2 and 2 cells: the first `*` can take 1 or 2 of the 3 topic segments, `b` the 2nd or the 3rd.
    expect(steps('*.b', 'a.b.c')).toBe(4)
    // The first row is all misses: nothing more is visited.
    expect(steps('x.*.*', 'a.b.c.d')).toBe(2)
    // More pattern segments than topic segments: decided without visiting a cell.
    expect(steps('a.b.c', 'a')).toBe(0)
  })

  /** A step meter that fails the moment `limit` is passed, so a blow-up fails fast instead of hanging the worker. */
  function budget(limit: number): { steps: number } {
    let steps = 0
    return {
      get steps() {
        return steps
      },
      set steps(value) {
        if (value > limit) throw new Error(`over budget: more than ${limit} steps`)
        steps = value
      },
    }
  }

  it('visits at most pattern × topic segments', () => {
    fc.assert(
      fc.property(pattern, topic, (p, t) => {
        matchSegments(p.split('.'), t.split('.'), budget(p.split('.').length * t.split('.').length))
      }),
      { numRuns: 1000 },
    )
  })

  it.each([
    ['*.*.*.*.*.*.*.*.*.z', 44],
    [[...Array(16).fill('*'), ...Array(15).fill('a'), 'z'].join('.'), 128],
    [Array(32).fill('*').join('.'), 128],
  ])('decides %s against a topic of %i segments within pattern × topic steps', (p, segments) => {
    const meter = budget(p.split('.').length * segments)
    expect(matchSegments(p.split('.'), Array(segments).fill('a'), meter)).toBe(!p.endsWith('z'))
    expect(meter.steps).toBeGreaterThan(0)
  })
})
