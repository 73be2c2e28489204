import { describe, expect, it } from 'vitest'
import { nameWithUnit, unitSuffix } from '../src/prometheus-names.js'

describe('Prometheus names of OpenTelemetry units (the specification’s conversion)', () => {
  it.each([
    ['ms', false, 'milliseconds'],
    ['s', true, 'seconds'],
    ['By', false, 'bytes'],
    ['KiBy', false, 'kibibytes'],
    ['By/s', false, 'bytes_per_second'],
    ['{request}/s', false, 'per_second'],
    ['1/s', false, 'per_second'],
    ['%', true, 'percent'],
    ['1', true, 'ratio'],
    ['1', false, undefined],
    ['{delivery}', true, undefined],
    ['', false, undefined],
    ['widgets', false, 'widgets'],
  ])('%s (gauge: %s) is %s', (unit, gauge, suffix) => {
    expect(unitSuffix(unit, gauge)).toBe(suffix)
  })

  it('adds the suffix to the name unless it is already there', () => {
    expect(nameWithUnit('delivery_latency', 'ms', false)).toBe('delivery_latency_milliseconds')
    expect(nameWithUnit('outflow.queue.lag', 's', true)).toBe('outflow.queue.lag_seconds')
    expect(nameWithUnit('http.server.duration.seconds', 's', false)).toBe('http.server.duration.seconds')
    expect(nameWithUnit('outflow.queue.depth', '{delivery}', true)).toBe('outflow.queue.depth')
  })
})
