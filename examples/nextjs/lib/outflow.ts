// The Outflow engine of this Next.js app: one per server process, created on the first request.
//
// Next.js bundles each route on its own (the API and the portal routes each get a copy of this module) and
// `next dev` re-evaluates modules on every edit, so a module-level variable would start an engine (and its
// delivery worker and database pool) per bundle and per reload. The promise lives on globalThis instead.
import { createOutflow, type Outflow } from 'outflow'
import { postgres } from 'outflow/postgres'
import { sqlite } from 'outflow/sqlite'

const processWide = globalThis as typeof globalThis & { outflowEngine?: Promise<Outflow> }

/** This process's engine, created (storage opened and migrated, worker started) by the first caller. */
export function getOutflow(): Promise<Outflow> {
  if (processWide.outflowEngine) return processWide.outflowEngine
  const engine = startOutflow()
  processWide.outflowEngine = engine
  // A failed start (the database down) is not kept: the next request tries again.
  engine.catch(() => {
    if (processWide.outflowEngine === engine) processWide.outflowEngine = undefined
  })
  return engine
}

/** The API's route handler: `outflow.fetch` serves `/api/v1/…` at its full path. */
export async function handleOutflow(request: Request): Promise<Response> {
  const outflow = await getOutflow()
  return outflow.fetch(request)
}

/**
 * The portal's route handler. Next.js drops the Content-Encoding header of a route's response (it takes the body
 * for one fetch() already decoded) but sends the body as it is, so the portal's files are asked for without
 * compression: Next.js compresses them itself.
 */
export function handlePortal(request: Request): Promise<Response> {
  const headers = new Headers(request.headers)
  headers.delete('accept-encoding')
  return handleOutflow(new Request(request, { headers }))
}

function required(name: string): string {
  const value = process.env[name]
  if (!value) throw new Error(`${name} is not set (see examples/nextjs/README.md)`)
  return value
}

async function startOutflow(): Promise<Outflow> {
  const databaseUrl = process.env.DATABASE_URL
  // Postgres in production; SQLite (a file beside the app) under `next dev` when DATABASE_URL is not set.
  if (!databaseUrl && process.env.NODE_ENV === 'production') throw new Error('DATABASE_URL is not set: production runs on Postgres (see examples/nextjs/README.md)')
  const outflow = await createOutflow({
    storage: databaseUrl ? postgres({ url: databaseUrl }) : sqlite({ path: process.env.OUTFLOW_DB ?? 'outflow.db' }),
    apiKey: required('OUTFLOW_API_KEY'),
    jwtSecret: required('OUTFLOW_JWT_SECRET'),
    // Credentials at rest: required with Postgres; SQLite keeps a generated key beside its file when unset.
    encryptionKey: databaseUrl ? required('OUTFLOW_ENCRYPTION_KEY') : process.env.OUTFLOW_ENCRYPTION_KEY || undefined,
    // Webhooks to localhost and private networks: for local development only.
    allowPrivateNetworks: process.env.OUTFLOW_ALLOW_PRIVATE_NETWORKS === 'true',
  })
  console.log(`outflow: engine started in process ${process.pid} (${databaseUrl ? 'postgres' : 'sqlite'})`)
  return outflow
}
