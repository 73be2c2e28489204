// The outbox: an order service that writes an order and its `order.created` event in ONE transaction of
// its own database, so the event is sent if and only if the order committed.
//   npx tsx examples/outbox.ts                             # SQLite (a temporary file, or OUTFLOW_DB)
//   DATABASE_URL=postgres://… npx tsx examples/outbox.ts   # Postgres: Outflow's tables in schema `outflow`
// It places order 1001 (committed with its event) and order 1002 (rolled back when its payment check
// fails: neither the order nor the event exists), receives the webhook of 1001 on a local receiver that
// checks the Standard Webhooks signature, and exits 0 once it has shown both.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import postgresJs from 'postgres'
import { Webhook } from 'standardwebhooks'
import { createOutflow } from '../src/create-outflow.js'
import type { Outflow } from '../src/engine.js'
import { postgres } from '../src/storage/postgres.js'
import { sqlite } from '../src/storage/sqlite.js'

interface Order {
  id: number
  customer: string
  total: number
}

/** What an order service does to place an order, whatever the database: one transaction for both writes. */
interface OrderStore {
  /** Insert the order and publish its event in one transaction; `check` may throw to roll both back. */
  place(order: Order, check: (order: Order) => void): Promise<void>
  orderIds(): Promise<number[]>
  close(): Promise<void>
}

const secret = `whsec_${Buffer.from('outflow-outbox-example-secret!!!').toString('base64')}`
const event = (order: Order) => ({ id: `order-${order.id}`, tenant_id: 'shop', topic: 'order.created', data: { ...order } })

/** Postgres: postgres.js `sql.begin`, publishing with `{ tx }`; Outflow's tables live in schema `outflow`. */
async function postgresStore(url: string): Promise<{ store: (outflow: Outflow) => OrderStore; storage: ReturnType<typeof postgres> }> {
  const sql = postgresJs(url, { max: 4, onnotice: () => {} })
  await sql`create table if not exists orders (id integer primary key, customer text not null, total numeric not null)`
  return {
    storage: postgres({ url, schema: 'outflow' }),
    store: (outflow) => ({
      place: async (order, check) => {
        await sql.begin(async (tx) => {
          await tx`insert into orders ${tx(order)}`
          await outflow.publish(event(order), { tx })
          check(order) // throwing here rolls back the order and its event
        })
      },
      orderIds: async () => (await sql<{ id: number }[]>`select id from orders order by id`).map((r) => r.id),
      close: () => sql.end(),
    }),
  }
}

/** SQLite: the service's own better-sqlite3 connection to the same file, publishing with publishSync inside `db.transaction`. */
async function sqliteStore(path: string): Promise<{ store: (outflow: Outflow) => OrderStore; storage: ReturnType<typeof sqlite> }> {
  return {
    storage: sqlite({ path }),
    store: (outflow) => {
      // Opened after createOutflow: the file is in WAL mode and has Outflow's tables.
      const db = new Database(path)
      db.exec('create table if not exists orders (id integer primary key, customer text not null, total real not null)')
      const insert = db.prepare('insert into orders (id, customer, total) values (@id, @customer, @total)')
      return {
        place: async (order, check) => {
          db.transaction(() => {
            insert.run(order)
            outflow.publishSync(event(order), { db })
            check(order) // throwing here rolls back the order and its event
          })()
        },
        orderIds: async () => (db.prepare('select id from orders order by id').pluck().all() as number[]),
        close: async () => void db.close(),
      }
    },
  }
}

/** A webhook receiver on a free local port that verifies each signature. */
async function startReceiver(onEvent: (id: string, body: string) => void) {
  const webhook = new Webhook(secret)
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      try {
        webhook.verify(body, Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])))
      } catch {
        res.writeHead(400).end()
        return
      }
      res.writeHead(204).end()
      onEvent(String(req.headers['webhook-id']), body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/orders`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) }
}

const databaseUrl = process.env.DATABASE_URL
const dir = databaseUrl || process.env.OUTFLOW_DB ? undefined : mkdtempSync(join(tmpdir(), 'outflow-outbox-'))
const { storage, store } = databaseUrl ? await postgresStore(databaseUrl) : await sqliteStore(process.env.OUTFLOW_DB || join(dir!, 'shop.db'))
console.log(`outbox example on ${databaseUrl ? 'Postgres' : 'SQLite'}`)

const received = new Map<string, string>()
let arrived: () => void = () => {}
const firstArrival = new Promise<void>((resolve) => (arrived = resolve))
const receiver = await startReceiver((id, body) => {
  received.set(id, body)
  console.log(`received ${id} with a valid signature: ${body}`)
  arrived()
})

const outflow = await createOutflow({
  storage,
  auth: false, // no HTTP API is served here
  jwtSecret: process.env.OUTFLOW_JWT_SECRET ?? 'outbox-example-jwt-secret-change-me',
  allowPrivateNetworks: true, // the receiver is on localhost
  encryptionKey: process.env.OUTFLOW_ENCRYPTION_KEY ?? 'outbox-example-key-change-me-0123456789',
  delivery: { pollIntervalMs: 200 },
})
const orders = store(outflow)
try {
  await outflow.upsertTenant('shop', {})
  await outflow.createDestination('shop', { id: 'fulfilment', type: 'webhook', topics: ['order.*'], config: { url: receiver.url }, credentials: { secret } })

  await orders.place({ id: 1001, customer: 'ada', total: 42.5 }, () => {})
  console.log('order 1001 committed together with its event')
  try {
    await orders.place({ id: 1002, customer: 'bob', total: 99 }, (order) => {
      throw new Error(`payment declined for order ${order.id}`)
    })
  } catch (error) {
    console.log(`order 1002 rolled back (${(error as Error).message}): neither the order nor its event was written`)
  }

  await firstArrival
  // Give a wrongly sent event of the rolled-back order every chance to show up before concluding.
  await new Promise((resolve) => setTimeout(resolve, 1000))
  console.log(`orders in the service's table: ${(await orders.orderIds()).join(', ')}`)
  console.log(`events delivered: ${[...received.keys()].join(', ')}`)
  const log = await outflow.listEvents('shop', { status: 'success' })
  console.log(`Outflow's delivery log: ${log.models.map((e) => `${e.id} → ${e.destination_id} (${e.status})`).join(', ')}`)
  if (received.has('order-1002')) throw new Error('the event of the rolled-back order was delivered')
} finally {
  await outflow.close()
  await orders.close()
  await receiver.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
}
