/**
 * `Retry-After` as a delay in ms: delta-seconds or an HTTP-date; undefined when absent or unreadable.
 * Read by the webhook publisher (a receiver asking to wait) and by `outflow/client` (the API asking to wait).
 *
 * @example
 * parseRetryAfter('120') // 120000
 */
export function parseRetryAfter(value: string | null | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined || value === null) return undefined
  const trimmed = value.trim()
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000
  const at = Date.parse(trimmed)
  return Number.isNaN(at) ? undefined : Math.max(0, at - now)
}
