import postgresJs from 'postgres'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { idTime, newId } from '../../src/ids.js'
import { postgres } from '../../src/storage/postgres.js'
import { createdBounds } from '../../src/storage/postgres-partitioned-claim.js'
import type { AttemptWrite, DeliveryStatus, NewEventWithDeliveries, Storage } from '../../src/storage/storage.js'
import { attemptWrite, seedOwners } from '../support/records.js'
import { createTestDatabase, postgresAvailable } from '../support/services.js'

// The partitioned layout of the event log (Postgres): daily partitions by the event's created_at, dropped whole by retention.

const day = 86_400_000
const day1 = Date.parse('2026-03-01T00:00:00.000Z')
const at = (ms: number) => new Date(ms)
const dayName = (ms: number) => new Date(ms).toISOString().slice(0, 10).replaceAll('-', '')

/** An event created (and timed) at `ms`, with one delivery per destination. */
function event(tenant: string, id: string, ms: number, destinations: string[], extra: { time?: number; orderKey?: string } = {}): NewEventWithDeliveries {
  const created = at(ms)
  return {
    event: { tenant_id: tenant, id, topic: 't', time: at(extra.time ?? ms), data: { id }, metadata: {}, eligible_for_retry: true, created_at: created },
    deliveries: destinations.map((d) => ({ id: `dlv-${tenant}-${id}-${d}`, destination_id: d, next_attempt_at: created, ...(extra.orderKey ? { order_key: extra.orderKey } : {}) })),
  }
}

/** An attempt of a delivery made at `ms`, leaving it in `status`. */
const attempt = (tenant: string, eventId: string, destination: string, status: DeliveryStatus, ms: number, orderKey?: string): AttemptWrite =>
  attemptWrite(tenant, eventId, destination, status, at(ms), { idSuffix: `-${ms}`, ...(orderKey ? { orderKey } : {}) })

