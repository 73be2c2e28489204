import type PostgresJs from 'postgres'
import type { SettledDay } from './listing-days.js'
import { partitionDays } from './postgres-partitions.js'

// Which day partitions a listing may leave out (listing-days.ts), and the event times each holds. An event goes to
// the day of its created_at, the publishing engine's clock at the publish. So a day can still gain events while any
// engine's clock is in it, and a publish in a host's transaction is seen only at its commit: a day is settled an
// hour after it ends (`skewMs`), and a day that starts more than an hour from now is empty. The days' times are read
// again every minute, so an event committed later than that (a host transaction held open for over an hour) is
// missing from pages its day was left out of for a minute at most.

const day = 86_400_000
/** How far apart two engines' clocks, or a publish and its commit, may be. */
export const skewMs = 3_600_000
/** How long the days' times are used before they are read again. */
const refreshMs = 60_000

type Bound = <T>(work: () => Promise<T>) => Promise<T>

interface DayTimes extends SettledDay {
  /** When its times were read, ms. */
  readAt: number
}

/**
 * The settled days of a schema on the partitioned layout, with their event times (none on the plain layout). A
 * failed read leaves nothing out: listings then read every day, as on a schema without settled days.
 */
export function settledDays(client: PostgresJs.Sql, schema: string, partitioned: () => Promise<boolean>, bound: Bound) {
  let known: DayTimes[] = []
  let readAt = -Infinity
  let reading: Promise<void> | undefined
  const refresh = async () => {
    const at = Date.now()
    known = await bound(() => dayTimes(client, schema, at))
    readAt = at
  }
  // `wait`: the caller's bound (an API request's is shorter than the storage's own), so a slow read of the days
  // never holds a request past its deadline: the listing then reads every day, under the same bound.
  return async (wait: Bound = bound): Promise<SettledDay[]> => {
    const now = Date.now()
    try {
      if (!(await wait(partitioned))) return []
      if (now - readAt > refreshMs) {
        const shared = (reading ??= refresh().finally(() => (reading = undefined)))
        await wait(() => shared)
      }
    } catch {
      return []
    }
    return known.filter((d) => d.to.getTime() + skewMs <= d.readAt || (d.times === null && d.from.getTime() > now + skewMs))
  }
}

/** Each day partition's earliest and latest event time, in one statement (an index's ends per day). */
async function dayTimes(client: PostgresJs.Sql, schema: string, readAt: number): Promise<DayTimes[]> {
  const days = await partitionDays(client, schema)
  if (days.length === 0) return []
  const ms = (column: string) => `(extract(epoch from ${column}) * 1000)::float8`
  const rows = await client.unsafe<{ day: string; min: number | null; max: number | null }[]>(
    days.map((name) => `select '${name}' as day, ${ms('min(time)')} as min, ${ms('max(time)')} as max from "${schema}".events_p${name}`).join(' union all '),
  )
  return rows.map((r) => {
    const from = Date.parse(`${r.day.slice(0, 4)}-${r.day.slice(4, 6)}-${r.day.slice(6)}T00:00:00Z`)
    return { from: new Date(from), to: new Date(from + day), times: r.min === null || r.max === null ? null : { min: r.min, max: r.max }, readAt }
  })
}
