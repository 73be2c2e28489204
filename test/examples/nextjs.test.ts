import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { verifyWebhook } from '../../src/verify.js'
import { entrySources } from '../docs/samples.js'
import { chromiumAvailable, launchBrowser } from '../portal/browser.js'
import { npm, npmEnv, packPackage, registryReachable } from '../support/packed-package.js'
import { freePort } from '../support/pg-cluster.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// examples/nextjs as a user runs it: a copy of the example with the packed package installed, built with
// `next build` and served by `next start` on Postgres, then `next dev` on SQLite, each driven over HTTP
// (and the portal in Chromium) with a real webhook receiver.

const run = promisify(execFile)
const root = resolve(import.meta.dirname, '../..')
const example = join(root, 'examples/nextjs')
const adminKey = 'nextjs-example-admin-key-0123'
const admin = { authorization: `Bearer ${adminKey}` }
const keys = { OUTFLOW_API_KEY: adminKey, OUTFLOW_JWT_SECRET: 'nextjs-example-jwt-secret-0123', OUTFLOW_ALLOW_PRIVATE_NETWORKS: 'true' }
/** The line lib/outflow.ts logs once per engine it creates. */
const engineStarted = /outflow: engine started in process \d+ \((postgres|sqlite)\)/g

/**
 * The packed build has no .d.ts (they take minutes to make): `next build` type-checks the app against this
 * checkout's sources instead, each entry point declared as a re-export of its source file (test/docs maps them
 * the same way), reached through a `paths` alias that only these type declarations use.
 */
function typeAgainstSources(app: string): void {
  const declarations = Object.entries(entrySources).map(([entry, source]) => `declare module 'outflow${entry.slice(1)}' {\n  export * from 'outflow-sources/${source.replace(/\.ts$/, '')}'\n}\n`)
  writeFileSync(join(app, 'outflow-sources.d.ts'), declarations.join(''))
  const tsconfig = JSON.parse(readFileSync(join(app, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } }
  tsconfig.compilerOptions.paths['outflow-sources/*'] = [`${root}/*`]
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify(tsconfig, null, 2))
}

/** Next.js as a user runs it: no npm_* or vitest variables, no NODE_ENV (next sets it), no telemetry. */
function nextEnv(env: Record<string, string>): Record<string, string> {
  const inherited = Object.entries(npmEnv).filter(([name]) => name !== 'NODE_ENV' && !name.startsWith('VITEST'))
  return { ...(Object.fromEntries(inherited) as Record<string, string>), NEXT_TELEMETRY_DISABLED: '1', ...env }
}

interface NextServer {
  origin: string
  /** How many engines the server's processes have logged starting. */
  engines(): number
  output(): string
  stop(): Promise<void>
}

/** `next <command>` in `app` on a free port, once it says it is ready. */
async function startNext(app: string, command: 'start' | 'dev', env: Record<string, string>): Promise<NextServer> {
  const port = await freePort()
  // A process group of its own: whatever next starts is stopped with it.
  const proc: ChildProcess = spawn(process.execPath, [join(app, 'node_modules/next/dist/bin/next'), command, '-H', '127.0.0.1', '-p', String(port)], {
    cwd: app,
    env: nextEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  })
  let output = ''
  proc.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  const server: NextServer = {
    origin: `http://127.0.0.1:${port}`,
    engines: () => output.match(engineStarted)?.length ?? 0,
    output: () => output,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return
      process.kill(-proc.pid!, 'SIGTERM')
      const killer = setTimeout(() => process.kill(-proc.pid!, 'SIGKILL'), 10_000)
      await exited
      clearTimeout(killer)
    },
  }
  try {
    await waitFor(() => /Ready in/.test(output) || proc.exitCode !== null, 60_000, `next ${command} to be ready`)
    if (proc.exitCode !== null) throw new Error(`next ${command} exited with ${proc.exitCode}`)
  } catch (error) {
    await server.stop()
    throw new Error(`${(error as Error).message}:\n${output}`)
  }
  return server
}

