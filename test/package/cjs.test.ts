import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')

/**
 * The CommonJS build must load where require(esm) is not available (tsx's CJS mode, Jest, ts-node):
 * it carries the ESM-only dependencies (jose, p-queue) inside. Built here into a temp folder.
 */
describe('the CommonJS build', () => {
  // Inside the checkout (.tmp/ is ignored) so the bundle resolves node_modules and migrations/ as a package would.
  mkdirSync(join(root, '.tmp'), { recursive: true })
  const out = mkdtempSync(join(root, '.tmp', 'cjs-'))
  beforeAll(async () => {
    await run(process.execPath, [join(root, 'node_modules/tsup/dist/cli-default.js'), '--out-dir', out, '--no-dts'], { cwd: root })
  }, 120_000)
  afterAll(() => rmSync(out, { recursive: true, force: true }))

  const probe = (file: string) => `
    const { createOutflow, OutflowError } = require(${JSON.stringify(join(out, 'index.cjs'))})
    const { sqlite } = require(${JSON.stringify(join(out, 'sqlite.cjs'))})
    ;(async () => {
      const outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), apiKey: 'a-cjs-test-admin-key', jwtSecret: 'a-cjs-test-jwt-secret' })
      await outflow.upsertTenant('t1')
      const { token } = await outflow.getTenantToken('t1')
      const res = await outflow.fetch(new Request('http://x/api/v1/tenants/t1', { headers: { authorization: 'Bearer ' + token } }))
      console.log(JSON.stringify({ file: ${JSON.stringify(file)}, status: res.status, error: typeof OutflowError }))
      await outflow.close()
    })().catch((e) => { console.error(e); process.exit(1) })`

  it('loads and signs and verifies a tenant token under node without require(esm)', async () => {
    const { stdout } = await run(process.execPath, ['--no-experimental-require-module', '-e', probe('node')], { cwd: root })
    expect(JSON.parse(stdout.trim())).toEqual({ file: 'node', status: 200, error: 'function' })
  })

  it('loads under tsx in CommonJS mode', async () => {
    const file = join(out, 'probe.cts')
    writeFileSync(file, probe('tsx'))
    const { stdout } = await run(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), file], { cwd: root })
    expect(JSON.parse(stdout.trim())).toEqual({ file: 'tsx', status: 200, error: 'function' })
  })
})
