import http from 'node:http'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../../src/create-outflow.js'
import type { Outflow } from '../../../src/engine.js'
import { routes } from '../../../src/http/routes.js'
import type { Logger } from '../../../src/logger.js'
import { apiKey, encryptionKey, jwtSecret } from '../../support/engines.js'
import type { SqlDatabase, SqlStorage } from '../../support/sql-storages.js'
import { dumpDiff, tableDumper, type TableDump, type TableDumper } from '../../support/table-dump.js'
import { mounts } from '../mounts.js'
import { type Auth, describeCase, type FuzzCase, fuzzCases, mutatingMethods, routeTargets, socketCases } from './cases.js'
import { fixture } from './values.js'

// The route-table fuzz suite: thousands of requests, each valid but for one thing, in-process through
// outflow.fetch and over real sockets through each host mount. Every answer is below 500 with a JSON
// body, and every refused request that could write (any method but GET, HEAD, OPTIONS) leaves every
// table byte-for-byte as it was.

/** Seed, replay path and size of a run: `OUTFLOW_FUZZ_SEED`, `OUTFLOW_FUZZ_PATH`, `OUTFLOW_FUZZ_RUNS`. */
export const fuzzSettings = {
  seed: Number(process.env.OUTFLOW_FUZZ_SEED ?? 20240611),
  path: process.env.OUTFLOW_FUZZ_PATH || undefined,
  runs: Number(process.env.OUTFLOW_FUZZ_RUNS ?? 5000),
  mountRuns: Number(process.env.OUTFLOW_FUZZ_MOUNT_RUNS ?? 150),
}

/** Small, so that bodies over the limit are cheap to send. */
const maxBodyBytes = 64 * 1024

interface Answer {
  status: number
  contentType: string
  text: string
}

/** Engine errors logged while serving (a 500 is logged with its cause): shown when a case fails. */
function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = []
  const ignore = () => {}
  return { errors, debug: ignore, info: ignore, warn: ignore, error: (fields, message) => void errors.push(`${message} ${JSON.stringify(fields)}`) }
}

/** Canonical JSON (keys sorted, through JSON once): equal for the same data however storage orders keys. */
function canonical(text: string): string {
  const sort = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(sort)
    if (typeof value !== 'object' || value === null) return value
    const out: Record<string, unknown> = {}
    for (const key of Object.keys(value).sort()) Object.defineProperty(out, key, { value: sort((value as Record<string, unknown>)[key]), enumerable: true })
    return out
  }
  return JSON.stringify(sort(JSON.parse(JSON.stringify(JSON.parse(text)))))
}

