import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { variables } from '../../src/cli/settings.js'
import { sdkPackages } from '../../src/cli/telemetry.js'
import { waitFor } from '../support/receiver.js'
import { readYamlSubset } from '../support/yaml-subset.js'

/*
 * Docker cannot build or run here (the client is installed, no daemon), and Debian's archive has no
 * Dockerfile linter (hadolint is not packaged): these tests check the structure of Dockerfile and
 * compose.yaml, run the image's health check command against a real `outflow serve`, and check that
 * the versions the image installs are the ones package.json is tested with.
 */

const root = join(import.meta.dirname, '../..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { bin: Record<string, string>; devDependencies: Record<string, string> }
const knownVariables = new Set(variables.map((x) => x.name))

interface Instruction {
  name: string
  args: string
}

/** The Dockerfile's instructions per stage (continuation lines joined, comments dropped). */
function stages(text: string): { from: string; instructions: Instruction[] }[] {
  const joined = text
    .split('\n')
    .filter((line) => !line.trimStart().startsWith('#'))
    .join('\n')
    .replace(/\\\n/g, ' ')
  const result: { from: string; instructions: Instruction[] }[] = []
  for (const line of joined.split('\n')) {
    const match = /^\s*([A-Z]+)\s+(.*)$/.exec(line)
    if (!match) continue
    const [, name, args] = match as unknown as [string, string, string]
    if (name === 'FROM') result.push({ from: args.trim(), instructions: [] })
    else if (result.length > 0) result.at(-1)!.instructions.push({ name, args: args.replace(/\s+/g, ' ').trim() })
  }
  return result
}

const dockerfile = stages(readFileSync(join(root, 'Dockerfile'), 'utf8'))
const runtime = dockerfile.at(-1)!
const all = (stage: { instructions: Instruction[] }, name: string) => stage.instructions.filter((i) => i.name === name)
const one = (stage: { instructions: Instruction[] }, name: string) => {
  const found = all(stage, name)
  expect(found, `${name} in the runtime stage`).toHaveLength(1)
  return found[0]!.args
}
/** `ENV A=1 B=2` of the runtime stage. */
const runtimeEnv = Object.fromEntries(all(runtime, 'ENV').flatMap((i) => [...i.args.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1]!, m[2]!])))

