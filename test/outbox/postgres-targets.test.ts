import postgresClient from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../../src/create-outflow.js'
import type { Outflow } from '../../src/engine.js'
import { postgres } from '../../src/storage/postgres.js'
import { apiKey, encryptionKey, jwtSecret } from '../support/engines.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// Publishing inside a host's Postgres transaction keeps each tenant's publish targets between publishes. Two
// engines share one database: what one of them changes, the other's next publish must see.
describe.runIf(postgresAvailable)('publish { tx } with kept publish targets, two engines on one database', () => {
  const T = 'kept'
  let database: Awaited<ReturnType<typeof createTestDatabase>>
  /** Publishes inside host transactions (keeps targets). */
  let publisher: Outflow
  /** Changes the destinations (another instance, an API server). */
  let admin: Outflow
  let sql: ReturnType<typeof postgresClient>
  let n = 0

  beforeAll(async () => {
    database = await createTestDatabase()
    const open = (worker: boolean) =>
      createOutflow({ apiKey, jwtSecret, encryptionKey, allowPrivateNetworks: true, delivery: { worker }, storage: postgres({ url: database.url }) })
    publisher = await open(false)
    admin = await open(false)
    sql = postgresClient(database.url, { max: 4, onnotice: () => {} })
    await admin.upsertTenant(T, {})
    await admin.createDestination(T, { id: 'first', type: 'webhook', topics: ['order.*'], config: { url: 'https://example.com/first' } })
  })
  afterAll(async () => {
    await sql?.end()
    await publisher?.close()
    await admin?.close()
    await database?.drop()
  })

  /** One committed host transaction publishing one event through the publisher engine. */
  const publishInTx = (event: Record<string, unknown> = {}) =>
    sql.begin((tx) => publisher.publish({ tenant_id: T, topic: 'order.created', data: { n: n++ }, ...event }, { tx }))
  const skipped = async (eventId: string) =>
    (await sql<{ destination_id: string }[]>`select destination_id from deliveries where event_id = ${eventId} and status = 'skipped'`).map((r) => r.destination_id)

  it('sees a destination the other engine created since the last publish', async () => {
    expect((await publishInTx()).destination_ids).toEqual(['first'])
    await admin.createDestination(T, { id: 'second', type: 'webhook', topics: ['order.created'], config: { url: 'https://example.com/second' } })
    expect((await publishInTx()).destination_ids).toEqual(['first', 'second'])
  })

  it('sees a change of topics or filter the other engine made', async () => {
    await publishInTx()
    await admin.updateDestination(T, 'second', { topics: ['order.paid'] })
    expect((await publishInTx()).destination_ids).toEqual(['first'])
    await admin.updateDestination(T, 'second', { topics: ['order.created'], filter: { data: { vip: true } } })
    expect((await publishInTx()).destination_ids).toEqual(['first'])
    expect((await publishInTx({ data: { vip: true } })).destination_ids).toEqual(['first', 'second'])
    await admin.updateDestination(T, 'second', { filter: null })
  })

  it('sees a destination the other engine disabled (skipped) and enabled again (delivered)', async () => {
    await publishInTx()
    await admin.disableDestination(T, 'second')
    const whileDisabled = await publishInTx()
    expect(whileDisabled.destination_ids).toEqual(['first'])
    expect(await skipped(whileDisabled.id)).toEqual(['second'])
    await admin.enableDestination(T, 'second')
    const enabled = await publishInTx()
    expect(enabled.destination_ids).toEqual(['first', 'second'])
    expect(await skipped(enabled.id)).toEqual([])
  })

  it('leaves out a destination the other engine deleted, and finds one it created under that id again', async () => {
    await publishInTx()
    await admin.deleteDestination(T, 'second')
    expect((await publishInTx()).destination_ids).toEqual(['first'])
    await admin.createDestination(T, { id: 'second', type: 'webhook', topics: ['order.*'], config: { url: 'https://example.com/again' } })
    expect((await publishInTx()).destination_ids).toEqual(['first', 'second'])
  })

  it('publishes to a destination_id the other engine created since the last publish (no 404)', async () => {
    await publishInTx()
    await admin.createDestination(T, { id: 'third', type: 'webhook', topics: ['other.topic'], config: { url: 'https://example.com/third' } })
    expect((await publishInTx({ destination_id: 'third', topic: 'other.topic' })).destination_ids).toEqual(['third'])
  })

  it('sees a tenant deleted and created again by the other engine', async () => {
    await publishInTx()
    await admin.deleteTenant(T)
    await expect(publishInTx()).rejects.toMatchObject({ status: 404 })
    await admin.upsertTenant(T, {})
    await admin.createDestination(T, { id: 'fresh', type: 'webhook', topics: ['order.*'], config: { url: 'https://example.com/fresh' } })
    expect((await publishInTx()).destination_ids).toEqual(['fresh'])
  })

  it('rolls back with the host: a publish planned from kept targets writes nothing when the transaction rolls back', async () => {
    await publishInTx()
    let id = ''
    await expect(
      sql.begin(async (tx) => {
        id = (await publisher.publish({ tenant_id: T, topic: 'order.created', data: {} }, { tx })).id
        throw new Error('roll back')
      }),
    ).rejects.toThrow('roll back')
    expect(await sql`select 1 from events where id = ${id}`).toHaveLength(0)
  })
})
