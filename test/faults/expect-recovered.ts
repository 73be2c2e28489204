import { expect } from 'vitest'
import type { ScenarioResult } from './scenarios.js'

/** What every scenario must show: nothing acknowledged lost, no 500 and no hang, the engine alive and delivering. */
export function expectRecovered(r: ScenarioResult) {
  expect(r.engineErrors.filter((line) => !line.startsWith('{'))).toEqual([]) // no crash output
  expect(r.alive).toBe(true)
  expect(r.bad).toEqual([])
  expect(r.published).toBeGreaterThan(0)
  expect(r.lost).toBe(0)
  expect(r.unrecorded, `not recorded as a success: ${JSON.stringify(r.unrecordedSample)}`).toBe(0)
  expect(r.deliveredAfterFault).toBeGreaterThan(0)
}
