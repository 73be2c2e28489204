import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { sqlite } from '../../src/storage/sqlite.js'

const redoclyCli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js')

describe('the served OpenAPI document under Redocly', () => {
  it('lints with 0 errors and 0 warnings under @redocly/cli lint (recommended rules)', async () => {
    const outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false, jwtSecret: 'openapi-lint-jwt-0123456789' })
    const dir = mkdtempSync(join(tmpdir(), 'outflow-openapi-'))
    try {
      const response = await outflow.fetch(new Request('http://outflow.test/api/v1/openapi.json'))
      expect(response.status).toBe(200)
      const file = join(dir, 'openapi.json')
      writeFileSync(file, await response.text())
      // The CLI itself, as a user runs it; no config file in its directory, so the recommended rules apply.
      // It exits 1 when there are errors; the report is on stdout either way.
      const { stdout } = await promisify(execFile)(process.execPath, [redoclyCli, 'lint', file, '--format=json'], {
        cwd: dir,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
      const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string; location: { pointer: string }[] }[] }
      expect(report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual([])
      expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
    } finally {
      await outflow.close()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
