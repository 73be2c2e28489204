import { and, gte, lt, not, type Column, type SQL } from 'drizzle-orm'
import type { EventListRequest, EventRow } from './storage.js'

// The events listing on the partitioned layout (postgres-partitions.ts). History is partitioned by the event's
// created_at, one partition per day, but listed by the event's time, which the publisher may set to anything: so a
// page could come from any day, and a listing over all of them plans every day's partition of deliveries and of
// events. With 30 days kept, planning alone took 5 ms of a first page's 8. A day whose events can no longer change
// is left out of a page when its event times cannot reach it: every such day whose times the page's filters exclude,
// and, for a first read, every day but the nearest in the scan's direction and those overlapping it. If that read
// fills the page and its last row is later (earlier, reading upwards) than the latest time of each day left out, no
// row of those days belongs on it. Otherwise a second read takes the days that can reach the page: after a full
// page, those reaching its last row; else all. Two reads at most; the page is exactly the full listing's.

/** A day partition whose event times are known and final (see postgres-history-days.ts): created_at in [from, to). */
export interface SettledDay {
  from: Date
  to: Date
  /** The earliest and latest event time of the day's events, ms; null when it has none. */
  times: { min: number; max: number } | null
}

/** Which way a page reads event times, and the times its rows may have (inclusive, ms; undefined: unbounded). */
interface PageScan {
  desc: boolean
  from?: number
  to?: number
}

/** The scan of a page of `q`: its direction in the statement (a `prev` page reads backwards) and its time bounds. */
function pageScan(q: EventListRequest): PageScan {
  const position = q.before ?? q.after
  const desc = (q.dir === 'desc') !== (q.before !== undefined)
  const from = q.timeGte?.getTime()
  const to = q.timeLte?.getTime()
  if (position === undefined) return { desc, from, to }
  const at = position[0]
  // Rows after the position in the scan's direction; ties on time stay (the ids decide).
  return desc ? { desc, from, to: to === undefined ? at : Math.min(to, at) } : { desc, from: from === undefined ? at : Math.max(from, at), to }
}

/**
 * One page of an events listing on the partitioned layout: `read` is the listing's statement, leaving out the
 * days given (rows in statement order, at most `q.limit + 1`).
 */
export async function pageOverDays(
  q: EventListRequest,
  days: SettledDay[],
  read: (leftOut: SettledDay[]) => Promise<EventRow[]>,
): Promise<EventRow[]> {
  const scan = pageScan(q)
  const outside = (d: SettledDay) =>
    d.times === null || (scan.to !== undefined && d.times.min > scan.to) || (scan.from !== undefined && d.times.max < scan.from)
  const never = days.filter(outside)
  // Nearest first: the days whose latest time (earliest, reading upwards) comes first in the scan.
  const maybe = days.filter((d) => !outside(d)).sort((a, b) => (scan.desc ? b.times!.max - a.times!.max : a.times!.min - b.times!.min))
  const reaches = (d: SettledDay, time: number) => (scan.desc ? d.times!.max >= time : d.times!.min <= time)
  // The first read takes the nearest day and every day whose times overlap it; when times follow days, that is one day.
  const nearest = maybe[0]
  const near = nearest ? maybe.filter((d) => reaches(d, scan.desc ? nearest.times!.min : nearest.times!.max)) : []
  const far = maybe.filter((d) => !near.includes(d))
  const rows = await read([...never, ...far])
  if (far.length === 0) return rows
  // The page is full (a row past it was read too): a day left out matters only if its times reach the last row.
  const last = rows.length > q.limit ? rows[rows.length - 1]!.time.getTime() : undefined
  const needed = last === undefined ? far : far.filter((d) => reaches(d, last))
  if (needed.length === 0) return rows
  return read([...never, ...far.filter((d) => !needed.includes(d))])
}

/**
 * The condition that leaves `days` out of a statement on `column` (a partition key: created_at of events,
 * event_created_at of deliveries), one range per run of adjacent days, so the planner prunes their partitions.
 */
export function leavingOut(column: Column, days: SettledDay[]): SQL | undefined {
  const ranges: { from: Date; to: Date }[] = []
  for (const d of [...days].sort((a, b) => a.from.getTime() - b.from.getTime())) {
    const previous = ranges[ranges.length - 1]
    if (previous && previous.to.getTime() === d.from.getTime()) previous.to = d.to
    else ranges.push({ from: d.from, to: d.to })
  }
  return ranges.length ? and(...ranges.map((r) => not(and(gte(column, r.from), lt(column, r.to))!))) : undefined
}
