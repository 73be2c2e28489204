import { createHmac } from 'node:crypto'
import { execFile, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../support/receiver.js'
import { npm, type PackedPackage, packPackage, registryReachable } from '../support/packed-package.js'

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string; dependencies: Record<string, string>; devDependencies: Record<string, string>; peerDependencies: Record<string, string> }
/** A probe that hangs fails within this (its output in the error). */
const probeTimeout = { timeout: 60_000 }

/** Every installed package under node_modules (nested ones too) with its size in bytes. */
function installed(dir: string): { names: string[]; bytes: number } {
  const names: string[] = []
  const size = (path: string): number => {
    const stat = statSync(path)
    if (!stat.isDirectory()) return stat.size
    return readdirSync(path).reduce((sum, entry) => sum + size(join(path, entry)), 0)
  }
  const walk = (modules: string) => {
    for (const entry of readdirSync(modules)) {
      if (entry.startsWith('.')) continue
      const dirs = entry.startsWith('@') ? readdirSync(join(modules, entry)).map((e) => join(entry, e)) : [entry]
      for (const name of dirs) {
        names.push(name)
        const nested = join(modules, name, 'node_modules')
        if (statSync(nested, { throwIfNoEntry: false })?.isDirectory()) walk(nested)
      }
    }
  }
  walk(join(dir, 'node_modules'))
  return { names: names.sort(), bytes: size(join(dir, 'node_modules')) }
}

/** The same checks in each module system: tables migrated, a tenant token signed and verified, a webhook delivered and signed, the built portal found and served. */
const probeBody = `
  const receiver = http.createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => { res.end('ok'); received(req.headers, body) })
  })
  let received
  const delivered = new Promise((resolve) => (received = (headers, body) => resolve({ headers, body })))
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  try {
    const outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), apiKey: 'consumer-admin-key-0123', jwtSecret: 'consumer-jwt-secret-0123', allowPrivateNetworks: true })
    await outflow.upsertTenant('acme')
    const { token } = await outflow.getTenantToken('acme')
    const res = await outflow.fetch(new Request('http://x/api/v1/tenants/acme', { headers: { authorization: 'Bearer ' + token } }))
    const page = await outflow.fetch(new Request('http://x/portal/'))
    const portal = page.status + ' ' + page.headers.get('content-type') + ' ' + /assets\\/main-\\w+\\.js/.test(await page.text())
    await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: 'http://127.0.0.1:' + receiver.address().port + '/hook' } })
    await outflow.publish({ id: 'evt-1', tenant_id: 'acme', topic: 'order.created', data: { total: 42 } })
    const { headers, body } = await delivered
    await outflow.close()
    return { status: res.status, body, webhookId: headers['webhook-id'], signed: /^v1,/.test(headers['webhook-signature']), error: typeof OutflowError, portal }
  } finally {
    receiver.close()
    receiver.closeAllConnections()
  }`
const expected = { status: 200, body: '{"total":42}', webhookId: 'evt-1', signed: true, error: 'function', portal: '200 text/html; charset=utf-8 true' }

const reachable = await registryReachable('the consumer install test')

