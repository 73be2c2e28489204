import { describe, expect, it } from 'vitest'
import { pageOverDays, type SettledDay } from '../../src/storage/listing-days.js'
import type { EventListRequest, EventRow } from '../../src/storage/storage.js'

// The events listing on the partitioned layout leaves out days whose event times cannot reach the page
// (listing-days.ts). Checked against a listing over every day, on events whose times follow their days and on
// events with any time at all.

const day = 86_400_000
const day1 = Date.parse('2026-03-01T00:00:00.000Z')

interface Stored {
  row: EventRow
  /** Index of the day partition it is in. */
  day: number
}

/** A seeded generator (mulberry32), so a failure can be replayed. */
function random(seed: number) {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function history(seed: number, days: number, perDay: number, anyTime: boolean): Stored[] {
  const next = random(seed)
  const rows: Stored[] = []
  for (let d = 0; d < days; d++) {
    // Some days hold one event with any time (from 5 days before the first day to the last).
    const odd = anyTime && next() < 0.4 ? Math.floor(next() * perDay) : -1
    for (let i = 0; i < perDay; i++) {
      // Ties on time are common: a whole second shared by several events.
      const created = day1 + d * day + Math.floor(next() * 86_400) * 1000
      const time = i === odd ? day1 + Math.floor(next() * (days + 5) * 86_400) * 1000 - 5 * day : created
      const row = { tenant_id: 't', event_id: `e${d}-${i}`, destination_id: next() < 0.5 ? 'd1' : 'd2', topic: 'x', time: new Date(time) } as EventRow
      rows.push({ row, day: d })
    }
  }
  return rows
}

const key = (r: EventRow): [number, string, string] => [r.time.getTime(), r.event_id, r.destination_id]
function compare(a: EventRow, b: EventRow): number {
  const [x, y] = [key(a), key(b)]
  for (let i = 0; i < 3; i++) if (x[i]! !== y[i]!) return x[i]! < y[i]! ? -1 : 1
  return 0
}
const cmpKey = (a: [number, string, string], b: [number, string, string]) => compare({ time: new Date(a[0]), event_id: a[1], destination_id: a[2] } as EventRow, { time: new Date(b[0]), event_id: b[1], destination_id: b[2] } as EventRow)

/** The listing's statement over the days not left out: filters, keyset, order and limit + 1, in statement order. */
function statement(stored: Stored[], days: SettledDay[], q: EventListRequest, leftOut: SettledDay[]): EventRow[] {
  const out = new Set(leftOut.map((d) => days.indexOf(d)))
  const scanDesc = (q.dir === 'desc') !== (q.before !== undefined)
  const position = q.before ?? q.after
  return stored
    .filter((s) => !out.has(s.day))
    .map((s) => s.row)
    .filter((r) => (q.timeGte ? r.time >= q.timeGte : true) && (q.timeLte ? r.time <= q.timeLte : true))
    .filter((r) => (position ? (scanDesc ? cmpKey(key(r), position as [number, string, string]) < 0 : cmpKey(key(r), position as [number, string, string]) > 0) : true))
    .sort((a, b) => (scanDesc ? -compare(a, b) : compare(a, b)))
    .slice(0, q.limit + 1)
}

function settled(stored: Stored[], count: number): SettledDay[] {
  return Array.from({ length: count }, (_, d) => {
    const times = stored.filter((s) => s.day === d).map((s) => s.row.time.getTime())
    return { from: new Date(day1 + d * day), to: new Date(day1 + (d + 1) * day), times: times.length ? { min: Math.min(...times), max: Math.max(...times) } : null }
  })
}

/** Every kind of page: first pages both ways, next and prev pages from many positions, with and without time filters. */
function requests(stored: Stored[], seed: number): EventListRequest[] {
  const next = random(seed)
  const pick = () => key(stored[Math.floor(next() * stored.length)]!.row)
  const out: EventListRequest[] = []
  for (const dir of ['desc', 'asc'] as const)
    for (const limit of [1, 5, 40]) {
      out.push({ dir, limit })
      for (let i = 0; i < 15; i++) {
        out.push({ dir, limit, after: pick() }, { dir, limit, before: pick() })
        const [a, b] = [pick()[0], pick()[0]].sort((x, y) => x - y)
        out.push({ dir, limit, timeGte: new Date(a!), timeLte: new Date(b!) }, { dir, limit, timeGte: new Date(a!), after: pick() })
      }
    }
  return out
}

async function check(stored: Stored[], dayCount: number, seed: number): Promise<{ reads: number[]; leftOut: number }> {
  const days = settled(stored, dayCount)
  const reads: number[] = []
  let leftOut = 0
  for (const q of requests(stored, seed)) {
    let n = 0
    const page = await pageOverDays(q, days, async (out) => {
      n++
      leftOut += out.length
      return statement(stored, days, q, out)
    })
    expect(page, JSON.stringify(q)).toEqual(statement(stored, days, q, []))
    reads.push(n)
  }
  return { reads, leftOut }
}

describe('a listing page over settled days', () => {
  it('is the page of the full listing, in at most two reads, when event times follow their days', async () => {
    const stored = history(1, 12, 30, false)
    const { reads } = await check(stored, 12, 2)
    expect(Math.max(...reads)).toBeLessThanOrEqual(2)
    // Times follow days: almost every page is read once (a second read only when a page spans a day boundary).
    expect(reads.filter((n) => n === 1).length).toBeGreaterThan(reads.length * 0.6)
  })

  it('is the page of the full listing, in at most two reads, when events have any time at all', async () => {
    for (const seed of [3, 4, 5]) {
      const stored = history(seed, 10, 25, true)
      const { reads, leftOut } = await check(stored, 10, seed + 10)
      // Both paths taken: pages read once, pages read twice, days left out.
      expect(Math.max(...reads)).toBe(2)
      expect(Math.min(...reads)).toBe(1)
      expect(leftOut).toBeGreaterThan(reads.length)
    }
  })

  it('leaves out, on the first read of a first page, every settled day but the latest when the days not settled fill it', async () => {
    // Days 0–9 settled; day 10 (today) is not settled and holds the newest events.
    const stored = history(6, 11, 30, false)
    const days = settled(stored, 10)
    const leftOut: number[] = []
    const page = await pageOverDays({ dir: 'desc', limit: 20 }, days, async (out) => {
      leftOut.push(out.length)
      return statement(stored, days, { dir: 'desc', limit: 20 }, out)
    })
    expect(leftOut).toEqual([9])
    expect(page.every((r) => r.event_id.startsWith('e10-'))).toBe(true)
  })

  it('reads the other days when the first read does not fill the page', async () => {
    const stored = history(7, 4, 10, false).filter((s) => s.day !== 0)
    // Day 0's one event has a time later than all others: it heads a descending listing, and its day is read first.
    stored.push({ row: { tenant_id: 't', event_id: 'late', destination_id: 'd1', topic: 'x', time: new Date(day1 + 30 * day) } as EventRow, day: 0 })
    const days = settled(stored, 3)
    const q: EventListRequest = { dir: 'desc', limit: 15 }
    const leftOut: number[] = []
    const page = await pageOverDays(q, days, async (out) => {
      leftOut.push(out.length)
      return statement(stored, days, q, out)
    })
    expect(page).toEqual(statement(stored, days, q, []))
    expect(page[0]!.event_id).toBe('late')
    // Day 0 and day 3 (not settled) give 11 rows; the second read takes days 1 and 2 too.
    expect(leftOut).toEqual([2, 0])
  })
})
