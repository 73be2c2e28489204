import type { Granularity } from '../model/metrics.js'

// Bucket boundaries in JS, for the zero-filled slots of a response. They mirror the SQL of
// src/storage/sql-metrics.ts, which buckets the rows: fixed units epoch-aligned (weeks from Sunday
// 1970-01-04), months as calendar months counted from January 1970, all UTC.

const unitMs = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const
const firstSundayMs = 3 * unitMs.d

/** Most time slots one query may span (Outpost's limit). */
export const maxBuckets = 100_000

const monthIndex = (ms: number) => {
  const d = new Date(ms)
  return (d.getUTCFullYear() - 1970) * 12 + d.getUTCMonth()
}

/** Start of the bucket holding `ms`. */
export function bucketStart(ms: number, g: Granularity): number {
  if (g.unit === 'M') return Date.UTC(1970, Math.floor(monthIndex(ms) / g.value) * g.value, 1)
  const width = g.value * unitMs[g.unit]
  const anchor = g.unit === 'w' ? firstSundayMs : 0
  return Math.floor((ms - anchor) / width) * width + anchor
}

/** Start of the bucket after the one starting at `start`. */
export function nextBucket(start: number, g: Granularity): number {
  return g.unit === 'M' ? Date.UTC(1970, monthIndex(start) + g.value, 1) : start + g.value * unitMs[g.unit]
}

/** The bucket starts covering [start, end), or null when there would be more than `maxBuckets`. */
export function bucketSlots(start: Date, end: Date, g: Granularity): number[] | null {
  const slots: number[] = []
  for (let at = bucketStart(start.getTime(), g); at < end.getTime(); at = nextBucket(at, g)) {
    if (slots.length === maxBuckets) return null
    slots.push(at)
  }
  return slots
}

/** Seconds a rate is divided by: the bucket's length, or the whole range without a granularity. */
export function bucketSeconds(bucket: number | null, g: Granularity | undefined, start: Date, end: Date): number {
  if (!g || bucket === null) return (end.getTime() - start.getTime()) / 1000
  return (nextBucket(bucket, g) - bucket) / 1000
}
