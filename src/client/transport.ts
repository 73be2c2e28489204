import { errorStatus, OutflowError, type ErrorData, type OutflowErrorCode } from '../errors.js'
import { retryDelay, type RetryPolicy } from './retry.js'

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/** One API call as the client makes it. */
export interface Call {
  method: HttpMethod
  /** Below the base URL, encoded, with its query string: `/tenants/acme/events?limit=5`. */
  path: string
  /** Sent as JSON when defined. */
  body?: unknown
  /** Whether repeating the call changes nothing more than doing it once, so it may be retried. */
  idempotent: boolean
  /** Statuses beside 2xx answered as a result, not thrown (health's 503 carries its report). */
  accept?: readonly number[]
}

/** What a call answered: its status and JSON body. */
export interface Answer {
  status: number
  body: unknown
}

/** What the transport is set up with: where, as whom, with which fetch, how long and how many times. */
export interface TransportSettings {
  baseUrl: string
  /** The bearer credential, read per request (a tenant token may be renewed); undefined: none sent. */
  credential: () => string | undefined | Promise<string | undefined>
  fetch: typeof fetch
  headers: Record<string, string>
  timeoutMs: number
  retry: RetryPolicy
}

const codeOfStatus = new Map<number, OutflowErrorCode>(Object.entries(errorStatus).map(([code, status]) => [status, code as OutflowErrorCode]))

/** The code of a status: its own in the table, else `unavailable` for "try later" answers, `internal` or `bad_request` by class. */
function codeFor(status: number): OutflowErrorCode {
  const own = codeOfStatus.get(status)
  if (own) return own
  if (status === 0 || status === 429 || status === 502 || status === 504) return 'unavailable'
  return status >= 500 ? 'internal' : 'bad_request'
}

/** `{ field: problem }` of an error body, when it is one. */
function errorDataOf(body: unknown): ErrorData | undefined {
  const data = (body as { data?: unknown } | null)?.data
  if (typeof data !== 'object' || data === null || Array.isArray(data)) return undefined
  return Object.fromEntries(Object.entries(data).filter(([, problem]) => typeof problem === 'string')) as ErrorData
}

/** A non-2xx answer as an OutflowError: the status received, its code, the body's message and data, the headers. */
function answerError(call: Call, response: Response, body: unknown): OutflowError {
  const message = (body as { message?: unknown } | null)?.message
  return new OutflowError(codeFor(response.status), typeof message === 'string' ? message : `${call.method} ${call.path}: HTTP ${response.status}`, {
    status: response.status,
    data: errorDataOf(body),
    headers: Object.fromEntries(response.headers),
  })
}

/** The innermost message of a fetch failure (`fetch failed` wraps `connect ECONNREFUSED …`). */
function rootMessage(error: unknown): string {
  const messages: string[] = []
  for (let e = error; e instanceof Error && messages.length < 4; e = e.cause) messages.push(e.message)
  return messages.join(': ') || String(error)
}

/** A call without an answer (network failure or timeout): status 0, code `unavailable`, the fetch error as cause. */
function noAnswerError(call: Call, url: string, error: unknown, timedOut: boolean, timeoutMs: number): OutflowError {
  const why = timedOut ? `no answer within ${timeoutMs} ms` : `no answer: ${rootMessage(error)}`
  return new OutflowError('unavailable', `${call.method} ${url}: ${why}`, { status: 0, cause: error })
}

async function readBody(response: Response): Promise<unknown> {
  const text = await response.text()
  if (!text) return undefined
  try {
    return JSON.parse(text) as unknown
  } catch {
    return text
  }
}

/** Sends calls to the API: one try, then retries of idempotent calls while `retryDelay` allows. */
export class Transport {
  constructor(private readonly settings: TransportSettings) {}

  /** The call's answer, or its OutflowError once retries (of an idempotent call) are spent. */
  async send(call: Call): Promise<Answer> {
    for (let retry = 0; ; retry++) {
      const outcome = await this.#try(call)
      if (!(outcome instanceof OutflowError)) return outcome
      const delay = call.idempotent ? retryDelay(outcome, retry, this.settings.retry) : undefined
      if (delay === undefined) throw outcome
      await new Promise((resolve) => setTimeout(resolve, delay))
    }
  }

  async #try(call: Call): Promise<Answer | OutflowError> {
    const { baseUrl, fetch, timeoutMs } = this.settings
    const url = `${baseUrl}${call.path}`
    const headers: Record<string, string> = { accept: 'application/json', ...this.settings.headers }
    const credential = await this.settings.credential()
    if (credential !== undefined) headers.authorization = `Bearer ${credential}`
    if (call.body !== undefined) headers['content-type'] = 'application/json'
    const signal = AbortSignal.timeout(timeoutMs)
    try {
      const response = await fetch(url, { method: call.method, headers, body: call.body === undefined ? undefined : JSON.stringify(call.body), signal })
      const body = await readBody(response)
      if (response.ok || call.accept?.includes(response.status)) return { status: response.status, body }
      return answerError(call, response, body)
    } catch (error) {
      return noAnswerError(call, url, error, signal.aborted, timeoutMs)
    }
  }
}