describe.runIf(postgresAvailable)('postgres partitioned history', () => {
  let db: { url: string; drop: () => Promise<void> }
  let s: Storage
  let sql: postgresJs.Sql
  beforeAll(async () => {
    db = await createTestDatabase()
    s = await postgres({ url: db.url, max: 4, partitionHistory: true })()
    await s.migrate()
    sql = postgresJs(db.url, { max: 1, onnotice: () => {} })
    await seedOwners(s, { drop: ['d1'], kept: ['d1'], fresh: ['d1'], span: ['d1'], dup: ['d1'], crash: ['d1'], list: ['d1'], big: ['d1'] })
  })
  afterAll(async () => {
    await s?.close()
    await sql?.end()
    await db?.drop()
  })

  const partitions = async (table: string) =>
    (await sql<{ name: string }[]>`
      select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ${table}::regclass and c.relkind = 'r' order by 1`).map((r) => r.name)
  const stored = async (tenant: string, id: string) => (await sql<{ n: number }[]>`select count(*)::int as n from events where tenant_id = ${tenant} and id = ${id}`)[0]!.n
  const exists = async (name: string) => (await sql<{ found: boolean }[]>`select to_regclass(${name}) is not null as found`)[0]!.found
  /** Make the partitions of `from`'s day and the 7 after it, dropping nothing. */
  const makeDays = (from: number) => s.prunePartitions!({ before: at(0), now: at(from) })
  /** `call`'s answer, or `late` if it has none within `ms` (a statement waiting for locks held below). */
  const within = <T, L extends string>(ms: number, call: Promise<T>, late: L) =>
    Promise.race([call, new Promise<L>((resolve) => setTimeout(() => resolve(late), ms))])
  /** Run `body` with a storage opened now (it reads the days' times on its first listing) and a session to lock with. */
  async function withReader(options: { timeoutMs?: number; requestTimeoutMs?: number }, body: (reader: Storage, lock: postgresJs.Sql) => Promise<void>) {
    const reader = await postgres({ url: db.url, max: 2, ...options })()
    const lock = postgresJs(db.url, { max: 1, onnotice: () => {} })
    try {
      await body(reader, lock)
    } finally {
      await reader.close()
      await lock.end()
    }
  }

  it('migrate() makes the partitions of today and the next 7 days, beside a DEFAULT partition', async () => {
    const today = Math.floor(Date.now() / day) * day
    for (const table of ['events', 'deliveries', 'attempts']) {
      const names = await partitions(table)
      expect(names).toContain(`${table}_default`)
      for (let i = 0; i <= 7; i++) expect(names).toContain(`${table}_p${dayName(today + i * day)}`)
    }
    // The pruner's pass makes them from the day it is given.
    await makeDays(day1)
    expect(await partitions('events')).toContain(`events_p${dayName(day1 + 7 * day)}`)
  })

  it('drops a whole day past the window: its partitions go with their rows and leave no dead tuple', async () => {
    await makeDays(day1)
    await s.insertEvents([event('drop', 'a', day1 + 1000, ['d1']), event('drop', 'b', day1 + 2000, ['d1']), event('drop', 'c', day1 + 3000, ['d1'])])
    // An attempt made two days later still goes to its event's day.
    await s.recordAttempts(['a', 'b', 'c'].map((id) => attempt('drop', id, 'd1', 'success', day1 + 2 * day)))
    // The next day holds an old event (by time) that retention deletes, and a pending delivery that keeps its day.
    await s.insertEvents([event('kept', 'old', day1 + day + 1000, ['d1'], { time: day1 - day }), event('kept', 'pending', day1 + day + 2000, ['d1'])])
    await s.recordAttempts([attempt('kept', 'old', 'd1', 'success', day1 + day + 5000)])

    const before = at(day1 + 3 * day)
    const dropped = await s.prunePartitions!({ before, now: at(day1 + 3 * day) })
    // Day 1 with its rows; days 2 and 3 made empty by the pass that created day 1 go too, day 2 is kept.
    expect(dropped).toEqual([{ day: dayName(day1), events: 3, deliveries: 3, attempts: 3, estimated: false }, { day: dayName(day1 + 2 * day), events: 0, deliveries: 0, attempts: 0, estimated: false }])
    for (const table of ['events', 'deliveries', 'attempts']) expect(await exists(`${table}_p${dayName(day1)}`)).toBe(false)
    expect(await stored('drop', 'a')).toBe(0)
    expect(await exists(`events_p${dayName(day1 + day)}`)).toBe(true)

    // What is left (an old event in a day kept for its pending delivery) goes by DELETE, as on plain tables.
    expect(await s.pruneEvents({ before, limit: 100 })).toMatchObject({ events: 1, deliveries: 1, attempts: 1 })
    expect(await stored('kept', 'old')).toBe(0)
    expect(await stored('kept', 'pending')).toBe(1)
    // Wait for the statistics to show the DELETE's dead tuple: the three dropped events made none.
    const deadEvents = async () => {
      await sql`select pg_stat_force_next_flush()`
      const [row] = await sql<{ dead: number }[]>`select coalesce(sum(n_dead_tup), 0)::int as dead from pg_stat_user_tables where relname like 'events%'`
      return row!.dead
    }
    const deadline = Date.now() + 60_000
    while ((await deadEvents()) < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
    expect(await deadEvents()).toBe(1)
  })

  it('keeps a day with a pending delivery, and drops it once that delivery is finished', async () => {
    const day5 = day1 + 5 * day
    await makeDays(day5)
    await s.insertEvents([event('fresh', 'p', day5 + 1000, ['d1']), event('fresh', 'q', day5 + 2000, ['d1'])])
    await s.recordAttempts([attempt('fresh', 'q', 'd1', 'success', day5 + 3000)])
    const pass = () => s.prunePartitions!({ before: at(day5 + 2 * day), now: at(day5 + 2 * day) })
    expect((await pass()).map((d) => d.day)).not.toContain(dayName(day5))
    expect(await exists(`deliveries_p${dayName(day5)}`)).toBe(true)
    await s.recordAttempts([attempt('fresh', 'p', 'd1', 'failed', day5 + 4000)])
    expect(await pass()).toContainEqual({ day: dayName(day5), events: 2, deliveries: 2, attempts: 2, estimated: false })
  })

  it('keeps a day holding an event whose time is still inside the window', async () => {
    const day9 = day1 + 9 * day
    await makeDays(day9)
    await s.insertEvents([event('fresh', 'future', day9 + 1000, [], { time: day9 + 30 * day })])
    expect((await s.prunePartitions!({ before: at(day9 + 2 * day), now: at(day9 + 2 * day) })).map((d) => d.day)).not.toContain(dayName(day9))
    expect(await stored('fresh', 'future')).toBe(1)
  })

  it('lists, counts, claims and orders events on both sides of a day boundary', async () => {
    const midnight = day1 + 20 * day
    await makeDays(midnight - day)
    await s.insertEvents([
      event('span', 'before', midnight - 1, ['d1'], { orderKey: 'k' }),
      event('span', 'after', midnight, ['d1'], { orderKey: 'k' }),
    ])
    const listed = await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['span'] })
    expect(listed.map((r) => r.event_id)).toEqual([])
    const metrics = await s.eventMetrics({ start: at(midnight - day), end: at(midnight + day), limit: 10, dimensions: [], filters: { tenant_id: ['span'] } })
    expect(metrics[0]?.count).toBe(2)
    const claim = async (ms: number) =>
      (await s.claimDueDeliveries({ owner: `w${ms}`, now: at(ms), leaseUntil: at(ms + 1000), limit: 10 })).filter((c) => c.tenant_id === 'span')
    // FIFO: the later event waits behind the earlier one, although they are in two partitions.
    const first = await claim(midnight + 1000)
    expect(first.map((c) => [c.event_id, c.event.data])).toEqual([['before', { id: 'before' }]])
    await s.recordAttempts([attempt('span', 'before', 'd1', 'success', midnight + 2000, 'k')])
    const second = await claim(midnight + 3000)
    expect(second.map((c) => [c.event_id, c.event.data])).toEqual([['after', { id: 'after' }]])
    await s.recordAttempts([attempt('span', 'after', 'd1', 'success', midnight + 4000, 'k')])
    const attempted = await s.listEvents({ dir: 'asc', limit: 10, tenantIds: ['span'] })
    expect(attempted.map((r) => r.event_id)).toEqual(['before', 'after'])
    const page2 = await s.listEvents({ dir: 'asc', limit: 1, tenantIds: ['span'], after: [midnight - 1, 'before', 'd1'] })
    expect(page2.map((r) => r.event_id)).toEqual(['after'])
  })

  it('catches a duplicate within 24 hours of the first publish, across partitions, and one of two racing publishes', async () => {
    const day30 = day1 + 30 * day
    await makeDays(day30)
    const publish = async (ms: number, id = 'e1') => (await s.insertEvents([event('dup', id, ms, ['d1'])]))[0]!.duplicate
    expect(await publish(day30 + 10 * 3_600_000)).toBe(false)
    expect(await publish(day30 + 12 * 3_600_000)).toBe(true)
    expect(await publish(day30 + day + 9 * 3_600_000)).toBe(true) // next day's partition, 23 hours later
    // Past the idempotency window the same id is a new event (plain tables would still call it a duplicate).
    expect(await publish(day30 + 2 * day + 12 * 3_600_000)).toBe(false)
    const racing = await Promise.all([1, 2, 3, 4].map((i) => publish(day30 + 3 * day + i, 'race')))
    expect(racing.filter((duplicate) => !duplicate)).toHaveLength(1)
  })

  it('lists pages over settled days, leaving out the days a page cannot reach', async () => {
    const first = day1 + 60 * day
    await makeDays(first)
    // Three settled days of five events each, timed as published; the last day also has one timed later than all.
    const events = [0, 1, 2].flatMap((d) => [1, 2, 3, 4, 5].map((i) => event('list', `d${d}e${i}`, first + d * day + i * 60_000, ['d1'])))
    events.push(event('list', 'late', first + 2 * day + 1000, ['d1'], { time: first + 10 * day }))
    // Today's day is not settled; tomorrow's is empty unless an engine's clock is that far ahead, as this one's.
    events.push(event('list', 'today', Date.now(), ['d1'], { time: first + 11 * day }), event('list', 'tomorrow', Date.now() + day, ['d1'], { time: first + 12 * day }))
    await s.insertEvents(events)
    await s.recordAttempts(events.map((e) => attempt('list', e.event.id, 'd1', 'success', e.event.created_at.getTime() + 1000)))
    const order = ['tomorrow', 'today', 'late', ...[2, 1, 0].flatMap((d) => [5, 4, 3, 2, 1].map((i) => `d${d}e${i}`))]

    // A storage opened now knows every day's times (read on its first listing, then every minute).
    await withReader({}, async (reader, lock) => {
      const walk = async (dir: 'asc' | 'desc', limit: number) => {
        const ids: string[] = []
        let after: [number, string, string] | undefined
        for (;;) {
          const rows = await reader.listEvents({ dir, limit, tenantIds: ['list'], ...(after && { after }) })
          ids.push(...rows.slice(0, limit).map((r) => r.event_id))
          if (rows.length <= limit) return ids
          const last = rows[limit - 1]!
          after = [last.time.getTime(), last.event_id, last.destination_id]
        }
      }
      for (const limit of [1, 3, 7, 20]) {
        expect(await walk('desc', limit)).toEqual(order)
        expect(await walk('asc', limit)).toEqual([...order].reverse())
      }
      const prev = await reader.listEvents({ dir: 'desc', limit: 2, tenantIds: ['list'], before: [first + day + 3 * 60_000, 'd1e3', 'd1'] })
      // Two rows before the position and one more, in display order.
      expect(prev.map((r) => r.event_id)).toEqual(['d2e1', 'd1e5', 'd1e4'])

      // A page left out a day's partitions if its statement never locked them: with the first two days locked by
      // another session, a page of the last day and the late event answers; one reaching the first day waits.
      let waiting: Promise<unknown> | undefined
      await lock.begin(async (tx) => {
        for (const table of ['events', 'deliveries']) for (const d of [0, 1]) await tx.unsafe(`lock table ${table}_p${dayName(first + d * day)} in access exclusive mode`)
        const page = await within(10_000, reader.listEvents({ dir: 'desc', limit: 3, tenantIds: ['list'] }), 'blocked')
        expect(page === 'blocked' ? page : page.map((r) => r.event_id)).toEqual(['tomorrow', 'today', 'late', 'd2e5'])
        const deeper = reader.listEvents({ dir: 'desc', limit: 8, tenantIds: ['list'] })
        waiting = deeper
        expect(await within(500, deeper.then(() => 'answered'), 'waiting')).toBe('waiting')
      })
      // Answered once the locks are gone.
      expect(((await waiting) as { event_id: string }[]).map((r) => r.event_id)).toEqual(order.slice(0, 9))
    })
  })

  it("answers a caller within the caller's deadline when the days' times cannot be read", async () => {
    const first = day1 + 70 * day
    await makeDays(first)
    // A caller's calls give up after 1 s, the storage's own after 20 s; the first listing reads the days' times.
    await withReader({ timeoutMs: 20_000, requestTimeoutMs: 1_000 }, (reader, lock) =>
      lock.begin(async (tx) => {
        await tx.unsafe(`lock table events_p${dayName(first)} in access exclusive mode`)
        const listing = reader.forCallers!.listEvents({ dir: 'desc', limit: 5, tenantIds: ['list'] })
        const outcome = await within(8_000, listing.then(() => 'answered', (err: { code?: string }) => err.code), 'still waiting')
        // Unavailable (503) after the caller's deadline, not the storage's.
        expect(outcome).toBe('unavailable')
      }),
    )
  })

  it('drops a day that an interrupted pass left detached', async () => {
    const day40 = day1 + 40 * day
    await makeDays(day40)
    await s.insertEvents([event('crash', 'x', day40 + 1000, [])])
    for (const table of ['attempts', 'deliveries', 'events']) await sql.unsafe(`alter table ${table} detach partition ${table}_p${dayName(day40)}`)
    expect(await s.prunePartitions!({ before: at(0), now: at(day40) })).toContainEqual({ day: dayName(day40), events: 1, deliveries: 0, attempts: 0, estimated: false })
    // Made again by the same pass (it is within the coming days), attached and empty.
    expect(await partitions('events')).toContain(`events_p${dayName(day40)}`)
    expect(await stored('crash', 'x')).toBe(0)
  })

  /** Events `from`…`from + rows` of a day, each about 1.5 kB (under the size at which Postgres moves a value out of the row): 7,000 fill 8 MB. */
  async function fillDay(dayMs: number, from: number, rows: number) {
    const data = { pad: 'x'.repeat(1500) }
    for (let i = from; i < from + rows; i += 1_000) {
      const ids = Array.from({ length: Math.min(1_000, from + rows - i) }, (_, k) => i + k)
      await s.insertEvents(ids.map((n) => event('big', `e${dayMs}-${n}`, dayMs + n, [])).map((e) => ({ ...e, event: { ...e.event, data } })))
    }
  }
  const dropDay = async (dayMs: number) => (await s.prunePartitions!({ before: at(dayMs + 2 * day), now: at(dayMs + 2 * day) })).find((d) => d.day === dayName(dayMs))
  /**
   * The statistics' live rows of a table, once every inserting session's counts have reached them (`rows`): a busy
   * session sends its counts at most once a second, an idle one within 10 s.
   */
  async function liveRows(table: string, rows: number) {
    const live = async () => (await sql<{ n: number }[]>`select n_live_tup::int as n from pg_stat_user_tables where relname = ${table}`)[0]?.n
    const deadline = Date.now() + 30_000
    while ((await live()) !== rows && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200))
    return live()
  }

  it('estimates the rows of a big day from the planner statistics instead of scanning it, and counts a small one', async () => {
    const day50 = day1 + 50 * day
    await makeDays(day50)
    await fillDay(day50, 0, 7_000)
    await sql.unsafe(`analyze events_p${dayName(day50)}`)
    // Rows added after the statistics count too: the estimate scales the analyzed rows per page to the pages now.
    await fillDay(day50, 7_000, 500)
    await s.insertEvents([event('big', 'with-delivery', day50 + 9_000, ['d1'])])
    await s.recordAttempts([attempt('big', 'with-delivery', 'd1', 'success', day50 + 10_000)])

    const dropped = await dropDay(day50)
    expect(dropped?.estimated).toBe(true)
    expect(Math.abs(dropped!.events - 7_501)).toBeLessThan(7_501 * 0.05)
    // The small partitions are counted exactly.
    expect(dropped).toMatchObject({ deliveries: 1, attempts: 1 })
    expect(await exists(`events_p${dayName(day50)}`)).toBe(false)
  })

  it('takes a big day never analyzed from the statistics live rows, and counts it when those were reset', async () => {
    const [day80, day90] = [day1 + 80 * day, day1 + 90 * day]
    for (const d of [day80, day90]) {
      await makeDays(d)
      await sql.unsafe(`alter table events_p${dayName(d)} set (autovacuum_enabled = false)`)
      await fillDay(d, 0, 7_000)
    }
    for (const d of [day80, day90]) expect(await liveRows(`events_p${dayName(d)}`, 7_000)).toBe(7_000)
    const [never] = await sql<{ tuples: number }[]>`select reltuples::int as tuples from pg_class where relname = ${`events_p${dayName(day80)}`}`
    expect(never!.tuples).toBe(-1)
    expect(await dropDay(day80)).toMatchObject({ events: 7_000, estimated: true })
    // Statistics reset (as a crash does) and never analyzed: nothing to estimate from, so the day is counted.
    await sql.unsafe(`select pg_stat_reset_single_table_counters('events_p${dayName(day90)}'::regclass)`)
    expect(await liveRows(`events_p${dayName(day90)}`, 0)).toBe(0)
    expect(await dropDay(day90)).toMatchObject({ events: 7_000, estimated: false })
  }, 90_000)
})

describe('delivery ids and the days they carry', () => {
  it('bounds the event creation time of deliveries whose ids were minted with it, and gives no bound for other ids', () => {
    const created = new Date('2026-03-01T12:00:00.000Z')
    const bounds = createdBounds([newId('dlv', created), newId('dlv', new Date(created.getTime() + 5))])
    // An hour of slack below: ids minted before deliveries carried created_at were made just after it.
    expect(bounds).toEqual({ lo: '2026-03-01T11:00:00.000Z', hi: '2026-03-01T12:00:00.005Z' })
    expect(idTime(newId('dlv', created))).toBe(created.getTime())
    expect(createdBounds(['dlv-by-hand', newId('dlv', created)])).toEqual({ lo: '-infinity', hi: 'infinity' })
    // A hand-written id that happens to decode lands centuries away: no bound either.
    expect(createdBounds(['dlv_zzzzzzzzzz00aaaaaaaaaaaa'])).toEqual({ lo: '-infinity', hi: 'infinity' })
  })
})
