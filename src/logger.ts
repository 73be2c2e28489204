/**
 * Where Outflow writes what it does, in pino's argument order: the structured fields first, then the
 * message (`logger.info({ tenant_id }, 'message')`). A pino logger fits as is; so does any logger
 * with these four methods. Fields never carry a secret, a credential or a payload body.
 */
export interface Logger {
  /** Every attempt that succeeded, and other detail. */
  debug(fields: Record<string, unknown>, message: string): void
  /** What the engine did: start, stop, an attempt that failed and will be retried. */
  info(fields: Record<string, unknown>, message: string): void
  /** What needs attention: a delivery that failed for good, a disabled destination, a storage outage. */
  warn(fields: Record<string, unknown>, message: string): void
  /** What went wrong inside the engine: a failed storage call, a loop that threw. */
  error(fields: Record<string, unknown>, message: string): void
}

const ignore = () => {}
const line = (write: (...args: unknown[]) => void) => (fields: Record<string, unknown>, message: string) =>
  Object.keys(fields).length ? write(`[outflow] ${message}`, fields) : write(`[outflow] ${message}`)

/**
 * The default without a `logger`: warnings and errors to stderr (a generated key file to back up, a
 * storage outage), nothing else. Attempt lines (debug, info) need a logger the host chose.
 */
export const stderrLogger: Logger = { debug: ignore, info: ignore, warn: line(console.warn), error: line(console.error) }

/** Longest error message a log line carries. */
const maxMessage = 200

/**
 * A short, safe description of an error for a log line: its first line (at most 200 characters)
 * and its code. A failed query's error names the whole statement and its parameters (thousands of
 * ids in a batch, or payloads): the driver's own error underneath is logged instead.
 *
 * @example
 * logger.error({ error: errorFields(err) }, 'recording attempts failed') // { message: 'relation "attempts" does not exist', code: '42P01' }
 */
export function errorFields(err: unknown): { message: string; code?: string } {
  let error = err
  // drizzle's DrizzleQueryError: `Failed query: <sql>\nparams: <values>`, the driver's error as cause.
  while (isQueryError(error) && error.cause !== undefined) error = error.cause
  const text = error instanceof Error ? error.message : typeof error === 'string' ? error : 'unknown error'
  const firstLine = isQueryError(error) ? 'query failed' : (text.split('\n', 1)[0] ?? '')
  const message = firstLine.length > maxMessage ? `${firstLine.slice(0, maxMessage)}…` : firstLine
  const code = (error as { code?: unknown } | null)?.code
  return typeof code === 'string' || typeof code === 'number' ? { message, code: String(code) } : { message }
}

function isQueryError(err: unknown): err is { query: unknown; params: unknown; cause?: unknown } {
  return typeof err === 'object' && err !== null && 'query' in err && 'params' in err
}
