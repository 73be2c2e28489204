import { setMaxListeners } from 'node:events'
import type { AttemptResult } from '../model/attempt-result.js'
import { untilAborted } from '../net/deadline.js'
import { failureOf, type DescribeError, type FailureOptions } from './failure.js'

/**
 * The one connection of a publisher (a broker connection, an SDK client): opened by the first publish that needs
 * it, shared by the publishes after it, dropped when it fails so that the next publish opens a new one.
 */
export interface LazyConnection<T, Input = void> {
  /**
   * The open connection, or the one being opened; opens one when there is none (`input` goes to `open`).
   * Rejects with `signal.reason` once `signal` aborts, and after close().
   */
  get(signal: AbortSignal, input: Input): Promise<T>
  /** Forget `connection` (by default the current one) and close it in the background; the next get() opens a new one. */
  drop(connection?: T): void
  /** Whether close() was called. */
  readonly closed: boolean
  /** Close the current connection and wait until every dropped one is closed. */
  close(): Promise<void>
}

/** How to open and close one connection. */
export interface ConnectionLifecycle<T, Input> {
  /** Open a connection. `signal` aborts when the publish that asked for it gives up while it is being opened. */
  open(signal: AbortSignal, input: Input): Promise<T> | T
  close(connection: T): Promise<unknown> | unknown
}

interface Entry<T> {
  promise: Promise<T>
  opened: boolean
  value?: T
  /** Aborts when the publish that asked for it gave up while it was opening. */
  opening: AbortSignal
}

/**
 * A connection opened on first use (amqp_broker, cloudy_servicebus, cloudz_pubsub).
 *
 * @example
 * const connection = lazyConnection({ open: (signal) => connect(address, { signal }), close: (conn) => conn.close() })
 * const conn = await connection.get(signal)
 */
export function lazyConnection<T, Input = void>(lifecycle: ConnectionLifecycle<T, Input>): LazyConnection<T, Input> {
  return new OnDemandConnection(lifecycle)
}

class OnDemandConnection<T, Input> implements LazyConnection<T, Input> {
  readonly #lifecycle: ConnectionLifecycle<T, Input>
  #current: Entry<T> | undefined
  #closed = false
  /** Connections being closed in the background. */
  readonly #closing = new Set<Promise<void>>()

  constructor(lifecycle: ConnectionLifecycle<T, Input>) {
    this.#lifecycle = lifecycle
  }

  get closed(): boolean {
    return this.#closed
  }

