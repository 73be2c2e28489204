/** Latency summary in milliseconds. */
export interface LatencySummary {
  n: number
  p50: number
  p99: number
  max: number
}

/**
 * Nearest-rank percentile of an ascending array.
 *
 * @example
 * percentile([1, 2, 3, 4], 50) // 2
 */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!
}

/** p50, p99 and max of a set of samples (not mutated). */
export function summarize(samples: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(samples).sort()
  const arr = Array.from(sorted)
  return { n: arr.length, p50: percentile(arr, 50), p99: percentile(arr, 99), max: arr.length ? arr[arr.length - 1]! : Number.NaN }
}
