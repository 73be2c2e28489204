import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import { topicsFromOpenAPI } from '../../src/delivery/openapi-import.js'
import type { Outflow } from '../../src/engine.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { catalog, orderSchema } from '../support/catalog.js'

const run = promisify(execFile)
const resolve = createRequire(import.meta.url).resolve
const redoclyCli = resolve('@redocly/cli/bin/cli.js')
const openapiTypescript = join(resolve('openapi-typescript/package.json'), '..', 'bin', 'cli.js')
const tsc = resolve('typescript/bin/tsc')

/** A receiver written against the types openapi-typescript generates from the served document. */
const receiverSource = `
import type { components, webhooks } from './outflow-api.js'

type OrderCreated = NonNullable<webhooks['order.created']['post']['requestBody']>['content']['application/json']
type SignedUp = components['schemas']['UserSignedUpData']

export function describeOrder(order: OrderCreated): string {
  const items = order.items.map((item) => \`\${item.quantity} x \${item.sku}\`).join(', ')
  return \`\${order.id}: \${order.total.toFixed(2)} \${order.currency} (\${items})\`
}

export function greet(user: SignedUp): string {
  return user.plan === 'pro' ? \`welcome back \${user.email}\` : user.email
}

// The generated types are precise, not \`any\`: each line below must be a type error.
// @ts-expect-error total is a number
export const wrongTotal: OrderCreated = { id: 'o-1', total: '10', currency: 'EUR', items: [] }
// @ts-expect-error currency is EUR or USD
export const wrongCurrency: OrderCreated = { id: 'o-1', total: 10, currency: 'GBP', items: [] }
// @ts-expect-error plan is free or pro
export const wrongPlan: SignedUp = { email: 'a@example.com', plan: 'gold' }
`

describe('the OpenAPI webhooks section under real tools', () => {
  let outflow: Outflow
  let dir: string
  let documentFile: string
  let served: Record<string, any>

  beforeAll(async () => {
    outflow = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false, jwtSecret: 'openapi-webhooks-jwt-0123456789', topics: catalog })
    dir = mkdtempSync(join(tmpdir(), 'outflow-webhooks-'))
    const response = await outflow.fetch(new Request('http://outflow.test/api/v1/openapi.json'))
    expect(response.status).toBe(200)
    served = (await response.clone().json()) as Record<string, any>
    documentFile = join(dir, 'openapi.json')
    writeFileSync(documentFile, await response.text())
  })
  afterAll(async () => {
    await outflow.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('lints with 0 errors and 0 warnings under @redocly/cli lint (recommended rules), webhooks included', async () => {
    expect(Object.keys(served.webhooks)).toHaveLength(Object.keys(catalog).length)
    const { stdout } = await run(process.execPath, [redoclyCli, 'lint', documentFile, '--format=json'], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }))
    const report = JSON.parse(stdout) as { totals: { errors: number; warnings: number }; problems: { ruleId: string; message: string; location: { pointer: string }[] }[] }
    expect(report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
  })

  it('openapi-typescript generates types from the served document that a receiver compiles against under tsc --strict', async () => {
    await run(process.execPath, [openapiTypescript, documentFile, '--output', join(dir, 'outflow-api.ts')], { cwd: dir })
    writeFileSync(join(dir, 'receiver.ts'), receiverSource)
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: { strict: true, noEmit: true, target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', skipLibCheck: true, types: [] }, files: ['receiver.ts'] }),
    )
    const result = await run(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { cwd: dir }).then(
      () => ({ code: 0, stdout: '' }),
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    )
    expect(result.stdout).toBe('')
    expect(result.code).toBe(0)
  })

  it('topicsFromOpenAPI reads the served document back into the same catalog', async () => {
    const imported = topicsFromOpenAPI(served)
    expect(Object.keys(imported)).toEqual(Object.keys(catalog))
    expect(imported['order.created']).toEqual({ description: 'An order was placed', schema: orderSchema, validation: 'enforce', examples: [catalog['order.created'].examples[0]] })
    expect(imported['order.placed']).toEqual({ description: 'Old name of order.created', deprecated: true, replaced_by: 'order.created' })
    const again = await createOutflow({ storage: sqlite({ path: ':memory:' }), auth: false, topics: imported })
    try {
      expect(await again.listTopics()).toEqual(await outflow.listTopics())
    } finally {
      await again.close()
    }
  })
})
