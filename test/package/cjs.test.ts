import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')

/**
 * The CommonJS build must load where require(esm) is not available (tsx's CJS mode, Jest, ts-node):
 * it carries the ESM-only dependencies (jose, p-queue) inside. Built here into a temp folder; the
 * `outflow/nestjs` entry is loaded from it in both module systems.
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

  // Nest 12 is ESM only: a CommonJS host requires it through require(esm), as Nest documents.
  const nestProbe = (system: 'esm' | 'cjs') => {
    const ext = system === 'esm' ? 'js' : 'cjs'
    const load = (file: string) => (system === 'esm' ? `await import(${JSON.stringify(join(out, `${file}.${ext}`))})` : `require(${JSON.stringify(join(out, `${file}.${ext}`))})`)
    return `
    ;(async () => {
      const { Outflow } = ${load('index')}
      const { OutflowModule } = ${load('nestjs')}
      const { sqlite } = ${load('sqlite')}
      const { Module } = ${system === 'esm' ? "await import('@nestjs/common')" : "require('@nestjs/common')"}
      const { NestFactory } = ${system === 'esm' ? "await import('@nestjs/core')" : "require('@nestjs/core')"}
      class AppModule {}
      Module({ imports: [OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), apiKey: 'a-nest-test-admin-key', jwtSecret: 'a-nest-test-jwt-secret' })] })(AppModule)
      const context = await NestFactory.createApplicationContext(AppModule, { logger: false, abortOnError: false })
      const outflow = context.get(Outflow)
      await outflow.upsertTenant('t1')
      await context.close()
      console.log(JSON.stringify({ system: ${JSON.stringify(system)}, engine: outflow instanceof Outflow, closed: outflow.closed }))
    })().catch((e) => { console.error(e); process.exit(1) })`
  }

  it.each(['esm', 'cjs'] as const)('outflow/nestjs (%s) provides, under the Outflow class of `outflow`, an engine it closes with the app', async (system) => {
    const file = join(out, `nest-probe.${system === 'esm' ? 'mjs' : 'cjs'}`)
    writeFileSync(file, nestProbe(system))
    const { stdout } = await run(process.execPath, [file], { cwd: root })
    expect(JSON.parse(stdout.trim())).toEqual({ system, engine: true, closed: true })
  })

  /** Every module specifier the built file reaches through its relative imports (chunks), itself excluded. */
  const reached = (file: string): string[] => {
    const found = new Set<string>()
    const visit = (name: string, seen: Set<string>) => {
      if (seen.has(name)) return
      seen.add(name)
      const text = readFileSync(join(out, name), 'utf8')
      for (const [, , specifier] of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\()(['"])([^'"]+)\1/g)) {
        if (specifier!.startsWith('./')) visit(specifier!.slice(2), seen)
        else found.add(specifier!)
      }
    }
    visit(file, new Set())
    return [...found]
  }

  it('builds outflow/client, ESM and CommonJS, with nothing but its own chunks: no Node built-in, no package', async () => {
    expect(reached('client.js')).toEqual([])
    expect(reached('client.cjs')).toEqual([])
    // And it runs: a refused connection is an OutflowError of status 0 in both.
    const probe = (load: string) => `${load}
      const client = new OutflowClient({ baseUrl: 'http://127.0.0.1:1/api/v1', apiKey: 'k', retry: false })
      client.getTenant('acme').catch((e) => console.log(JSON.stringify({ error: e instanceof OutflowError, status: e.status, code: e.code })))`
    const esm = join(out, 'client-probe.mjs')
    writeFileSync(esm, probe(`import { OutflowClient, OutflowError } from ${JSON.stringify(join(out, 'client.js'))}`))
    const runs = [
      run(process.execPath, [esm], { cwd: root }),
      run(process.execPath, ['--no-experimental-require-module', '-e', probe(`const { OutflowClient, OutflowError } = require(${JSON.stringify(join(out, 'client.cjs'))})`)], { cwd: root }),
    ]
    for (const { stdout } of await Promise.all(runs)) expect(JSON.parse(stdout.trim())).toEqual({ error: true, status: 0, code: 'unavailable' })
  })
})