/** Seed the fixture: two tenants, acme's destinations (one disabled), events with a failed final attempt each. */
async function seed(db: SqlDatabase): Promise<void> {
  const outflow = await createOutflow({ storage: db.storage, apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { pollIntervalMs: 20 } })
  try {
    for (const tenant of fixture.tenants) await outflow.upsertTenant(tenant, { metadata: { name: tenant } })
    const hook = { type: 'webhook', topics: ['order.created'], config: { url: fixture.deadUrl } }
    await outflow.createDestination('acme', { id: 'hook', ...hook, metadata: { team: 'a' }, filter: { data: { n: { $gte: 0 } } } })
    await outflow.createDestination('acme', { id: 'relay-1', type: 'relay', topics: ['order.*'], config: { url: fixture.deadUrl }, credentials: { token: 'relay-token' } })
    await outflow.createDestination('acme', { id: 'off', ...hook })
    await outflow.disableDestination('acme', 'off')
    await outflow.createDestination('globex', { id: 'hook', ...hook })
    for (const [i, id] of fixture.events.entries())
      await outflow.publish({ id, tenant_id: 'acme', topic: 'order.created', time: new Date(fixture.eventTimes[i]!), data: { n: i }, metadata: { m: String(i) }, eligible_for_retry: false })
    await outflow.publish({ id: 'g1', tenant_id: 'globex', topic: 'order.created', data: {}, eligible_for_retry: false })
    // Each attempt fails at once (nothing listens) and is final, so every event shows in the listings.
    const deadline = Date.now() + 30_000
    while (Number((await db.query<{ n: number | string }>(`select count(*) as n from deliveries where status = 'pending'`))[0]!.n) > 0) {
      if (Date.now() > deadline) throw new Error('seed deliveries were not attempted within 30 s')
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  } finally {
    await outflow.close()
  }
}

/** What every answer must be, whatever was sent: below 500, and JSON unless it has no body at all. */
function checkAnswer(c: FuzzCase, answer: Answer, errors: string[]): void {
  const context = () => `${describeCase(c)}\n  -> ${answer.status} ${answer.contentType} ${answer.text.slice(0, 500)}\n  engine errors: ${errors.slice(-3).join(' | ') || 'none'}`
  if (answer.status >= 500) throw new Error(`answered ${answer.status}\n${context()}`)
  const bodyless = answer.status === 204 || answer.status === 304 || c.method.toUpperCase() === 'HEAD'
  if (bodyless && answer.text === '') return
  if (!/^application\/json/.test(answer.contentType)) throw new Error(`answer is not JSON\n${context()}`)
  try {
    JSON.parse(answer.text)
  } catch {
    throw new Error(`answer body does not parse as JSON\n${context()}`)
  }
  if (answer.status < 300 && c.echoes) {
    const body = JSON.parse(answer.text) as Record<string, unknown>
    for (const [field, sent] of Object.entries(c.echoes)) {
      const got = canonical(JSON.stringify(body[field] ?? null))
      if (got !== canonical(sent)) throw new Error(`${field} came back as ${got.slice(0, 300)}, sent ${canonical(sent).slice(0, 300)}\n${context()}`)
    }
  }
}

/**
 * Storage before a request that could write: cached until a request changes it (a 2xx), so a run of
 * refused requests costs one fingerprint each.
 */
class StorageWatch {
  #before?: { fingerprint: string; dump: TableDump }
  constructor(readonly tables: TableDumper) {}

  async before(): Promise<void> {
    if (!this.#before) {
      const [fingerprint, dump] = [await this.tables.fingerprint(), await this.tables.dump()]
      this.#before = { fingerprint, dump }
    }
  }

  /** After the answer: a refused request must have changed nothing; an accepted one may have. */
  async after(c: FuzzCase, answer: Answer): Promise<void> {
    if (answer.status < 400) {
      this.#before = undefined
      return
    }
    const fingerprint = await this.tables.fingerprint()
    if (fingerprint === this.#before!.fingerprint) return
    const diff = dumpDiff(this.#before!.dump, await this.tables.dump())
    this.#before = undefined
    throw new Error(`refused with ${answer.status} but storage changed:\n  ${diff.slice(0, 10).join('\n  ')}\n${describeCase(c)}\n  -> ${answer.text.slice(0, 300)}`)
  }
}

/**
 * Whether a case may write: every method but GET, HEAD and OPTIONS, and the portal redirect (a GET that stores a
 * sign-in code), also by a path that dot segments lead to it (`/tenants/acme/portal/../portal`), as the URL parser resolves them.
 */
const writes = (c: FuzzCase) =>
  !['GET', 'HEAD', 'OPTIONS'].includes(c.method.toUpperCase()) || /\/tenants\/[^/?]+\/portal\/?$/.test(resolvedPath(c.url))

function resolvedPath(url: string): string {
  try {
    return new URL(url, 'http://outflow.test').pathname
  } catch {
    return url
  }
}

function authorization(auth: Auth, tokens: Record<'acme' | 'globex', string>): Record<string, string> {
  switch (auth) {
    case 'admin':
      return { authorization: `Bearer ${apiKey}` }
    case 'acme':
    case 'globex':
      return { authorization: `Bearer ${tokens[auth]}` }
    case 'none':
      return {}
    case 'garbage':
      return { authorization: 'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJhY21lIn0.' }
    case 'basic':
      return { authorization: `Basic ${Buffer.from(`admin:${apiKey}`).toString('base64')}` }
    case 'huge':
      // Below Node's 16 KiB header limit, which a socket would meet first (a bare 431 from Node itself).
      return { authorization: `Bearer ${'a'.repeat(8_000)}` }
    case 'lowercase':
      return { authorization: `bearer ${apiKey}` }
  }
}

/** One case through outflow.fetch; GET and HEAD carry no body (the Request constructor refuses one). */
async function sendInProcess(outflow: Outflow, c: FuzzCase, tokens: Record<'acme' | 'globex', string>): Promise<Answer> {
  const bodyless = /^(GET|HEAD)$/i.test(c.method)
  const request = new Request(`http://outflow.test${c.url}`, { method: c.method, headers: { ...c.headers, ...authorization(c.auth, tokens) }, body: bodyless || c.body === undefined ? undefined : typeof c.body === 'string' ? c.body : new Uint8Array(c.body) })
  const response = await outflow.fetch(request)
  return { status: response.status, contentType: response.headers.get('content-type') ?? '', text: await response.text() }
}

/** One case over a real socket to a mounted API: any method, any body, exactly as written. */
function sendOverSocket(origin: URL, c: FuzzCase, tokens: Record<'acme' | 'globex', string>): Promise<Answer> {
  const body = c.body === undefined ? undefined : Buffer.from(c.body)
  // Node's client frames a GET or TRACE body only with an explicit Content-Length.
  const length: Record<string, string> = body ? { 'content-length': String(body.byteLength) } : {}
  return new Promise((resolve, reject) => {
    const request = http.request(
      { host: origin.hostname, port: origin.port, method: c.method.toUpperCase(), path: c.url, headers: { ...c.headers, ...authorization(c.auth, tokens), ...length }, agent: false },
      (response) => {
        const chunks: Buffer[] = []
        response.on('data', (chunk: Buffer) => chunks.push(chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, contentType: response.headers['content-type'] ?? '', text: Buffer.concat(chunks).toString('utf8') }))
        response.on('error', reject)
      },
    )
    request.on('error', reject)
    request.end(body)
  })
}

/** fast-check's failure, with the command that replays it. */
async function run(name: string, property: fc.IAsyncProperty<[FuzzCase]>, seed: number, runs: number): Promise<void> {
  try {
    await fc.assert(property, { seed, path: fuzzSettings.path, numRuns: runs, endOnFailure: true })
  } catch (error) {
    const path = /path: "([^"]*)"/.exec(String((error as Error).message))?.[1]
    ;(error as Error).message = `${(error as Error).message}\n\nreplay: OUTFLOW_FUZZ_SEED=${fuzzSettings.seed} OUTFLOW_FUZZ_PATH=${path ?? '?'} npx vitest run -t "${name}"`
    throw error
  }
}

