import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { sql as drizzleSql, TransactionRollbackError } from 'drizzle-orm'
import { drizzle as drizzleSqlite } from 'drizzle-orm/better-sqlite3'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgresClient from 'postgres'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import type { PublishResult } from '../../src/model/event.js'
import type { OutflowOptions } from '../../src/options.js'
import { postgres } from '../../src/storage/postgres.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

/** How a host transaction ends: commit, a thrown error, or an explicit rollback. */
export type Ending = 'commit' | 'throw' | 'rollback'

/**
 * A host service on the engine's database: its own `orders` table and its own connection(s), writing an
 * order and publishing events in one transaction of its own.
 */
export interface Host {
  outflow: Outflow
  /**
   * One host transaction: insert order `orderId`, publish `events` through it, wait `holdMs` (the
   * transaction open), then end it. `drizzle`: through a drizzle transaction instead of the driver's.
   * Resolves to the publish results (also when the transaction then rolled back).
   */
  transaction(orderId: number, events: object[], ending: Ending, options?: TransactionOptions): Promise<PublishResult[]>
  /** The ids in the host's orders table. */
  orders(): Promise<number[]>
  /** Outflow's event and delivery rows of an event id, read with plain SQL. */
  rows(eventId: string): Promise<{ events: number; deliveries: number }>
  /** A raw handle for the error cases: the driver's pool (Postgres) or a connection (SQLite). */
  raw: unknown
  /** Postgres: the database's URL. */
  url?: string
  close(): Promise<void>
}

export interface TransactionOptions {
  /** Keep the transaction open this long after publishing (held across awaits). */
  holdMs?: number
  /** Through a drizzle transaction rather than the driver's own. */
  drizzle?: boolean
  /** One publish call per event (else one publishMany for all). */
  separately?: boolean
  /** Called once the events are published, with the transaction still open. */
  onPublished?: () => void
}

export interface HostKind {
  name: 'sqlite' | 'postgres'
  available: boolean
  open(options?: Partial<OutflowOptions>): Promise<Host>
}

/** Thrown inside a host transaction to roll it back. */
export class Rollback extends Error {}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Outflow's tables in the Postgres tests: a schema of their own, beside the host's `orders` in public. */
export const outflowSchema = 'shop_outflow'

