import { describe, expect, it } from 'vitest'
import { canonicalJson, sendsThin } from '../../src/delivery/thin-payload.js'
import type { DeliveryMessage } from '../../src/destinations/types.js'

describe('canonicalJson', () => {
  it('sorts object keys at every level in code-unit order, keeping array order', () => {
    expect(canonicalJson({ b: 1, a: [{ z: true, y: null }, 'x'], '10': 0, '2': 0, é: 1, Z: 1 })).toBe('{"10":0,"2":0,"Z":1,"a":[{"y":null,"z":true},"x"],"b":1,"é":1}')
  })

  it('writes numbers and strings as JSON.stringify does, and is what JSON.parse reads back', () => {
    const value = { n: [1e21, -0, 0.1, 5e-7], s: 'line\nquote" ☕ \u2028' }
    expect(JSON.parse(canonicalJson(value))).toEqual({ ...value, n: [1e21, 0, 0.1, 5e-7] })
    expect(canonicalJson(value)).toBe(`{"n":[1e+21,0,0.1,5e-7],"s":${JSON.stringify(value.s)}}`)
  })

  it('gives the same text for the same data in any key order (a jsonb round trip)', () => {
    expect(canonicalJson({ a: 1, bb: { c: 2, d: 3 } })).toBe(canonicalJson(JSON.parse('{"bb":{"d":3,"c":2},"a":1}')))
  })
})

describe('sendsThin', () => {
  const message = (data: unknown) => ({ data, metadata: { 'event-id': 'evt_1' } }) as unknown as DeliveryMessage
  const bytes = (data: unknown) => Buffer.byteLength(JSON.stringify(data))

  it('follows "thin" and "full" whatever the size or the type', () => {
    expect(sendsThin('thin', undefined, message({}))).toBe(true)
    expect(sendsThin('full', 10, message({ big: 'x'.repeat(100) }))).toBe(false)
  })

  it('goes thin above thin_above_bytes only, counting the JSON bytes of the data (UTF-8)', () => {
    const data = { s: 'é'.repeat(10) }
    expect(sendsThin({ thin_above_bytes: bytes(data) }, undefined, message(data))).toBe(false)
    expect(sendsThin({ thin_above_bytes: bytes(data) - 1 }, undefined, message(data))).toBe(true)
  })

  it('without a policy, stays full for a type without a limit and goes thin past a broker limit', () => {
    expect(sendsThin(undefined, undefined, message({ big: 'x'.repeat(1_000_000) }))).toBe(false)
    expect(sendsThin(null, 256 * 1024, message({ big: 'x'.repeat(200 * 1024) }))).toBe(false)
    expect(sendsThin(null, 256 * 1024, message({ big: 'x'.repeat(256 * 1024) }))).toBe(true)
  })
})