/** Cases print as one line each in fast-check's report. */
const printable = (c: FuzzCase): FuzzCase => Object.assign(c, { [fc.toStringMethod]: () => describeCase(c) })

/**
 * The fuzz suite on one storage: `runs` cases in-process and `mountRuns` per host mount, all against
 * one engine (no delivery worker, so nothing but the requests writes) on a seeded database.
 *
 * @example
 * describeFuzz(sqlStorages[0]!)
 */
export function describeFuzz(kind: SqlStorage): void {
  describe.runIf(kind.available)(`route-table fuzz on ${kind.name}`, () => {
    let db: SqlDatabase
    let outflow: Outflow
    let watch: StorageWatch
    const logger = recordingLogger()
    const tokens = { acme: '', globex: '' }
    beforeAll(async () => {
      db = await kind.open()
      await seed(db)
      outflow = await createOutflow({ storage: db.storage, apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, maxBodyBytes, logger, delivery: { worker: false } })
      for (const tenant of fixture.tenants) tokens[tenant as 'acme' | 'globex'] = (await outflow.getTenantToken(tenant)).token
      watch = new StorageWatch(tableDumper(db, kind.name))
    }, 120_000)
    afterAll(async () => {
      await outflow?.close()
      await db?.close()
    })

    async function check(c: FuzzCase, send: (c: FuzzCase) => Promise<Answer>): Promise<number> {
      if (writes(c)) await watch.before()
      const answer = await send(c)
      // Storage first: it also forgets the cached state after an accepted write that checkAnswer may fail.
      if (writes(c)) await watch.after(c, answer)
      checkAnswer(c, answer, logger.errors)
      return answer.status
    }

    const inProcess = `${fuzzSettings.runs} requests in-process, each valid but for one thing: below 500, JSON, storage unchanged when refused`
    it(inProcess, async () => {
      const covered = new Map<string, number>()
      const statuses = new Map<number, number>()
      const cases = fuzzCases(routes, { forbiddenMethods: false, prefixedOnly: false, maxBodyBytes }).map(printable)
      const property = fc.asyncProperty(cases, async (c) => {
        const status = await check(c, (x) => sendInProcess(outflow, x, tokens))
        covered.set(c.target, (covered.get(c.target) ?? 0) + 1)
        statuses.set(status, (statuses.get(status) ?? 0) + 1)
      })
      await run(inProcess, property, fuzzSettings.seed, fuzzSettings.runs)
      if (process.env.OUTFLOW_FUZZ_VERBOSE) console.info(`statuses: ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}; cases per target: ${JSON.stringify(Object.fromEntries(covered))}`)
      // Driven by the route table: every parameter and body field of every route was fuzzed.
      if (!fuzzSettings.path && fuzzSettings.runs >= 5000) {
        const missed = routes.flatMap(routeTargets).filter((t) => !covered.has(t))
        expect(missed).toEqual([])
      }
      // Most cases are refused, and the valid ones get through: the cases reach past validation.
      expect([...statuses.keys()].filter((s) => s >= 200 && s < 300).length).toBeGreaterThan(0)
    }, 600_000)

    for (const [i, mount] of mounts.entries()) {
      const name = `${fuzzSettings.mountRuns} requests over a socket through the ${mount.name} mount: below 500, JSON, storage unchanged when refused`
      it(name, async () => {
        const mounted = await mount.start(outflow)
        try {
          const origin = new URL(mounted.baseUrl)
          const cases = fc
            .oneof({ weight: 4, arbitrary: fuzzCases(routes, { forbiddenMethods: true, prefixedOnly: true, maxBodyBytes }) }, { weight: 1, arbitrary: socketCases() })
            // Node answers itself, before any mount sees the request, a request line and headers over 16 KiB
            // (a bare 431) and methods its parser does not know (a bare 400: FOO, TRACK; see adapters.test.ts).
            .filter((c) => c.url.length < 12_000 && http.METHODS.includes(c.method.toUpperCase()) && c.method.toUpperCase() !== 'CONNECT')
            .map(printable)
          const property = fc.asyncProperty(cases, async (c) => void (await check(c, (x) => sendOverSocket(origin, x, tokens))))
          await run(name, property, fuzzSettings.seed + i + 1, fuzzSettings.mountRuns)
        } finally {
          await mounted.close()
        }
      }, 300_000)
    }
  })
}