export const hostKinds: HostKind[] = [
  {
    name: 'sqlite',
    available: true,
    async open(options = {}) {
      const dir = mkdtempSync(join(tmpdir(), 'outflow-outbox-'))
      const path = join(dir, 'shop.db')
      const outflow = await createOutflow({ apiKey, jwtSecret, allowPrivateNetworks: true, ...options, storage: sqlite({ path }) })
      const db = new Database(path)
      db.exec('create table orders (id integer primary key)')
      const insert = db.prepare('insert into orders (id) values (?)')
      const orm = drizzleSqlite({ client: db })
      const publish = (handle: object, events: object[], { separately, onPublished }: TransactionOptions) => {
        const results = separately ? events.map((e) => outflow.publishSync(e, { db: handle })) : outflow.publishManySync(events, { db: handle })
        onPublished?.()
        return results
      }
      const inOwnTransaction = (orderId: number, events: object[], ending: Ending, options: TransactionOptions) => {
        let results: PublishResult[] = []
        try {
          if (options.drizzle)
            orm.transaction((tx) => {
              tx.run(drizzleSql`insert into orders (id) values (${orderId})`)
              results = publish(tx, events, options)
              if (ending === 'throw') throw new Rollback()
              if (ending === 'rollback') tx.rollback()
            })
          else
            db.transaction(() => {
              insert.run(orderId)
              results = publish(db, events, options)
              if (ending !== 'commit') throw new Rollback()
            })()
        } catch (err) {
          if (ending === 'commit' || !(err instanceof Rollback || err instanceof TransactionRollbackError)) throw err
        }
        return results
      }
      return {
        outflow,
        raw: db,
        async transaction(orderId, events, ending, options = {}) {
          const { holdMs, drizzle = false } = options
          if (drizzle || (!holdMs && ending !== 'rollback')) return inOwnTransaction(orderId, events, ending, options)
          // Held open across awaits, or rolled back explicitly: BEGIN … COMMIT/ROLLBACK by hand on the host's connection.
          db.exec('BEGIN IMMEDIATE')
          try {
            insert.run(orderId)
            const results = publish(db, events, options)
            if (holdMs) await sleep(holdMs)
            if (ending === 'commit') db.exec('COMMIT')
            else db.exec('ROLLBACK')
            return results
          } catch (err) {
            if (db.inTransaction) db.exec('ROLLBACK')
            throw err
          }
        },
        orders: async () => db.prepare('select id from orders order by id').pluck().all() as number[],
        rows: async (eventId) => ({
          events: db.prepare('select count(*) from events where id = ?').pluck().get(eventId) as number,
          deliveries: db.prepare('select count(*) from deliveries where event_id = ?').pluck().get(eventId) as number,
        }),
        async close() {
          await outflow.close()
          db.close()
          rmSync(dir, { recursive: true, force: true })
        },
      }
    },
  },
  {
    name: 'postgres',
    available: postgresAvailable,
    async open(options = {}) {
      const database = await createTestDatabase()
      const outflow = await createOutflow({ apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, ...options, storage: postgres({ url: database.url, schema: outflowSchema }) })
      // The host's pool: search_path as every session has it (its own tables in public).
      const sql = postgresClient(database.url, { max: 10, onnotice: () => {} })
      await sql`create table orders (id integer primary key)`
      // drizzle changes its client's type parsers: a client of its own.
      const ormClient = postgresClient(database.url, { max: 2, onnotice: () => {} })
      const orm = drizzlePostgres({ client: ormClient })
      const body = async (tx: object, events: object[], { holdMs, separately, onPublished }: TransactionOptions) => {
        const results: PublishResult[] = []
        if (separately) for (const e of events) results.push(await outflow.publish(e, { tx }))
        else results.push(...(await outflow.publishMany(events, { tx })))
        onPublished?.()
        if (holdMs) await sleep(holdMs)
        return results
      }
      return {
        outflow,
        raw: sql,
        url: database.url,
        async transaction(orderId, events, ending, options = {}) {
          let results: PublishResult[] = []
          if (options.drizzle) {
            try {
              await orm.transaction(async (tx) => {
                await tx.execute(drizzleSql`insert into orders (id) values (${orderId})`)
                results = await body(tx, events, options)
                if (ending === 'throw') throw new Rollback()
                if (ending === 'rollback') tx.rollback()
              })
            } catch (err) {
              if (ending === 'commit' || !(err instanceof Rollback || err instanceof TransactionRollbackError)) throw err
            }
            return results
          }
          if (ending === 'rollback') {
            // An explicit ROLLBACK: BEGIN and ROLLBACK by hand on a reserved connection.
            const reserved = await sql.reserve()
            try {
              await reserved`begin`
              await reserved`insert into orders (id) values (${orderId})`
              results = await body(reserved, events, options)
              await reserved`rollback`
            } finally {
              reserved.release()
            }
            return results
          }
          try {
            await sql.begin(async (tx) => {
              await tx`insert into orders (id) values (${orderId})`
              results = await body(tx, events, options)
              if (ending === 'throw') throw new Rollback()
            })
          } catch (err) {
            if (!(err instanceof Rollback)) throw err
          }
          return results
        },
        orders: async () => (await sql<{ id: number }[]>`select id from orders order by id`).map((r) => r.id),
        rows: async (eventId) => {
          const [row] = await sql.unsafe<{ events: number; deliveries: number }[]>(
            `select (select count(*) from ${outflowSchema}.events where id = $1)::int as events, (select count(*) from ${outflowSchema}.deliveries where event_id = $1)::int as deliveries`,
            [eventId],
          )
          return row!
        },
        async close() {
          await outflow.close()
          await sql.end()
          await ormClient.end()
          await database.drop()
        },
      }
    },
  },
]