  async get(signal: AbortSignal, input: Input): Promise<T> {
    for (;;) {
      if (this.#closed) throw new Error('the publisher is closed')
      if (signal.aborted) throw signal.reason
      const entry = (this.#current ??= this.#start(signal, input))
      let connection: T
      try {
        connection = await untilAborted(untilAborted(entry.promise, entry.opening), signal)
      } catch (err) {
        // Another publish gave up on this opening: this one still has time to open its own.
        if (entry.opening.aborted && !signal.aborted) continue
        throw err
      }
      if (!entry.opening.aborted) return connection
    }
  }

  drop(connection?: T): void {
    const entry = this.#current
    if (!entry || (connection !== undefined && entry.value !== connection)) return
    this.#current = undefined
    // One still opening is closed when it opens (see #start).
    if (entry.opened) this.#shut(entry.value as T)
  }

  async close(): Promise<void> {
    this.#closed = true
    // Wait for one being opened (at most until its publish gives up on it), so that it is closed too.
    const pending = this.#current
    this.drop()
    if (pending) await untilAborted(pending.promise, pending.opening).catch(() => {})
    while (this.#closing.size > 0) await Promise.all(this.#closing)
  }

  #start(signal: AbortSignal, input: Input): Entry<T> {
    // The asking publish's deadline bounds the opening only, never the open connection. An opening it gave up on
    // is forgotten at once, so a hung connect cannot hold every later publish.
    const opening = new AbortController()
    // Every publish that arrives while it opens waits on this signal: no leak warning for a full worker's worth.
    setMaxListeners(0, opening.signal)
    const giveUp = () => {
      opening.abort(signal.reason)
      if (this.#current === entry) this.#current = undefined
    }
    signal.addEventListener('abort', giveUp, { once: true })
    const entry: Entry<T> = { promise: Promise.resolve().then(() => this.#lifecycle.open(opening.signal, input)), opened: false, opening: opening.signal }
    entry.promise.then(
      (value) => {
        signal.removeEventListener('abort', giveUp)
        Object.assign(entry, { opened: true, value })
        if (this.#current !== entry) this.#shut(value)
      },
      () => {
        signal.removeEventListener('abort', giveUp)
        if (this.#current === entry) this.#current = undefined
      },
    )
    return entry
  }

  /** Close `connection` in the background; close() waits for it. */
  #shut(connection: T): void {
    const done: Promise<void> = Promise.resolve()
      .then(() => this.#lifecycle.close(connection))
      .then(
        () => {},
        () => {},
      )
      .finally(() => this.#closing.delete(done))
    this.#closing.add(done)
  }
}

const closedResult: AttemptResult = { ok: false, error_kind: 'unknown', error: 'the publisher is closed' }

/**
 * The checks before a send over `connection`: the publisher still open, then the destination's host allowed
 * (`checkHost`, which may resolve it, so the publisher is checked again after it). Answers what `checkHost` found,
 * or the failure to answer with instead of sending.
 *
 * @example
 * const host = await checkedHost(connection, checkHost)
 * if ('failure' in host) return host.failure
 */
export async function checkedHost<H extends object>(connection: { readonly closed: boolean }, checkHost: () => Promise<H | { failure: AttemptResult }>): Promise<H | { failure: AttemptResult }> {
  if (connection.closed) return { failure: closedResult }
  const host = await checkHost()
  return 'failure' in host || !connection.closed ? host : { failure: closedResult }
}

/** How `sendOver` turns a failed send into the attempt's result, and whether it gives up the connection. */
export interface SendFailure<T> extends FailureOptions {
  /** The type's own error tables (see failureOf). */
  describe: DescribeError
  /** Whether the connection the send failed on can no longer be trusted: the next attempt opens a new one. */
  drop(result: AttemptResult, connection: T): boolean
}

/**
 * One publish over a publisher's connection: `send` with it (opened first if need be, `input` going to `open`); a
 * failure, of the opening or of the send, is the failed attempt, and the connection is dropped when `failure.drop`
 * says so.
 *
 * @example
 * return sendOver(producers, undefined, (producer) => produce(producer, message), { signal, describe, drop: (result) => result.error_kind === 'network' })
 */
export async function sendOver<T, Input>(connection: LazyConnection<T, Input>, input: Input, send: (connection: T) => Promise<AttemptResult>, failure: SendFailure<T>): Promise<AttemptResult> {
  let current: T | undefined
  try {
    current = await connection.get(failure.signal, input)
    return await send(current)
  } catch (err) {
    const result = failureOf(err, failure.describe, failure)
    if (current !== undefined && failure.drop(result, current)) connection.drop(current)
    return result
  }
}

/**
 * One batch over a publisher's connection: `send` answers one result per message; a failure to open the connection
 * (or a throw of `send`) is every message's result. The connection is dropped when `failure.drop` says so of any
 * failed message.
 *
 * @example
 * return sendBatchOver(connection, undefined, messages.length, (open) => publishAll(open, messages), { signal, describe, drop })
 */
export async function sendBatchOver<T, Input>(
  connection: LazyConnection<T, Input>,
  input: Input,
  count: number,
  send: (connection: T) => Promise<AttemptResult[]>,
  failure: SendFailure<T>,
): Promise<AttemptResult[]> {
  let current: T | undefined
  let results: AttemptResult[]
  try {
    current = await connection.get(failure.signal, input)
    results = await send(current)
  } catch (err) {
    results = new Array<AttemptResult>(count).fill(failureOf(err, failure.describe, failure))
  }
  const open = current
  if (open !== undefined && results.some((result) => !result.ok && failure.drop(result, open))) connection.drop(open)
  return results
}
