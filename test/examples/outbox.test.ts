import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, describe, it } from 'vitest'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

const root = join(import.meta.dirname, '../..')
const drops: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const drop of drops) await drop()
})

/** Run examples/outbox.ts to its end; its output and exit code. */
function runExample(env: Record<string, string>): Promise<{ output: string; code: number | null }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'examples/outbox.ts'], {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', OUTFLOW_DB: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  proc.stdout.on('data', (c: Buffer) => (output += c.toString()))
  proc.stderr.on('data', (c: Buffer) => (output += c.toString()))
  return new Promise((resolve) => proc.on('exit', (code) => resolve({ output, code })))
}

const cases = [
  { name: 'SQLite', available: true, env: async () => ({}) },
  {
    name: 'Postgres',
    available: postgresAvailable,
    env: async () => {
      const db = await createTestDatabase()
      drops.push(db.drop)
      return { DATABASE_URL: db.url }
    },
  },
]

describe.concurrent('outbox example (examples/outbox.ts)', { timeout: 90_000 }, () => {
  for (const c of cases)
    it.runIf(c.available)(`on ${c.name}: the committed order's event is delivered and signed, the rolled-back order leaves nothing`, async ({ expect }) => {
      const { output, code } = await runExample(await c.env())
      expect(output).toContain(`outbox example on ${c.name}`)
      expect(output).toContain('order 1001 committed together with its event')
      expect(output).toContain('order 1002 rolled back (payment declined for order 1002): neither the order nor its event was written')
      const body = /received order-1001 with a valid signature: (\{.*\})\n/.exec(output)?.[1]
      expect(JSON.parse(body ?? 'null')).toEqual({ id: 1001, customer: 'ada', total: 42.5 })
      expect(output).toContain("orders in the service's table: 1001\n")
      expect(output).toContain('events delivered: order-1001\n')
      expect(output).toContain("Outflow's delivery log: order-1001 → fulfilment (success)")
      expect(output).not.toContain('order-1002 with')
      expect(code).toBe(0)
    })
})
