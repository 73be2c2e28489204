/**
 * Wall-clock milliseconds with sub-millisecond resolution. Built on the monotonic clock from the
 * process's time origin, so two processes on one machine can compare stamps (sink vs publisher).
 *
 * @example
 * const t0 = wallNow(); await work(); const ms = wallNow() - t0
 */
export function wallNow(): number {
  return performance.timeOrigin + performance.now()
}

/** A promise that resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)))
}

/**
 * Resolve with `promise`, or reject with a message naming `what` once `ms` have passed.
 * Every wait in the benchmarks goes through this so a stuck system cannot hang a run.
 *
 * @example
 * await withTimeout(sink.expect(2000), 30_000, 'the sink to receive 2,000 deliveries')
 */
export async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${(ms / 1000).toFixed(0)} s waiting for ${what}`)), ms)
  })
  try {
    return await Promise.race([promise, timeout])
  } finally {
    clearTimeout(timer)
  }
}