describe.runIf(reachable)('a consumer project installing the packed tarball', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-consumer-'))
  const consumer = join(dir, 'consumer')
  const alone = join(dir, 'alone')
  let packed: PackedPackage
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  beforeAll(async () => {
    for (const project of [consumer, alone]) {
      mkdirSync(project)
      writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true }))
    }
    // Jest from the registry while the package builds (it is not one of this repository's dependencies).
    const [built] = await Promise.all([packPackage(dir), npm(['install', '--prefer-offline', 'jest@30'], consumer)])
    packed = built
    await Promise.all([npm(['install', '--prefer-offline', packed.tarball], consumer), npm(['install', '--prefer-offline', packed.tarball], alone)])
    // better-sqlite3 compiles from source for minutes where no prebuilt binary can be fetched: the
    // consumer gets this checkout's built copy, linked in after npm has finished with node_modules.
    symlinkSync(realpathSync(join(root, 'node_modules/better-sqlite3')), join(consumer, 'node_modules/better-sqlite3'), 'dir')
  }, 300_000)

  it('ships dist, migrations, package.json, README and LICENSE only', () => {
    const { files } = packed
    expect(files.filter((f) => !/^(dist\/|migrations\/(sqlite|postgres)\/)|^(package\.json|README\.md|LICENSE)$/.test(f))).toEqual([])
    expect(files).toEqual(expect.arrayContaining(['dist/index.js', 'dist/index.cjs', 'dist/cli.js', 'dist/portal/index.html', 'migrations/sqlite/meta/_journal.json', 'migrations/postgres/meta/_journal.json', 'LICENSE']))
    expect(files.filter((f) => f.startsWith('dist/portal/assets/')).map((f) => f.replace(/-\w{8}\./, '.')).sort()).toEqual(['dist/portal/assets/main.css', 'dist/portal/assets/main.js'])
  })

  it('installs only its dependencies: no dev-only package and no optional peer', () => {
    const { names, bytes } = installed(alone)
    const devOnly = Object.keys(pkg.devDependencies).filter((name) => !(name in pkg.dependencies))
    const optionalPeers = Object.keys(pkg.peerDependencies)
    console.log(`[outflow consumer install] npm install outflow: ${names.length} packages, ${(bytes / 2 ** 20).toFixed(1)} MiB of node_modules (${names.join(' ')})`)
    expect(names.filter((name) => devOnly.includes(name) || optionalPeers.includes(name))).toEqual([])
    expect(names).toEqual(expect.arrayContaining(['outflow', ...Object.keys(pkg.dependencies)]))
    // Outflow's own dependencies and theirs; a jump here means something heavy joined the install path.
    // 17 since the event catalog: ajv (with fast-deep-equal, fast-uri, json-schema-traverse, require-from-string), ajv-formats, yaml.
    expect(names.length).toBeLessThanOrEqual(17)
  })

  it('has npm pick, for `npm install outflow better-sqlite3`, the better-sqlite3 that runs on this Node: 12 on 20, 13 on 24', async () => {
    // better-sqlite3 13 needs Node 22 (it crashes on 20) and 12 aborts Node 24 processes (docs/testing.md): the peer
    // range takes both, and npm prefers the versions whose engines take the Node it runs on.
    const picker = join(dir, 'picker')
    mkdirSync(picker)
    writeFileSync(join(picker, 'package.json'), JSON.stringify({ name: 'picker', private: true }))
    await npm(['install', '--package-lock-only', '--ignore-scripts', '--prefer-offline', packed.tarball, 'better-sqlite3'], picker)
    const lock = JSON.parse(readFileSync(join(picker, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string }> }
    const major = Number(lock.packages['node_modules/better-sqlite3']!.version.split('.')[0])
    const node = Number(process.versions.node.split('.')[0])
    expect(node < 22 ? [12] : node >= 24 ? [13] : [12, 13]).toContain(major)
  })

  it('runs as ESM (import)', async () => {
    writeFileSync(join(consumer, 'probe.mjs'), `import http from 'node:http'\nimport { createOutflow, OutflowError } from 'outflow'\nimport { sqlite } from 'outflow/sqlite'\nconsole.log(JSON.stringify(await (async () => {${probeBody}})()))`)
    const { stdout } = await run(process.execPath, ['probe.mjs'], { cwd: consumer, ...probeTimeout })
    expect(JSON.parse(stdout)).toEqual(expected)
  })

  it('gives receivers outflow/verify, as ESM and as CommonJS, checking a v1 signature', async () => {
    const secret = `whsec_${Buffer.alloc(32, 5).toString('base64')}`
    const timestamp = Math.floor(Date.now() / 1000)
    const signature = createHmac('sha256', Buffer.alloc(32, 5)).update(`evt_1.${timestamp}.{"a":1}`).digest('base64')
    const headers = JSON.stringify({ 'webhook-id': 'evt_1', 'webhook-timestamp': String(timestamp), 'webhook-signature': `v1,${signature}` })
    const call = `verifyWebhook('{"a":1}', ${headers}, { secret: '${secret}' }).then((r) => console.log(JSON.stringify(r)))`
    writeFileSync(join(alone, 'verify.mjs'), `import { verifyWebhook } from 'outflow/verify'\n${call}`)
    writeFileSync(join(alone, 'verify.cjs'), `const { verifyWebhook } = require('outflow/verify')\n${call}`)
    for (const file of ['verify.mjs', 'verify.cjs']) {
      const { stdout } = await run(process.execPath, [file], { cwd: alone, ...probeTimeout })
      expect(JSON.parse(stdout), file).toEqual({ id: 'evt_1', timestamp, payload: { a: 1 }, scheme: 'v1' })
    }
  })

  it('runs as CommonJS (require), without require(esm)', async () => {
    writeFileSync(join(consumer, 'probe.cjs'), `const http = require('node:http')\nconst { createOutflow, OutflowError } = require('outflow')\nconst { sqlite } = require('outflow/sqlite')\n;(async () => {${probeBody}})().then((r) => console.log(JSON.stringify(r)))`)
    const { stdout } = await run(process.execPath, ['--no-experimental-require-module', 'probe.cjs'], { cwd: consumer, ...probeTimeout })
    expect(JSON.parse(stdout)).toEqual(expected)
  })

  it('runs as TypeScript under tsx (a CommonJS project: tsx turns the imports into require)', async () => {
    writeFileSync(join(consumer, 'probe.ts'), `import http from 'node:http'\nimport { createOutflow, OutflowError } from 'outflow'\nimport { sqlite } from 'outflow/sqlite'\n;(async (): Promise<unknown> => {${probeBody}})().then((r) => console.log(JSON.stringify(r)))`)
    const { stdout } = await run(process.execPath, [join(root, 'node_modules/tsx/dist/cli.mjs'), 'probe.ts'], { cwd: consumer, ...probeTimeout })
    expect(JSON.parse(stdout)).toEqual(expected)
  })

  it("runs under Jest (its CommonJS sandbox has no require(esm) and no import() without --experimental-vm-modules)", async () => {
    writeFileSync(
      join(consumer, 'outflow.test.js'),
      `const http = require('node:http')\nconst { createOutflow, OutflowError } = require('outflow')\nconst { sqlite } = require('outflow/sqlite')\ntest('publishes and delivers', async () => {\n  expect(await (async () => {${probeBody}})()).toEqual(${JSON.stringify(expected)})\n})\n`,
    )
    const { stderr } = await run(process.execPath, [join(consumer, 'node_modules/jest/bin/jest.js'), '--ci', '--testTimeout=30000', 'outflow.test.js'], { cwd: consumer, ...probeTimeout })
    expect(stderr).toMatch(/Tests:\s+1 passed, 1 total/)
    expect(stderr).not.toMatch(/did not exit/)
  })

  it('has the outflow command: --version, migrate, and serve until SIGTERM', async () => {
    const bin = join(consumer, 'node_modules/.bin/outflow')
    expect((await run(bin, ['--version'], { cwd: consumer })).stdout.trim()).toBe(pkg.version)
    const env = { PATH: process.env.PATH ?? '', OUTFLOW_SQLITE_PATH: join(dir, 'bin.db'), OUTFLOW_API_KEY: 'consumer-admin-key-0123', PORT: '0' }
    await run(bin, ['migrate'], { cwd: consumer, env })
    const server = spawn(bin, ['serve'], { cwd: consumer, env, stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    server.stdout.on('data', (c: Buffer) => (out += c.toString()))
    const exited = new Promise((resolve) => server.on('exit', resolve))
    try {
      const [, url] = await waitFor(() => /"url":"([^"]+)","api"/.exec(out), 30_000, 'the installed outflow to listen')
      expect(await (await fetch(`${url}/healthz`)).json()).toEqual({ status: 'ok' })
    } finally {
      server.kill('SIGTERM')
    }
    expect(await exited).toBe(0)
  })

  it('the outflow command without a storage driver installed says which one to install', async () => {
    const bin = join(alone, 'node_modules/.bin/outflow')
    for (const [env, driver, neededBy] of [
      [{ OUTFLOW_SQLITE_PATH: join(dir, 'none.db') }, 'better-sqlite3', 'SQLite storage'],
      [{ DATABASE_URL: 'postgres://127.0.0.1:1/none' }, 'postgres', 'Postgres storage'],
    ] as const) {
      const failed = await run(bin, ['migrate'], { cwd: alone, env: { PATH: process.env.PATH ?? '', ...env } }).then(
        () => ({ code: 0, stderr: '' }),
        (error: { code: number; stderr: string }) => error,
      )
      expect(failed.code).toBe(1)
      expect(failed.stderr).toBe(`outflow: the optional package "${driver}" is needed by ${neededBy} but is not installed: npm install ${driver}\n`)
    }
  })
})
