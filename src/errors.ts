/** The one table from error code to HTTP status. HTTP code never invents status numbers. */
export const errorStatus = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  validation: 422,
  internal: 500,
  unavailable: 503,
} as const

/** What went wrong, as a code (`validation`, `not_found`, `unavailable`, …); `errorStatus` maps it to the HTTP status. */
export type OutflowErrorCode = keyof typeof errorStatus

/** Field path -> what is wrong with it, e.g. `{ "config.url": "required" }`. */
export type ErrorData = Record<string, string>

/**
 * An empty ErrorData without a prototype: its keys are field and parameter names a client chose, and
 * on a plain object `__proto__` or `constructor` would hit Object.prototype instead of becoming a key.
 *
 * @example
 * const data = errorData(); data['__proto__'] = 'unexpected field' // an own key, serialized as such
 */
export function errorData(): ErrorData {
  return Object.create(null) as ErrorData
}

export interface OutflowErrorOptions {
  data?: ErrorData
  headers?: Record<string, string>
  cause?: unknown
  /**
   * The HTTP status received, where it is not the code's own: `outflow/client` keeps a proxy's 502 or a
   * 429 as they came, and 0 when no answer came at all (a network failure or a timeout).
   */
  status?: number
}

/**
 * The single error type of Outflow. Its `code` decides the HTTP status through `errorStatus`.
 *
 * @example
 * throw new OutflowError('validation', 'validation error', { data: { 'config.url': 'required' } })
 */
export class OutflowError extends Error {
  /** What went wrong; the same code an HTTP client sees as the status. */
  readonly code: OutflowErrorCode
  /** The HTTP status of the code (422 for `validation`, …); in `outflow/client`, the status received (0: no answer). */
  readonly status: number
  /** Which fields or parameters were wrong, and how, when the error is about input. */
  readonly data?: ErrorData
  /** Headers the HTTP answer carries (`Retry-After` on `unavailable`, `Allow` on a 405). */
  readonly headers?: Record<string, string>

  constructor(code: OutflowErrorCode, message: string, options: OutflowErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'OutflowError'
    this.code = code
    this.status = options.status ?? errorStatus[code]
    this.data = options.data
    this.headers = options.headers
  }

  /** The JSON error body: `{ status, message, data? }`. */
  toJSON(): { status: number; message: string; data?: ErrorData } {
    return this.data ? { status: this.status, message: this.message, data: this.data } : { status: this.status, message: this.message }
  }
}

/** Shorthand for a 404 naming what was not found. */
export function notFound(what: string, id: string): OutflowError {
  return new OutflowError('not_found', `${what} not found: ${id}`)
}
