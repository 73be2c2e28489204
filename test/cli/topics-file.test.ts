import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { readSettings } from '../../src/cli/settings.js'
import { createOutflow } from '../../src/create-outflow.js'
import type { OutflowError } from '../../src/errors.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { catalog, orderSchema } from '../support/catalog.js'
import { serveStorages } from '../support/cli-process.js'
import { startServe, type ServedOutflow } from '../support/outflow-serve.js'

const dir = mkdtempSync(join(tmpdir(), 'outflow-topics-file-'))
const running: ServedOutflow[] = []
const drops: (() => Promise<void>)[] = []
afterAll(async () => {
  await Promise.all(running.map((served) => served.kill()))
  await Promise.all(drops.map((drop) => drop()))
  rmSync(dir, { recursive: true, force: true })
})

const file = (name: string, text: string) => {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

const yamlCatalog = `
# The catalog as a service keeps it beside its compose file.
order.created:
  description: An order was placed
  validation: warn
  schema:
    type: object
    required: [id, total]
    properties:
      id: { type: string }
      total: { type: number, minimum: 0 }
order.placed:
  description: Old name
  deprecated: true
  replaced_by: order.created
`

/** The served OpenAPI document of an engine with the shared catalog: what a team moving from another service brings. */
async function servedDocument(): Promise<unknown> {
  const source = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false, topics: catalog })
  try {
    return await (await source.fetch(new Request('http://outflow.test/api/v1/openapi.json'))).json()
  } finally {
    await source.close()
  }
}

function settingsError(env: Record<string, string>): OutflowError {
  try {
    readSettings({ env })
  } catch (error) {
    return error as OutflowError
  }
  throw new Error('expected readSettings to throw')
}

describe('OUTFLOW_TOPICS_FILE', () => {
  it('reads a YAML catalog', () => {
    const { settings } = readSettings({ env: { OUTFLOW_TOPICS_FILE: file('topics.yaml', yamlCatalog) } })
    expect(settings.topics).toEqual({
      'order.created': {
        description: 'An order was placed',
        validation: 'warn',
        schema: { type: 'object', required: ['id', 'total'], properties: { id: { type: 'string' }, total: { type: 'number', minimum: 0 } } },
      },
      'order.placed': { description: 'Old name', deprecated: true, replaced_by: 'order.created' },
    })
  })

  it('reads a JSON catalog, a list of names, or either under `topics`', () => {
    const read = (name: string, value: unknown) => readSettings({ env: { OUTFLOW_TOPICS_FILE: file(name, JSON.stringify(value)) } }).settings.topics
    expect(read('catalog.json', { 'a.b': { schema: { type: 'object' } } })).toEqual({ 'a.b': { schema: { type: 'object' } } })
    expect(read('names.json', ['a.b', 'c.d'])).toEqual(['a.b', 'c.d'])
    expect(read('wrapped.json', { topics: ['a.b'] })).toEqual(['a.b'])
  })

  it('imports an OpenAPI 3.1 document’s webhooks', async () => {
    const path = file('openapi.json', JSON.stringify(await servedDocument()))
    const topics = readSettings({ env: { OUTFLOW_TOPICS_FILE: path } }).settings.topics as Record<string, { schema?: unknown }>
    expect(Object.keys(topics)).toEqual(Object.keys(catalog))
    expect(topics['order.created']!.schema).toEqual(orderSchema)
  })

  it('names the variable for a missing or unreadable file, a bad catalog, or both variables set', () => {
    expect(settingsError({ OUTFLOW_TOPICS_FILE: join(dir, 'nope.yaml') }).data).toEqual({ OUTFLOW_TOPICS_FILE: `${join(dir, 'nope.yaml')}: no such file` })
    expect(settingsError({ OUTFLOW_TOPICS_FILE: file('bad.json', '{ nope') }).data!.OUTFLOW_TOPICS_FILE).toMatch(/not readable as JSON/)
    const invalid = settingsError({ OUTFLOW_TOPICS_FILE: file('invalid.yaml', 'a.b:\n  validation: strict\n') })
    expect(invalid.message).toContain('OUTFLOW_TOPICS_FILE (a.b.validation): must be "off", "warn" or "enforce"')
    expect(settingsError({ OUTFLOW_TOPICS: 'a.b', OUTFLOW_TOPICS_FILE: file('both.yaml', yamlCatalog) }).data).toEqual({
      OUTFLOW_TOPICS_FILE: 'set either OUTFLOW_TOPICS or OUTFLOW_TOPICS_FILE, not both',
    })
  })
})

const apiKey = 'cli-test-admin-key-0123456789'

/** `outflow serve` as a real process with `env` as its whole environment; resolves to its API URL once it listens. */
async function serve(env: Record<string, string>): Promise<{ api: string; output: () => string }> {
  const served = await startServe(env, dir)
  running.push(served)
  return served
}

const storages = serveStorages(dir, drops)

for (const storage of storages) {
  describe.runIf(storage.available)(`outflow serve with OUTFLOW_TOPICS_FILE on ${storage.name}`, { timeout: 120_000 }, () => {
    it('serves the file’s catalog at GET /topics and validates publishes with it', async () => {
      const { api } = await serve({ ...(await storage.env()), OUTFLOW_API_KEY: apiKey, PORT: '0', OUTFLOW_TOPICS_FILE: file(`served-${storage.name}.yaml`, yamlCatalog.replace('validation: warn', 'validation: enforce')) })
      const call = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`${api}${path}`, { method, headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
        return { status: res.status, body: (await res.json()) as any }
      }
      const topics = await call('GET', '/topics')
      expect(topics.body.map((t: { name: string; validation: string }) => [t.name, t.validation])).toEqual([['order.created', 'enforce'], ['order.placed', 'off']])
      expect((await call('PUT', '/tenants/acme', {})).status).toBe(201)
      const refused = await call('POST', '/publish', { tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: -5 } })
      expect(refused).toEqual({ status: 422, body: { status: 422, message: 'validation error', data: { 'data.total': 'must be >= 0' } } })
      expect((await call('POST', '/publish', { tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 5 } })).status).toBe(202)
      expect((await call('POST', '/publish', { tenant_id: 'acme', topic: 'order.other', data: {} })).body.data).toEqual({ topic: '"order.other" is not one of the configured topics' })
    })
  })
}
