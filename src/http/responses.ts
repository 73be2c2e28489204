import { OutflowError } from '../errors.js'
import { errorFields } from '../logger.js'

/** Where the handler reports real faults (500s), pino-style (fields, then message); the response itself never carries internals. */
export interface HttpLogger {
  error(fields: Record<string, unknown>, message: string): void
}

const jsonHeaders = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' }

/**
 * A JSON response; API answers are never cached since they may carry secrets and tokens.
 *
 * @example
 * jsonResponse(201, destination)
 */
export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { ...jsonHeaders, ...headers } })
}

/**
 * The JSON error response for anything thrown while serving a request: an OutflowError keeps its
 * status, body and headers; anything else is a 500 `internal error`, logged with a short description (never a query or its parameters).
 *
 * @example
 * errorResponse(new OutflowError('not_found', 'tenant not found: acme')) // 404 { status: 404, message: … }
 */
export function errorResponse(error: unknown, logger?: HttpLogger, context: Record<string, unknown> = {}): Response {
  if (error instanceof OutflowError && error.status < 500) return jsonResponse(error.status, error.toJSON(), error.headers)
  const status = error instanceof OutflowError ? error.status : 500
  logger?.error({ ...context, status, error: errorFields(error) }, 'http request failed')
  const headers = error instanceof OutflowError ? error.headers : undefined
  return jsonResponse(status, { status, message: status === 503 ? 'service unavailable' : 'internal error' }, headers)
}
