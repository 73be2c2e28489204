import { spawn, type ChildProcess } from 'node:child_process'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import express from 'express'
import { outflowPortal, outflowRouter } from '../../adapters/express.js'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { OutflowOptions } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { waitFor } from '../support/receiver.js'
import { createTestDatabase } from '../support/services.js'

// The servers the browser suite drives: the example server itself (Hono, examples/server.ts) run as
// `npm run example` runs it, and an Express host mounting the API and the portal in-process.

export interface PortalServer {
  name: string
  /** The origin the browser opens, e.g. http://127.0.0.1:41234 */
  origin: string
  apiKey: string
  close(): Promise<void>
}

export type StorageName = 'sqlite' | 'postgres'

const root = join(import.meta.dirname, '../..')

async function storageFor(name: StorageName): Promise<{ env: Record<string, string>; url?: string; path?: string; cleanup(): Promise<void> }> {
  if (name === 'postgres') {
    const db = await createTestDatabase()
    return { env: { DATABASE_URL: db.url }, url: db.url, cleanup: () => db.drop() }
  }
  const dir = mkdtempSync(join(tmpdir(), 'outflow-portal-'))
  const path = join(dir, 'outflow.db')
  return { env: { OUTFLOW_DB: path }, path, cleanup: async () => rmSync(dir, { recursive: true, force: true }) }
}

/** examples/server.ts on a free port, with its printed dev defaults (admin key dev-admin-key-change-me). */
export async function startExampleServer(storageName: StorageName): Promise<PortalServer> {
  const storage = await storageFor(storageName)
  const proc: ChildProcess = spawn(process.execPath, ['--import', 'tsx', 'examples/server.ts'], {
    cwd: root,
    env: { ...process.env, HOST: '', PORT: '0', OUTFLOW_API_KEY: '', OUTFLOW_JWT_SECRET: '', OUTFLOW_PORTAL_URL: '', DATABASE_URL: '', LOG_LEVEL: 'warn', ...storage.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  proc.stdout!.on('data', (c: Buffer) => (output += c.toString()))
  proc.stderr!.on('data', (c: Buffer) => (output += c.toString()))
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  try {
    const [, origin] = await waitFor(() => /listening on (http:\/\/[\d.]+:\d+)\/api\/v1/.exec(output) ?? (proc.exitCode !== null && Promise.reject(new Error(output))), 60_000, 'the example server to listen')
    return {
      name: `example server (Hono) on ${storageName}`,
      origin: origin!,
      apiKey: 'dev-admin-key-change-me',
      async close() {
        proc.kill('SIGTERM')
        await exited
        await storage.cleanup()
      },
    }
  } catch (error) {
    proc.kill('SIGKILL')
    await exited
    await storage.cleanup()
    throw new Error(`example server did not start: ${(error as Error).message}\n${output}`)
  }
}

/** An Express host: `app.use('/api/v1', outflowRouter(outflow))` and `app.use(outflowPortal(outflow))`, as docs/http-api.md shows. */
export async function startExpressServer(storageName: StorageName, options: Partial<OutflowOptions> = {}): Promise<PortalServer> {
  const storage = await storageFor(storageName)
  const apiKey = 'express-admin-key-0123456789'
  let outflow: Outflow | undefined
  try {
    outflow = await createOutflow({
      storage: storage.url ? postgres({ url: storage.url, max: 4, requestTimeoutMs: 10_000 }) : sqlite({ path: storage.path! }),
      apiKey,
      jwtSecret: 'express-jwt-secret-0123456789',
      encryptionKey: 'express-encryption-key-0123456789',
      allowPrivateNetworks: true,
      ...options,
    })
    const app = express()
    app.use('/api/v1', outflowRouter(outflow))
    app.use(outflowPortal(outflow))
    const server = http.createServer(app)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as AddressInfo
    const engine = outflow
    return {
      name: `Express on ${storageName}`,
      origin: `http://127.0.0.1:${port}`,
      apiKey,
      async close() {
        server.closeAllConnections()
        await new Promise((resolve) => server.close(resolve))
        await engine.close()
        await storage.cleanup()
      },
    }
  } catch (error) {
    await outflow?.close()
    await storage.cleanup()
    throw error
  }
}

/** The server's API as its admin: a call's status and JSON body. */
export function adminApi(server: PortalServer) {
  return async (method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> => {
    const response = await fetch(`${server.origin}/api/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${server.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: response.status, body: (await response.json()) as any }
  }
}
