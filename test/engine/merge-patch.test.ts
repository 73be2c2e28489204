import { describe, expect, it } from 'vitest'
import { mergePatch } from '../../src/engine/merge-patch.js'

describe('mergePatch (RFC 7396)', () => {
  // RFC 7396, Appendix A: every example, target and patch to result.
  it.each([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('merges %j with %j into %j', (target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected)
  })

  it('merges nested objects key by key, keeping the keys the patch does not name', () => {
    expect(mergePatch({ a: 1, b: { c: 2, d: { e: 3, f: 4 } } }, { b: { d: { e: 5 } } })).toEqual({ a: 1, b: { c: 2, d: { e: 5, f: 4 } } })
  })

  it('leaves the target unchanged and returns a new object', () => {
    const target = { a: 1, b: { c: 2 } }
    const result = mergePatch(target, { a: null, b: { c: 3 } })
    expect(target).toEqual({ a: 1, b: { c: 2 } })
    expect(result).toEqual({ b: { c: 3 } })
  })

  it('keeps __proto__ and constructor as own, enumerable, writable keys, never as the prototype', () => {
    const patch = JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}') as unknown
    const result = mergePatch({}, patch) as Record<string, unknown>
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.keys(result)).toEqual(['__proto__', 'constructor'])
    expect(Object.getOwnPropertyDescriptor(result, '__proto__')).toEqual({ value: { polluted: true }, enumerable: true, writable: true, configurable: true })
    expect(JSON.parse(JSON.stringify(result))).toEqual(JSON.parse('{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}'))
  })

  it('merges into an own __proto__ key of the target, not into Object.prototype', () => {
    const target = JSON.parse('{"__proto__": {"a": 1}}') as unknown
    const result = mergePatch(target, JSON.parse('{"__proto__": {"b": 2}}')) as Record<string, unknown>
    expect(Object.getOwnPropertyDescriptor(result, '__proto__')?.value).toEqual({ a: 1, b: 2 })
  })

  it('does not read an inherited key of the target as its own', () => {
    // `toString` is inherited from Object.prototype: the patch's object is merged into nothing, not into a function.
    expect(mergePatch({}, { toString: { a: 1 } })).toEqual({ toString: { a: 1 } })
  })

  it('a key whose value is deleted and set again by nested patches stays deletable', () => {
    const once = mergePatch({ a: { b: 1 } }, { a: { c: 2 } }) as Record<string, unknown>
    expect(mergePatch(once, { a: null })).toEqual({})
  })
})
