import type PostgresJs from 'postgres'
import { createPartitionsAhead, daysAhead, dropPartitionsBefore, historyPartitioned } from './postgres-partitions.js'
import type { DroppedDay, PartitionRequest } from './storage.js'
import { settledDays } from './postgres-history-days.js'

/** How often a storage on the partitioned layout makes the coming days' partitions by itself (the pruner also does, each pass). */
const aheadEveryMs = 3_600_000

/** How often a storage on the plain layout looks again: another process may have moved it (`outflow migrate --partition-history`). */
const plainRecheckMs = 60_000

/**
 * The storage's side of the partitioned layout: which layout the schema has (read once, again after migrate(), and
 * every minute while plain, so an engine running beside a move goes on to claim and prune as the new layout wants),
 * the coming days' partitions kept made (hourly, so an engine without retention never falls into DEFAULT),
 * retention's drop of whole days, and the days a listing may leave out.
 */
export function partitionsKeeper(client: PostgresJs.Sql, schema: string, bound: <T>(work: () => Promise<T>) => Promise<T>) {
  let layout: Promise<boolean> | undefined
  /** When the layout was last read as plain (undefined: not plain, or not read yet). */
  let plainAt: number | undefined
  let timer: NodeJS.Timeout | undefined
  const keepAhead = () => {
    if (timer) return
    timer = setInterval(() => void createPartitionsAhead(client, schema, new Date(), daysAhead).catch(() => {}), aheadEveryMs)
    timer.unref()
  }
  const partitioned = (): Promise<boolean> => {
    if (!layout || (plainAt !== undefined && Date.now() - plainAt > plainRecheckMs)) {
      plainAt = undefined
      const reading = bound(() => historyPartitioned(client, schema))
      layout = reading
      reading.then(
        (value) => (value ? keepAhead() : (plainAt = Date.now())),
        () => {
          if (layout === reading) layout = undefined
        },
      )
    }
    return layout
  }
  return {
    partitioned,
    /** The days a listing may leave out (postgres-history-days.ts). */
    settledDays: settledDays(client, schema, partitioned, bound),
    /** After migrate(): read the layout again, and on the partitioned one keep the coming days made. */
    async migrated(): Promise<void> {
      layout = undefined
      await partitioned()
    },
    async prune(q: PartitionRequest): Promise<DroppedDay[]> {
      if (!(await partitioned())) return []
      // Dropping first: a day left detached by an interrupted pass is gone before its day is made again.
      const dropped = await bound(() => dropPartitionsBefore(client, schema, q.before))
      await bound(() => createPartitionsAhead(client, schema, q.now, daysAhead))
      return dropped
    },
    close(): void {
      clearInterval(timer)
    },
  }
}
