import type { IncomingHttpHeaders } from 'node:http'
import { Pool, type Dispatcher } from 'undici'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import type { ClientTls } from './client-tls.js'
import { proxyConnector, type EgressProxy } from './proxy.js'
import { guardedLookup, ipLiteral, isPrivateAddress, SSRF_ERROR_CODE, ssrfError } from './ssrf.js'
import { errorCodes, transportErrorKind } from './transport-error.js'
import { parseRetryAfter } from '../retry-after.js'

/** Response bodies are recorded up to this many bytes (DESIGN §3: 16 KiB). */
export const RESPONSE_BODY_LIMIT = 16 * 1024

/** Past this many body bytes the socket is closed instead of draining more junk for reuse. */
const DRAIN_LIMIT = 256 * 1024
/** Sockets per origin; more concurrent deliveries queue rather than opening unbounded connections. */
const CONNECTIONS_PER_ORIGIN = 64
/** Idle pools beyond this many origins are closed, least recently used first. */
const MAX_POOLS = 512

/** A failed HTTP exchange, classified for the attempt log. */
export class DeliveryError extends Error {
  readonly kind: ErrorKind

  constructor(kind: ErrorKind, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'DeliveryError'
    this.kind = kind
  }
}

/** How outbound HTTP behaves for one engine. */
export interface HttpClientOptions {
  /** Allow loopback/private/link-local targets (development and tests only). */
  allowPrivateNetworks: boolean
  /** Deadline of the whole exchange (connect, headers and body); once it aborts, the exchange fails as a `timeout`. */
  signal: AbortSignal
  /** mTLS: the client certificate to present (and the CA to pin); such connections get pools of their own. */
  tls?: ClientTls
  /** Send through this HTTP CONNECT proxy (the guard still checks the target's address, see proxy.ts). */
  proxy?: EgressProxy
}

/** What is recorded of a response. */
export interface HttpResponseSummary {
  status: number
  /** Lower-case names; repeated headers joined with `, `. */
  headers: Record<string, string>
  /** UTF-8 text, at most `RESPONSE_BODY_LIMIT` bytes. */
  body: string
}

/** The request of `sendHttp`. */
export interface HttpRequestInit {
  method: 'POST'
  headers: Record<string, string>
  body: string
}

// Keyed by (allowPrivateNetworks, origin) so a guarded pool never shares sockets with an open one.
const pools = new Map<string, Pool>()

/** A parsed destination URL: what sendHttp needs of it, and the keys of its two pools. */
interface Target {
  origin: string
  hostname: string
  path: string
  openKey: string
  guardedKey: string
}

/** Parsed URLs by their text: every delivery to a destination has the same. Bounded: cleared when full. */
const targets = new Map<string, Target>()
const maxTargets = 1_000

function targetOf(url: string): Target {
  let target = targets.get(url)
  if (target) return target
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    throw new DeliveryError('configuration', 'invalid URL')
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new DeliveryError('configuration', `unsupported protocol ${parsed.protocol}`)
  const { origin, hostname } = parsed
  target = { origin, hostname, path: `${parsed.pathname}${parsed.search}`, openKey: `open ${origin}`, guardedKey: `guarded ${origin}` }
  if (targets.size >= maxTargets) targets.clear()
  targets.set(url, target)
  return target
}

/** The key used last: already the most recent in `pools`, so using it again needs no re-insertion. */
let lastKey: string | undefined

