import { createRequire } from 'node:module'
import { cruise, type IReporterOutput } from 'dependency-cruiser'
import { describe, expect, it } from 'vitest'

const require = createRequire(import.meta.url)

/** Runs dependency-cruiser with the repo's layer rules over src/ and adapters/. */
async function violations(): Promise<string[]> {
  const config = require('../.dependency-cruiser.cjs') as { forbidden: unknown[]; options: Record<string, unknown> }
  const result: IReporterOutput = await cruise(['src', 'adapters'], { ...config.options, validate: true, ruleSet: { forbidden: config.forbidden } } as never)
  const output = result.output as { modules: unknown[]; summary: { violations: { rule: { name: string }; from: string; to: string; cycle?: { name: string }[] }[] } }
  expect(output.modules.length).toBeGreaterThan(50)
  return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}${v.cycle ? ` (${v.cycle.map((c) => c.name).join(' -> ')})` : ''}`)
}

describe('architecture', () => {
  it('has no import circle and no import that runs up a layer (DESIGN §1)', async () => {
    expect(await violations()).toEqual([])
  })
})