async function timed<T>(timings: string[], what: string, work: () => Promise<T>): Promise<T> {
  const started = performance.now()
  const result = await work()
  timings.push(`${what} ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return result
}

/** A JSON call to the example's API, with the admin key unless `headers` says otherwise. */
async function api(server: NextServer, method: string, path: string, body?: unknown, headers: Record<string, string> = admin) {
  const res = await fetch(`${server.origin}/api/v1${path}`, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

/**
 * Over the example's /api/v1 with the admin key: a tenant, a webhook destination to `receiverUrl`, a published
 * event; resolves once the receiver got it signed (checked with outflow/verify) and the delivery log shows it.
 */
async function deliverThroughApi(server: NextServer, receiver: Awaited<ReturnType<typeof startReceiver>>, tenant: string) {
  expect((await api(server, 'PUT', `/tenants/${tenant}`)).status).toBe(201)
  const destination = await api(server, 'POST', `/tenants/${tenant}/destinations`, { type: 'webhook', topics: ['order.*'], config: { url: `${receiver.url}/${tenant}` } })
  expect(destination.status).toBe(201)
  const eventId = `${tenant}-order-1`
  const published = await api(server, 'POST', '/publish', { id: eventId, tenant_id: tenant, topic: 'order.created', data: { total: 42 } })
  expect(published.status).toBe(202)
  const [received] = await waitFor(() => receiver.on(`/${tenant}`).length > 0 && receiver.on(`/${tenant}`), 30_000, 'the webhook to arrive')
  expect(received!.body).toBe('{"total":42}')
  const verified = await verifyWebhook(received!.body, received!.headers as Record<string, string>, { secret: destination.body.credentials.secret as string })
  expect(verified).toMatchObject({ id: eventId, payload: { total: 42 }, scheme: 'v1' })
  const attempts = await waitFor(async () => {
    const log = await api(server, 'GET', `/tenants/${tenant}/events/${eventId}/deliveries`)
    return log.body.length > 0 && log.body
  }, 15_000, 'the delivery log to show the attempt')
  expect(attempts).toEqual([expect.objectContaining({ destination_id: destination.body.id, status: 'success', response_status_code: 200, response_body: 'ok' })])
  return { destination: destination.body }
}

const reachable = await registryReachable('the Next.js example test')

describe.runIf(reachable && postgresAvailable)('the Next.js example (examples/nextjs)', { timeout: 60_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'outflow-nextjs-'))
  const app = join(dir, 'app')
  const timings: string[] = []
  let receiver: Awaited<ReturnType<typeof startReceiver>>

  beforeAll(async () => {
    // The example as committed, without what a local run of it leaves behind.
    cpSync(example, app, { recursive: true, filter: (path) => !/^(node_modules|\.next|next-env\.d\.ts|.*\.tsbuildinfo|outflow\.db.*)$/.test(relative(example, path).split('/')[0]!) })
    // Its dependencies from the registry while the package builds; outflow then from the tarball. better-sqlite3
    // compiles from source for minutes where no prebuilt binary can be fetched: this checkout's build is linked in.
    const manifest = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }
    delete manifest.dependencies.outflow
    delete manifest.dependencies['better-sqlite3']
    writeFileSync(join(app, 'package.json'), JSON.stringify(manifest, null, 2))
    const [{ tarball }] = await Promise.all([timed(timings, 'pack', () => packPackage(dir)), timed(timings, 'npm install', () => npm(['install', '--prefer-offline'], app, 300_000))])
    await timed(timings, 'npm install outflow', () => npm(['install', '--prefer-offline', tarball], app))
    symlinkSync(realpathSync(join(root, 'node_modules/better-sqlite3')), join(app, 'node_modules/better-sqlite3'), 'dir')
    typeAgainstSources(app)
    await timed(timings, 'next build', () =>
      run(process.execPath, [join(app, 'node_modules/next/dist/bin/next'), 'build'], { cwd: app, env: nextEnv({}), timeout: 300_000 }).catch((error: { stdout?: string; stderr?: string; message: string }) => {
        throw new Error(`next build failed: ${error.message}\n${error.stdout ?? ''}${error.stderr ?? ''}`)
      }),
    )
    console.log(`[outflow nextjs example] ${timings.join(', ')}`)
    receiver = await startReceiver()
  }, 600_000)

  afterAll(async () => {
    await receiver?.close()
    await rm(dir, { recursive: true, force: true })
  }, 300_000)

  describe('next start on Postgres', () => {
    let server: NextServer
    let db: Awaited<ReturnType<typeof createTestDatabase>>

    beforeAll(async () => {
      db = await createTestDatabase()
      server = await startNext(app, 'start', { ...keys, DATABASE_URL: db.url, OUTFLOW_ENCRYPTION_KEY: 'nextjs-example-encryption-key-0123' })
    })
    afterAll(async () => {
      await server?.stop()
      await db?.drop()
    })

    it('creates one engine for the process when the first requests arrive together on the API and portal routes', async () => {
      const answers = await Promise.all([
        ...Array.from({ length: 6 }, () => fetch(`${server.origin}/api/v1/tenants`, { headers: admin })),
        ...Array.from({ length: 4 }, () => fetch(`${server.origin}/portal/`)),
        ...Array.from({ length: 2 }, () => fetch(`${server.origin}/api/v1/healthz`)),
      ])
      expect(answers.map((res) => res.status)).toEqual(Array(12).fill(200))
      expect(server.engines()).toBe(1)
      expect(server.output()).toContain('(postgres)')
    })

    it('answers 401 without the admin key, and OPTIONS with the methods of a path', async () => {
      const anonymous = await api(server, 'GET', '/tenants', undefined, {})
      expect(anonymous.status).toBe(401)
      expect(anonymous.body).toEqual({ status: 401, message: 'missing credentials: send Authorization: Bearer <token>' })
      expect((await api(server, 'GET', '/tenants', undefined, { authorization: 'Bearer not-the-key' })).status).toBe(401)
      const options = await fetch(`${server.origin}/api/v1/tenants/acme`, { method: 'OPTIONS' })
      expect(options.status).toBe(204)
      expect(options.headers.get('allow')).toBe('GET, PUT, DELETE, OPTIONS')
      expect((await api(server, 'GET', '/no-such-route')).status).toBe(404)
    })

    it('delivers an event published over /api/v1 to a webhook created over /api/v1, and logs the attempt', async () => {
      await deliverThroughApi(server, receiver, 'acme')
    })

    it('serves the portal: /portal redirects to /portal/, whose page and assets load', async () => {
      const bare = await fetch(`${server.origin}/portal`, { redirect: 'manual' })
      expect(bare.status).toBe(308)
      expect(new URL(bare.headers.get('location')!, `${server.origin}/portal`).href).toBe(`${server.origin}/portal/`)
      const page = await fetch(`${server.origin}/portal/`)
      expect(page.status).toBe(200)
      expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8')
      expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
      const html = await page.text()
      const assets = [...html.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map(([, asset]) => asset!)
      expect(assets.length).toBeGreaterThanOrEqual(2)
      // Byte for byte the package's files, whatever Next.js did to compress them on the way.
      for (const asset of assets) {
        const res = await fetch(`${server.origin}/portal/${asset}`)
        expect(res.status).toBe(200)
        expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(app, 'node_modules/outflow/dist/portal', asset))), asset).toBe(true)
      }
      expect((await fetch(`${server.origin}/portal/`, { method: 'HEAD' })).status).toBe(200)
    })

    it.runIf(chromiumAvailable)('opens the portal in Chromium through the sign-in link from /api/v1, showing the tenant’s destination', async () => {
      const { body } = await api(server, 'GET', '/tenants/acme/portal')
      expect(body.redirect_url).toMatch(new RegExp(`^${server.origin}/portal/\\?code=[\\w-]{43}$`))
      const browser = await launchBrowser()
      try {
        const page = await browser.context.newPage()
        await page.goto(body.redirect_url)
        await page.getByRole('heading', { name: 'Destinations', level: 1 }).waitFor()
        await page.getByText(`127.0.0.1:${receiver.port}`).first().waitFor()
        expect(browser.problems).toEqual([])
      } finally {
        await browser.close()
      }
    })

    it('has still created one engine after all of the above', () => {
      expect(server.engines()).toBe(1)
    })
  })

  describe('next dev on SQLite', () => {
    let server: NextServer

    beforeAll(async () => {
      server = await startNext(app, 'dev', { ...keys, OUTFLOW_DB: join(dir, 'dev.db') })
    })
    afterAll(() => server?.stop())

    it('delivers on SQLite and keeps its one engine when lib/outflow.ts is edited and reloaded', { timeout: 120_000 }, async () => {
      await deliverThroughApi(server, receiver, 'initech')
      expect(server.engines()).toBe(1)
      expect(server.output()).toContain('(sqlite)')
      // An edit that shows in every answer: once it does, the module holding the engine has been evaluated again.
      const lib = join(app, 'lib/outflow.ts')
      const source = readFileSync(lib, 'utf8')
      const edited = source.replace('  return outflow.fetch(request)\n', "  const response = await outflow.fetch(request)\n  response.headers.set('x-edited', 'yes')\n  return response\n")
      expect(edited).not.toBe(source)
      writeFileSync(lib, edited)
      await waitFor(async () => (await fetch(`${server.origin}/api/v1/healthz`)).headers.get('x-edited') === 'yes', 60_000, 'the edit to be reloaded')
      const tenant = await api(server, 'GET', '/tenants/initech')
      expect(tenant.status).toBe(200)
      expect(tenant.headers.get('x-edited')).toBe('yes')
      expect(server.engines()).toBe(1)
    })
  })
})