function poolFor(target: Target, allowPrivateNetworks: boolean, tls?: ClientTls, proxy?: EgressProxy): Pool {
  const { origin } = target
  const base = allowPrivateNetworks ? target.openKey : target.guardedKey
  const key = tls || proxy ? `${base}${tls ? ` tls ${tls.id}` : ''}${proxy ? ` via ${proxy.id}` : ''}` : base
  const existing = pools.get(key)
  if (existing && !existing.closed && !existing.destroyed) {
    // Re-insert so Map order stays least-recently-used first.
    if (key !== lastKey) {
      pools.delete(key)
      pools.set(key, existing)
      lastKey = key
    }
    return existing
  }
  lastKey = key
  const connect = {
    ...(allowPrivateNetworks ? {} : { lookup: guardedLookup }),
    // A pinned CA replaces the default trust store for this receiver.
    ...(tls?.cert ? { cert: tls.cert, key: tls.key } : {}),
    ...(tls?.ca ? { ca: tls.ca } : {}),
  }
  // Through a proxy the connector resolves, checks and tunnels; otherwise undici connects with the guarded lookup.
  const connector = proxy ? proxyConnector(proxy, { guarded: !allowPrivateNetworks, ...(tls ? { tls } : {}) }) : Object.keys(connect).length ? connect : undefined
  const pool = new Pool(origin, { connections: CONNECTIONS_PER_ORIGIN, ...(connector ? { connect: connector } : {}) })
  pools.set(key, pool)
  if (pools.size > MAX_POOLS) {
    const [oldestKey, oldest] = pools.entries().next().value as [string, Pool]
    pools.delete(oldestKey)
    void oldest.close().catch(() => undefined)
  }
  return pool
}

/**
 * Close every pooled connection (engine shutdown). In-flight requests finish first.
 *
 * @example
 * await closeHttpClients()
 */
export async function closeHttpClients(): Promise<void> {
  const all = [...pools.values()]
  pools.clear()
  lastKey = undefined
  await Promise.all(all.map((pool) => pool.close().catch(() => undefined)))
}

/**
 * One exchange of sendHttp as undici's dispatcher reports it: the status, the headers and the body up to the
 * limit, the rest drained so the socket goes back to the pool (or, past DRAIN_LIMIT, closed). request() would
 * wrap each response in a Readable stream and an async resource, which cost more than parsing the response.
 * `signal` aborts the exchange; its listener is removed once the exchange has ended.
 */
class ResponseCollector implements Dispatcher.DispatchHandler, EventListenerObject {
  readonly #signal: AbortSignal
  readonly #resolve: (response: HttpResponseSummary) => void
  readonly #reject: (err: unknown) => void
  #controller?: Dispatcher.DispatchController
  #status = 0
  #headers: IncomingHttpHeaders = {}
  #chunks: Buffer[] = []
  #kept = 0
  #seen = 0
  #ended = false

  constructor(signal: AbortSignal, resolve: (response: HttpResponseSummary) => void, reject: (err: unknown) => void) {
    this.#signal = signal
    this.#resolve = resolve
    this.#reject = reject
    // The collector is the listener itself (handleEvent): no closure per exchange.
    signal.addEventListener('abort', this, { once: true })
  }

