import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { entrySources } from './samples.js'

const root = join(import.meta.dirname, '../..')
const typedocConfig = JSON.parse(readFileSync(join(root, 'typedoc.json'), 'utf8')) as { entryPoints: string[] }

/** TypeDoc's conversion and validation without writing the site: its exit code and what it reported. */
function validateApiReference(): Promise<{ code: number; lines: string[] }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [join(root, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--emit', 'none'], { cwd: root, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0
      // Without the terminal colours TypeDoc adds.
      const lines = `${stdout}\n${stderr}`.replace(/\x1b\[[0-9;]*m/g, '').split('\n')
      resolve({ code, lines })
    })
  })
}

describe('the API reference (npm run docs)', () => {
  it('is generated from every package entry point of package.json exports', () => {
    expect([...typedocConfig.entryPoints].sort()).toEqual(Object.values(entrySources).sort())
  })

  it('has a comment on every exported symbol, class member and named property, and no broken link', async () => {
    const { code, lines } = await validateApiReference()
    // TypeDoc's note that two declarations of one property both have comments is no validation failure.
    const problems = lines.filter((line) => /^\[(warning|error)\]/.test(line) && !/multiple declarations with a comment|^\[warning\] Found \d+ errors/.test(line))
    expect(problems).toEqual([])
    expect(code).toBe(0)
  }, 300_000)
})