describe('Dockerfile', () => {
  it('builds in stages: the package is built and packed, installed as a consumer would, and only node_modules reach the runtime', () => {
    expect(dockerfile.map((s) => s.from)).toEqual(['node:${NODE_VERSION}-bookworm-slim AS build', 'node:${NODE_VERSION}-bookworm-slim AS install', 'node:${NODE_VERSION}-bookworm-slim'])
    expect(all(dockerfile[0]!, 'RUN').map((r) => r.args)).toEqual(expect.arrayContaining([expect.stringMatching(/npm ci\b/), expect.stringMatching(/npm run build && npm pack/)]))
    expect(all(dockerfile[1]!, 'COPY').map((c) => c.args)).toContain('--from=build /tmp/outflow.tgz /tmp/outflow.tgz')
    expect(all(runtime, 'COPY').map((c) => c.args)).toEqual(['--from=install /app /app'])
    // No compiler, package manager install or build in the runtime stage.
    expect(all(runtime, 'RUN').filter((r) => /apt-get|npm (ci|install)|make|g\+\+/.test(r.args))).toEqual([])
  })

  it('runs as the unprivileged node user, with its data in a volume it owns', () => {
    const user = one(runtime, 'USER')
    expect(user).not.toMatch(/^(root|0)(:|$)/)
    expect(user).toBe('node')
    const userAt = runtime.instructions.findIndex((i) => i.name === 'USER')
    // Nothing runs as root after USER; the entrypoint comes after it.
    expect(runtime.instructions.slice(userAt).filter((i) => i.name === 'RUN')).toEqual([])
    expect(runtime.instructions.findIndex((i) => i.name === 'ENTRYPOINT')).toBeGreaterThan(userAt)
    expect(one(runtime, 'VOLUME')).toBe('/data')
    expect(all(runtime, 'RUN').map((r) => r.args)).toContain('mkdir /data && chown node:node /data')
    expect(runtimeEnv.OUTFLOW_SQLITE_PATH).toMatch(/^\/data\//)
  })

  it('runs `outflow serve` from the installed bin, listening on all interfaces at the exposed port', () => {
    const [bin] = Object.keys(pkg.bin)
    expect(JSON.parse(one(runtime, 'ENTRYPOINT'))).toEqual([`/app/node_modules/.bin/${bin}`])
    expect(JSON.parse(one(runtime, 'CMD'))).toEqual(['serve'])
    expect(runtimeEnv).toMatchObject({ HOST: '0.0.0.0', PORT: one(runtime, 'EXPOSE') })
    for (const name of Object.keys(runtimeEnv)) expect(name === 'NODE_ENV' || knownVariables.has(name), `${name} is an outflow setting`).toBe(true)
  })

  it('installs the drivers and the OpenTelemetry SDK at the versions package.json is tested with', () => {
    const install = all(dockerfile[1]!, 'RUN').find((r) => r.args.includes('npm install'))!.args
    const specs = Object.fromEntries([...install.matchAll(/\s((?:@[\w.-]+\/)?[\w.-]+)@(\^[\w.-]+)/g)].map((m) => [m[1]!, m[2]!]))
    expect(Object.keys(specs).sort()).toEqual(['better-sqlite3', 'postgres', ...sdkPackages].sort())
    for (const [name, range] of Object.entries(specs)) expect(range, name).toBe(pkg.devDependencies[name])
  })

  describe('HEALTHCHECK', () => {
    const healthcheck = one(runtime, 'HEALTHCHECK')
    const [, options, command] = /^(.*?)CMD (\[.*\])$/.exec(healthcheck) ?? []
    const argv = JSON.parse(command ?? 'null') as string[]
    const dir = mkdtempSync(join(tmpdir(), 'outflow-healthcheck-'))
    afterAll(() => rmSync(dir, { recursive: true, force: true }))

    it('has an interval, a timeout and a start period, and runs node (the slim image has no curl)', () => {
      expect(options).toMatch(/--interval=\d+s/)
      expect(options).toMatch(/--timeout=\d+s/)
      expect(options).toMatch(/--start-period=\d+s/)
      expect(argv.slice(0, 2)).toEqual(['node', '-e'])
      expect(argv[2]).toContain('/healthz')
    })

    it('exits 0 against a running `outflow serve` and 1 once it has stopped', { timeout: 90_000 }, async () => {
      const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
      const env = { PATH: process.env.PATH ?? '', OUTFLOW_SQLITE_PATH: join(dir, 'outflow.db'), OUTFLOW_API_KEY: 'healthcheck-admin-key-0123', PORT: '0' }
      const server = spawn(process.execPath, ['--import', tsx, join(root, 'src/cli/main.ts'), 'serve'], { env, stdio: ['ignore', 'pipe', 'inherit'] })
      const exited = new Promise((resolve) => server.on('exit', resolve))
      let out = ''
      server.stdout.on('data', (c: Buffer) => (out += c.toString()))
      const check = (port: string) =>
        promisify(execFile)(process.execPath, argv.slice(1), { env: { PATH: env.PATH, PORT: port }, timeout: 20_000 }).then(
          () => 0,
          (error: { code?: number }) => error.code,
        )
      try {
        const [, port] = await waitFor(() => /"url":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(out), 60_000, 'outflow serve to listen')
        expect(await check(port!)).toBe(0)
        server.kill('SIGTERM')
        expect(await exited).toBe(0)
        expect(await check(port!)).toBe(1)
      } finally {
        server.kill('SIGKILL')
      }
    })
  })
})

describe('compose.yaml', () => {
  const compose = readYamlSubset(readFileSync(join(root, 'compose.yaml'), 'utf8'), 'compose.yaml') as {
    services: Record<string, { image?: string; build?: string; command?: string[]; environment?: Record<string, string>; depends_on?: Record<string, { condition: string }>; ports?: string[]; volumes?: string[]; healthcheck?: { test: string[] } }>
    volumes: Record<string, unknown>
  }
  const { postgres, migrate, outflow } = compose.services

  it('runs Postgres with a health check, migrates once, then serves', () => {
    expect(Object.keys(compose.services).sort()).toEqual(['migrate', 'outflow', 'postgres'])
    expect(postgres!.image).toMatch(/^postgres:\d+$/)
    expect(postgres!.healthcheck!.test).toEqual(['CMD-SHELL', `pg_isready -U ${postgres!.environment!.POSTGRES_USER} -d ${postgres!.environment!.POSTGRES_DB}`])
    expect(migrate).toMatchObject({ build: '.', command: ['migrate'], depends_on: { postgres: { condition: 'service_healthy' } } })
    expect(outflow).toMatchObject({ build: '.', command: ['serve'], depends_on: { migrate: { condition: 'service_completed_successfully' } } })
    expect(migrate!.image).toBe(outflow!.image)
    expect(outflow!.environment!.OUTFLOW_MIGRATE).toBe('false')
    expect(postgres!.volumes).toEqual([`${Object.keys(compose.volumes)[0]}:/var/lib/postgresql/data`])
  })

  it('points both at the Postgres service with its credentials', () => {
    const env = postgres!.environment!
    for (const service of [migrate!, outflow!]) {
      const url = new URL(service.environment!.DATABASE_URL!)
      expect([url.protocol, url.hostname, url.port, url.username, url.password, url.pathname]).toEqual(['postgres:', 'postgres', '5432', env.POSTGRES_USER, env.POSTGRES_PASSWORD, `/${env.POSTGRES_DB}`])
    }
  })

  it('requires the three keys from the environment, and sets only settings the CLI knows', () => {
    for (const name of ['OUTFLOW_API_KEY', 'OUTFLOW_JWT_SECRET', 'OUTFLOW_ENCRYPTION_KEY']) expect(outflow!.environment![name]).toMatch(new RegExp(`^\\$\\{${name}:\\?.+\\}$`))
    for (const service of [migrate!, outflow!]) for (const name of Object.keys(service.environment!)) expect(knownVariables.has(name), `${name} is an outflow setting`).toBe(true)
  })

  it('publishes the exposed port on loopback only', () => {
    expect(outflow!.ports).toEqual([`127.0.0.1:${one(runtime, 'EXPOSE')}:${runtimeEnv.PORT}`])
  })
})