  /** The deadline passed: abort the exchange (once it has a socket; see onRequestStart). */
  handleEvent(): void {
    this.#controller?.abort(this.#signal.reason as Error)
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    // Aborted while it waited for a socket: it ends before it is sent.
    if (this.#signal.aborted) controller.abort(this.#signal.reason as Error)
    else this.#controller = controller
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    // 1xx answers come before the response.
    if (statusCode < 200) return
    this.#status = statusCode
    this.#headers = headers
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    this.#seen += chunk.length
    if (this.#kept < RESPONSE_BODY_LIMIT) {
      const part = chunk.subarray(0, RESPONSE_BODY_LIMIT - this.#kept)
      this.#chunks.push(part)
      this.#kept += part.length
    }
    if (this.#seen > DRAIN_LIMIT) {
      // What was kept is the answer; aborting closes the socket rather than read more.
      this.onResponseEnd()
      controller.abort(new Error('response body too large to drain'))
    }
  }

  onResponseEnd(): void {
    if (this.#end()) return
    const chunks = this.#chunks
    const body = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks).toString('utf8')
    this.#resolve({ status: this.#status, headers: flattenHeaders(this.#headers), body })
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (!this.#end()) this.#reject(err)
  }

  /** True if the exchange had ended already. */
  #end(): boolean {
    if (this.#ended) return true
    this.#ended = true
    this.#signal.removeEventListener('abort', this)
    return false
  }
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const flat: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined) flat[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value
  }
  return flat
}

function toDeliveryError(err: unknown, signal: AbortSignal): DeliveryError {
  if (err instanceof DeliveryError) return err
  if (signal.aborted) {
    return signal.reason instanceof DeliveryError ? signal.reason : new DeliveryError('timeout', 'no complete response before the deadline', { cause: signal.reason })
  }
  const message = err instanceof Error ? err.message : String(err)
  const kind = transportErrorKind(err) ?? 'network'
  if (kind === 'ssrf') {
    const ssrf = [err, (err as { cause?: unknown }).cause].find((e) => (e as { code?: unknown })?.code === SSRF_ERROR_CODE)
    return new DeliveryError('ssrf', ssrf instanceof Error ? ssrf.message : message, { cause: err })
  }
  // undici says "fetch failed" or "other side closed"; the socket's code says what happened.
  const code = errorCodes(err)[0]
  return new DeliveryError(kind, code && !message.includes(code) ? `${code}: ${message}` : message, { cause: err })
}

/**
 * POST through a pooled keep-alive connection; never follows redirects.
 * Throws `DeliveryError` with kind `ssrf`, `dns`, `tls`, `connection_refused`, `timeout`, `network` (or
 * `configuration` for an unusable URL).
 *
 * @example
 * const res = await sendHttp(url, { method: 'POST', headers, body }, { allowPrivateNetworks: false, signal: AbortSignal.timeout(10_000) })
 */
export async function sendHttp(url: string, init: HttpRequestInit, options: HttpClientOptions): Promise<HttpResponseSummary> {
  const target = targetOf(url)
  if (!options.allowPrivateNetworks) {
    // Sockets skip DNS lookup for IP literals, so the connect-time guard would never see them: refuse here.
    // WHATWG URL has already normalised forms like http://2130706433/ and http://0x7f.1/ to dotted quads.
    const literal = ipLiteral(target.hostname)
    if (literal !== null && isPrivateAddress(literal)) throw new DeliveryError('ssrf', ssrfError(literal, literal).message)
  }
  const { signal } = options
  try {
    if (signal.aborted) throw signal.reason
    const pool = poolFor(target, options.allowPrivateNetworks, options.tls, options.proxy)
    const request = { path: target.path, method: init.method, headers: init.headers, body: init.body }
    return await new Promise<HttpResponseSummary>((resolve, reject) => pool.dispatch(request, new ResponseCollector(signal, resolve, reject)))
  } catch (err) {
    throw toDeliveryError(err, options.signal)
  }
}

/**
 * The kind of a failed HTTP answer (webhook, relay).
 *
 * @example
 * errorKindForStatus(502) // 'http_5xx'
 */
export function errorKindForStatus(status: number): ErrorKind {
  if (status === 401 || status === 403) return 'authentication'
  if (status === 404) return 'not_found'
  if (status === 429) return 'throttled'
  if (status >= 300 && status < 400) return 'redirect'
  if (status >= 400 && status < 500) return 'http_4xx'
  if (status >= 500 && status < 600) return 'http_5xx'
  return 'unknown'
}

/**
 * The attempt result of a response: 2xx succeeds; 410 asks to disable; 429/503 may carry Retry-After.
 *
 * @example
 * httpAttemptResult({ status: 503, headers: { 'retry-after': '120' }, body: '' }) // { ok: false, retry_after_ms: 120000, … }
 */
export function httpAttemptResult(response: HttpResponseSummary): AttemptResult {
  const recorded = { response_status_code: response.status, response_headers: response.headers, response_body: response.body }
  if (response.status >= 200 && response.status < 300) return { ok: true, ...recorded }
  const redirect = response.status >= 300 && response.status < 400 ? ' (redirects are not followed)' : ''
  const result: AttemptResult = { ok: false, ...recorded, error_kind: errorKindForStatus(response.status), error: `HTTP ${response.status}${redirect}` }
  if (response.status === 410) result.disable = true
  if (response.status === 429 || response.status === 503) {
    const delay = parseRetryAfter(response.headers['retry-after'])
    if (delay !== undefined) result.retry_after_ms = delay
  }
  return result
}

/**
 * The attempt result of a failed exchange (no response): the error kind and message, nothing else.
 *
 * @example
 * attemptResultFromError(new DeliveryError('timeout', 'no response within 10000 ms'))
 */
export function attemptResultFromError(err: unknown): AttemptResult {
  const kind: ErrorKind = err instanceof DeliveryError ? err.kind : 'unknown'
  const message = err instanceof Error ? err.message : String(err)
  return { ok: false, response_status_code: null, response_headers: null, response_body: null, error_kind: kind, error: message }
}
