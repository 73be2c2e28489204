import Database from 'better-sqlite3'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import postgresClient from 'postgres'
import { Webhook } from 'standardwebhooks'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Destination } from '../../src/model/destination.js'
import { postgres } from '../../src/storage/postgres.js'
import type { ClaimRequest } from '../../src/storage/storage.js'
import { rejection } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { createTestDatabase } from '../support/services.js'
import { hostKinds, outflowSchema, type Host } from './hosts.js'

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const range = (n: number) => Array.from({ length: n }, (_, i) => i)

for (const kind of hostKinds) {
  describe.runIf(kind.available)(`publishing inside the host's transaction: ${kind.name}`, () => {
    const T = 'shop'
    let host: Host
    let receiver: Awaited<ReturnType<typeof startReceiver>>
    let sink: Destination
    /** Holds the first request to /other until released. */
    let releaseOther: () => void = () => {}
    const otherGate = new Promise<void>((resolve) => (releaseOther = resolve))
    /** Claims the worker made (SQLite: each one follows a wake-up, the poll being a minute). */
    let claims = 0
    /** Notifications on the work channel (Postgres), counted by a listener of the test's own. */
    let notifications = 0
    let listener: ReturnType<typeof postgresClient> | undefined

    beforeAll(async () => {
      receiver = await startReceiver((r, n) => (r.path === '/other' && n === 0 ? { until: otherGate } : {}))
      // The poll is a minute: a delivery made within the test came from a wake-up (NOTIFY, or the commit watch).
      host = await kind.open({ topics: ['order.created', 'other.created'], delivery: { pollIntervalMs: 60_000, perDestinationConcurrency: 1 } })
      const { outflow } = host
      const claim = outflow.storage.claimDueDeliveries
      outflow.storage.claimDueDeliveries = (q: ClaimRequest) => (claims++, claim(q))
      await outflow.upsertTenant(T, {})
      sink = await outflow.createDestination(T, { id: 'sink', type: 'webhook', topics: ['order.*'], config: { url: `${receiver.url}/sink` } })
      await outflow.createDestination(T, { id: 'vip', type: 'webhook', topics: ['order.*'], filter: { data: { vip: true } }, config: { url: `${receiver.url}/vip` } })
      await outflow.createDestination(T, { id: 'other', type: 'webhook', topics: ['other.*'], config: { url: `${receiver.url}/other` } })
      if (kind.name === 'postgres') {
        listener = postgresClient(host.url!, { max: 1, onnotice: () => {} })
        await listener.listen(`outflow_work_${outflowSchema}`, () => notifications++)
      }
    })
    afterAll(async () => {
      releaseOther()
      await listener?.end()
      await host?.close()
      await receiver?.close()
    })

    const order = (id: string, data: Record<string, unknown> = {}) => ({ id, tenant_id: T, topic: 'order.created', data: { order: id, ...data }, metadata: { source: 'shop' } })
    const arrived = (id: string, path = '/sink') => receiver.on(path).filter((r) => r.headers['webhook-id'] === id)

    /** A committed host transaction with one event, delivered: everything earlier has been announced by then. */
    async function committedSentinel(orderId: number): Promise<void> {
      const id = `sentinel-${orderId}`
      await host.transaction(orderId, [order(id)], 'commit')
      await waitFor(() => arrived(id).length === 1, 15_000, `the sentinel ${id}`)
    }

    it('delivers a committed event exactly as publish() does: signature, headers, result, delivery log (woken at commit, not by the poll)', async () => {
      const { outflow } = host
      const [inTx] = await host.transaction(1, [order('tx-1')], 'commit')
      const plain = await outflow.publish(order('plain-1'))
      expect(inTx).toEqual({ id: 'tx-1', duplicate: false, destination_ids: ['sink'] })
      expect(plain).toEqual({ id: 'plain-1', duplicate: false, destination_ids: ['sink'] })
      await waitFor(() => arrived('tx-1').length === 1 && arrived('plain-1').length === 1, 15_000, 'both deliveries')
      const [a, b] = [arrived('tx-1')[0]!, arrived('plain-1')[0]!]
      const webhook = new Webhook(String(sink.credentials.secret))
      expect(webhook.verify(a.body, a.headers as Record<string, string>)).toEqual({ order: 'tx-1' })
      expect(webhook.verify(b.body, b.headers as Record<string, string>)).toEqual({ order: 'plain-1' })
      expect(Object.keys(a.headers).sort()).toEqual(Object.keys(b.headers).sort())
      for (const name of ['content-type', 'user-agent', 'x-outflow-topic', 'x-outflow-source']) expect(a.headers[name]).toBe(b.headers[name])
      // The attempt results are written in batches, after the receiver answered.
      const attempts = await waitFor(() => outflow.listDeliveries(T, 'tx-1').catch(() => null), 10_000, 'the attempt in the log')
      expect(attempts).toMatchObject([{ event_id: 'tx-1', destination_id: 'sink', status: 'success', response_status_code: 200, attempt_number: 1, manual: false }])
      expect(await outflow.getEvent(T, 'tx-1')).toMatchObject({ id: 'tx-1', destination_id: 'sink', status: 'success', data: { order: 'tx-1' }, metadata: { source: 'shop' } })
      expect(await host.orders()).toContain(1)
      expect(await host.rows('tx-1')).toEqual({ events: 1, deliveries: 1 })
    })

    const rollbacks = [
      ['a thrown error', 'throw', false],
      ['an explicit ROLLBACK', 'rollback', false],
      ['a thrown error in a drizzle transaction', 'throw', true],
      ['tx.rollback() of a drizzle transaction', 'rollback', true],
    ] as const
    for (const [how, ending, drizzle] of rollbacks) {
      it(`leaves nothing after ${how}: no order, no event or delivery row, nothing sent, no wake-up`, async () => {
        const id = `rolled-${ending}-${drizzle}`
        const orderId = 10 + rollbacks.findIndex((r) => r[1] === ending && r[2] === drizzle)
        // Quiet first: the claims that follow earlier deliveries are over.
        await waitFor(async () => {
          const before = claims
          await sleep(300)
          return claims === before
        }, 15_000, 'the worker to be idle')
        const claimsBefore = claims
        const notificationsBefore = notifications
        const [result] = await host.transaction(orderId, [order(id)], ending, { drizzle })
        expect(result).toEqual({ id, duplicate: false, destination_ids: ['sink'] })
        expect(await host.orders()).not.toContain(orderId)
        expect(await host.rows(id)).toEqual({ events: 0, deliveries: 0 })
        // The commit watch looks right after the transaction ends (SQLite): it must not wake the worker.
        await sleep(300)
        expect(claims).toBe(claimsBefore)
        await committedSentinel(100 + orderId)
        expect(arrived(id)).toHaveLength(0)
        // Postgres delivers notifications in commit order: by the sentinel's, a rolled-back one would have come.
        if (kind.name === 'postgres') await waitFor(() => notifications > notificationsBefore, 5_000, 'the sentinel notification')
        if (kind.name === 'postgres') expect(notifications).toBe(notificationsBefore + 1)
        await expect(host.outflow.listDeliveries(T, id)).rejects.toMatchObject({ status: 404 })
      })
    }

    it('attempts nothing while the host holds its transaction open for 2 s, and other deliveries go on meanwhile', async () => {
      const { outflow } = host
      // Other events, published before: their first attempt waits at the receiver until the transaction is open.
      for (const n of range(4)) await outflow.publish({ id: `other-${n}`, tenant_id: T, topic: 'other.created', data: { n } })
      let open = false
      let committed = false
      const held = host
        .transaction(20, [order('held-1')], 'commit', { holdMs: 2_000, onPublished: () => (open = true) })
        .then((r) => ((committed = true), r))
      await waitFor(() => open, 10_000, 'the host transaction to publish')
      releaseOther()
      // All four other events reach their receiver while the transaction is still open (one at a time: the
      // last three were attempted only after it opened).
      await waitFor(() => receiver.on('/other').length === 4, 10_000, 'the other deliveries')
      expect(committed).toBe(false)
      if (kind.name === 'postgres') {
        // On Postgres even a new publish goes through meanwhile (SQLite has one writer: it waits for the commit).
        await outflow.publish({ id: 'other-during', tenant_id: T, topic: 'other.created', data: {} })
        await waitFor(() => arrived('other-during', '/other').length === 1, 10_000, 'a delivery published meanwhile')
        expect(committed).toBe(false)
      }
      expect(arrived('held-1')).toHaveLength(0)
      await expect(outflow.listDeliveries(T, 'held-1')).rejects.toMatchObject({ status: 404 })
      expect(committed).toBe(false)
      const [result] = await held
      expect(result).toEqual({ id: 'held-1', duplicate: false, destination_ids: ['sink'] })
      await waitFor(() => arrived('held-1').length === 1, 15_000, 'the held event after its commit')
      expect(arrived('held-1')[0]!.at).toBeGreaterThanOrEqual(receiver.on('/other').at(-1)!.at)
    })

    it('does not lose a commit announced while the worker is claiming (the poll is a minute)', async () => {
      const { outflow } = host
      const claim = outflow.storage.claimDueDeliveries
      let release: () => void = () => {}
      const gate = new Promise<void>((resolve) => (release = resolve))
      let holding = false
      // The first claim that finds nothing (the one after race-a's delivery) answers only once race-b's commit
      // has been announced: that wake-up comes mid-claim, after the claim looked.
      outflow.storage.claimDueDeliveries = async (q: ClaimRequest) => {
        const claimed = await claim(q)
        if (!holding && claimed.length === 0 && arrived('race-a').length === 1) {
          holding = true
          await gate
        }
        return claimed
      }
      try {
        await host.transaction(40, [order('race-a')], 'commit')
        await waitFor(() => holding, 10_000, 'an empty claim after race-a')
        await host.transaction(41, [order('race-b')], 'commit')
        await sleep(200)
        release()
        await waitFor(() => arrived('race-b').length === 1, 15_000, 'race-b')
      } finally {
        outflow.storage.claimDueDeliveries = claim
        release()
      }
    })

    it('of 50 concurrent host transactions, half rolled back, delivers exactly the committed half', async () => {
      const results = await Promise.all(
        range(50).map(async (i) => {
          // Spread over a few turns of the event loop, between the engine's own work.
          await sleep(Math.random() * 30)
          return host.transaction(200 + i, [order(`many-${i}`)], i % 2 === 0 ? 'commit' : 'throw')
        }),
      )
      expect(results.every(([r], i) => r?.id === `many-${i}` && r.duplicate === false)).toBe(true)
      const committed = range(50).filter((i) => i % 2 === 0)
      await waitFor(() => committed.every((i) => arrived(`many-${i}`).length > 0), 30_000, 'the committed half')
      await committedSentinel(300)
      const delivered = receiver.on('/sink').map((r) => String(r.headers['webhook-id'])).filter((id) => id.startsWith('many-'))
      expect(delivered.sort()).toEqual(committed.map((i) => `many-${i}`).sort())
      expect((await host.orders()).filter((id) => id >= 200 && id < 250)).toEqual(committed.map((i) => 200 + i))
      for (const i of [1, 25, 49]) expect(await host.rows(`many-${i}`)).toEqual({ events: 0, deliveries: 0 })
    })

    it('validates, matches and de-duplicates as publish() does, with the same result', async () => {
      const { outflow } = host
      // The same id twice in one transaction, in two calls: the second is a duplicate, delivered once.
      const twice = await host.transaction(30, [order('dup-1'), order('dup-1')], 'commit', { separately: true })
      expect(twice).toEqual([
        { id: 'dup-1', duplicate: false, destination_ids: ['sink'] },
        { id: 'dup-1', duplicate: true, destination_ids: ['sink'] },
      ])
      // An id published before, outside: a duplicate; the host's own row still commits.
      expect(await host.transaction(31, [order('plain-1')], 'commit')).toEqual([{ id: 'plain-1', duplicate: true, destination_ids: ['sink'] }])
      expect(await host.orders()).toContain(31)
      // Topics and filters: the vip destination takes only vip orders.
      const [vip] = await host.transaction(32, [order('vip-1', { vip: true })], 'commit')
      expect([...vip!.destination_ids].sort()).toEqual(['sink', 'vip'])
      // A batch is all or none; a bad event is the same 422 as publishMany's, and nothing of the call is written.
      const bad = [order('ok-1'), { tenant_id: T, topic: 'order.created' }]
      const inTx = await rejection(host.transaction(33, bad, 'commit'))
      const plain = await rejection(outflow.publishMany(bad))
      expect(inTx).toMatchObject({ status: 422, data: plain.data })
      expect(plain.data).toEqual({ '1.data': expect.any(String) })
      expect(await rejection(host.transaction(34, [{ ...order('x'), topic: 'order.refunded' }], 'commit'))).toMatchObject({ status: 422, data: { '0.topic': expect.stringContaining('configured') } })
      expect(await rejection(host.transaction(35, [{ ...order('x'), tenant_id: 'nobody' }], 'commit'))).toMatchObject({ status: 404, message: 'tenant not found: nobody' })
      expect(await rejection(host.transaction(36, [{ ...order('x'), destination_id: 'nope' }], 'commit'))).toMatchObject({ status: 404 })
      expect(await host.orders()).not.toContain(33)
      expect(await host.rows('ok-1')).toEqual({ events: 0, deliveries: 0 })
      await committedSentinel(37)
      expect(arrived('dup-1')).toHaveLength(1)
      expect(arrived('plain-1')).toHaveLength(1)
      expect(arrived('vip-1', '/vip')).toHaveLength(1)
    })

    if (kind.name === 'postgres') {
      it('refuses a transaction that has ended, the pool, and a drizzle database: clear errors, nothing written', async () => {
        const { outflow } = host
        const sql = host.raw as ReturnType<typeof postgresClient>
        let ended: object | undefined
        await sql.begin(async (tx) => void (ended = tx))
        expect(await rejection(outflow.publish(order('late-1'), { tx: ended! }))).toMatchObject({ status: 409, code: 'conflict', message: expect.stringMatching(/already ended/) })
        expect(await host.rows('late-1')).toEqual({ events: 0, deliveries: 0 })
        expect(await rejection(outflow.publish(order('pool-1'), { tx: sql }))).toMatchObject({ status: 422, message: expect.stringMatching(/the postgres.js pool, not a transaction/) })
        const client = postgresClient(host.url!, { max: 1, onnotice: () => {} })
        try {
          expect(await rejection(outflow.publish(order('orm-1'), { tx: drizzlePostgres({ client }) }))).toMatchObject({ status: 422, message: expect.stringMatching(/a drizzle database, not a transaction/) })
        } finally {
          await client.end()
        }
        expect(await rejection(outflow.publish(order('odd-1'), { tx: {} }))).toMatchObject({ status: 422, message: expect.stringMatching(/not a postgres.js transaction/) })
        expect(() => outflow.publishSync(order('sync-1'), { db: {} })).toThrow(/publishSync \{ db \} needs SQLite storage/)
        expect(await host.rows('pool-1')).toEqual({ events: 0, deliveries: 0 })
      })

      it('refuses a transaction on another database, with or without Outflow tables of its own', async () => {
        const { outflow } = host
        const other = await createTestDatabase()
        // Another database with an Outflow install in the same schema: same table names, wrong rows.
        const otherStorage = await postgres({ url: other.url, schema: outflowSchema })()
        await otherStorage.migrate()
        await otherStorage.close()
        const bare = await createTestDatabase()
        const a = postgresClient(other.url, { max: 1, onnotice: () => {} })
        const b = postgresClient(bare.url, { max: 1, onnotice: () => {} })
        try {
          const withTables = await rejection(a.begin((tx) => outflow.publish(order('elsewhere-1'), { tx })))
          expect(withTables).toMatchObject({ status: 422, code: 'validation', message: expect.stringMatching(/not on Outflow's database: the transaction is on database "outflow_t_/) })
          const [row] = await a.unsafe<{ count: number }[]>(`select count(*)::int as count from ${outflowSchema}.events`)
          expect(row!.count).toBe(0)
          const withoutTables = await rejection(b.begin((tx) => outflow.publish(order('elsewhere-2'), { tx })))
          expect(withoutTables).toMatchObject({ status: 422, message: expect.stringMatching(/no Outflow tables in schema "shop_outflow"/) })
        } finally {
          await a.end()
          await b.end()
          await other.drop()
          await bare.drop()
        }
        expect(await host.rows('elsewhere-1')).toEqual({ events: 0, deliveries: 0 })
      })
    }

    if (kind.name === 'sqlite') {
      it('refuses a connection to another file, an in-memory one, one with no transaction open, and the Postgres form', async () => {
        const { outflow } = host
        const dir = mkdtempSync(join(tmpdir(), 'outflow-outbox-other-'))
        const elsewhere = new Database(join(dir, 'other.db'))
        const memory = new Database(':memory:')
        try {
          expect(() => elsewhere.transaction(() => outflow.publishSync(order('elsewhere-1'), { db: elsewhere }))()).toThrow(/publishSync \{ db \}: it is a connection to ".*other\.db", Outflow's storage is/)
          expect(() => memory.transaction(() => outflow.publishSync(order('memory-1'), { db: memory }))()).toThrow(/an in-memory database/)
          const db = host.raw as Database.Database
          let error: unknown
          try {
            outflow.publishSync(order('no-tx-1'), { db })
          } catch (err) {
            error = err
          }
          expect(error).toMatchObject({ status: 409, code: 'conflict', message: expect.stringMatching(/no transaction is open/) })
          expect(() => outflow.publishSync(order('odd-1'), { db: {} })).toThrow(/not a better-sqlite3 Database/)
          expect(await rejection(outflow.publish(order('tx-on-sqlite'), { tx: db }))).toMatchObject({ status: 422, message: expect.stringMatching(/needs Postgres storage: on SQLite, publish inside your transaction with publishSync/) })
          expect(await host.rows('no-tx-1')).toEqual({ events: 0, deliveries: 0 })
        } finally {
          elsewhere.close()
          memory.close()
          rmSync(dir, { recursive: true, force: true })
        }
      })
    }
  })
}
