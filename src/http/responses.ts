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
  return jsonTextResponse(status, JSON.stringify(body), headers)
}

/** A handler's answer that is JSON text already, sent byte for byte (a thin delivery's payload). */
export class JsonText {
  constructor(readonly text: string) {}
}

/** A response of JSON text sent as it is (bytes a client checks against a digest), never cached. */
export function jsonTextResponse(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(text, { status, headers: { ...jsonHeaders, ...headers } })
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

/**
 * `response` with `headers` added, as a new Response. Setting them on `response.headers` is not enough
 * where @hono/node-server has replaced the global Response (as its server does): once the body is read,
 * that Response answers from its original init, without them.
 *
 * @example
 * withHeaders(errorResponse(error), { Deprecation: 'true' })
 */
export function withHeaders(response: Response, headers: Record<string, string>): Response {
  if (Object.keys(headers).length === 0) return response
  const merged = new Headers(response.headers)
  for (const [name, value] of Object.entries(headers)) merged.set(name, value)
  return new Response(response.body, { status: response.status, headers: merged })
}
