import { setMaxListeners } from 'node:events'
import { DeliveryError } from './http-client.js'

/** A running deadline: `signal` aborts when it passes; `clear()` stops the timer once the work is done. */
export interface Deadline {
  signal: AbortSignal
  clear(): void
}

/** Deadlines of the same length started within this many ms share one timer and signal (and so end up to this much late). */
export const deadlineShareMs = 10
/** At most this many attempts share one signal: each adds an abort listener, and adding or removing one walks the list. */
const maxSharers = 64

/** A timer and signal that attempts started in the same window with the same limit share. */
interface SharedDeadline {
  ms: number
  window: number
  controller: AbortController
  timer?: NodeJS.Timeout
  /** Attempts started on it and not cleared yet. */
  users: number
  /** Attempts started on it in all. */
  joined: number
}

/** The deadline new attempts join, per limit. */
const joinable = new Map<number, SharedDeadline>()

function share(ms: number, window: number): SharedDeadline {
  const controller = new AbortController()
  // Every attempt of the window listens to it (the HTTP client, an SDK): no leak warning for that many.
  setMaxListeners(0, controller.signal)
  const shared: SharedDeadline = { ms, window, controller, users: 0, joined: 0 }
  // Once the last attempt the window can take has had its `ms`: never early, at most deadlineShareMs late.
  const delay = (window + 1) * deadlineShareMs - performance.now() + ms
  shared.timer = setTimeout(() => {
    close(shared)
    controller.abort(new DeliveryError('timeout', `no complete response within ${ms} ms`))
  }, delay)
  joinable.set(ms, shared)
  return shared
}

function close(shared: SharedDeadline): void {
  if (joinable.get(shared.ms) === shared) joinable.delete(shared.ms)
}

/**
 * Start a deadline of `ms`. Its signal aborts with a `timeout` DeliveryError naming the limit, so whoever
 * gives up on it can record why. Attempts started within the same few ms with the same limit share one
 * signal and timer (an AbortController and a timer per attempt cost more than their HTTP request's own
 * bookkeeping): it aborts once the latest of them is past its limit. Listeners on it must be removed when
 * their work ends, as undici and untilAborted do.
 *
 * @example
 * const deadline = startDeadline(10_000)
 * try {
 *   return await publisher.publish(message, { signal: deadline.signal })
 * } finally {
 *   deadline.clear()
 * }
 */
export function startDeadline(ms: number): Deadline {
  const window = Math.floor(performance.now() / deadlineShareMs)
  let shared = joinable.get(ms)
  if (!shared || shared.window !== window || shared.joined >= maxSharers) shared = share(ms, window)
  shared.users++
  shared.joined++
  const joined = shared
  let cleared = false
  return {
    signal: joined.controller.signal,
    clear() {
      if (cleared) return
      cleared = true
      // The last attempt on it is done: no timer is left to run out (at thousands a second they would pile up).
      if (--joined.users === 0) {
        clearTimeout(joined.timer)
        close(joined)
      }
    },
  }
}

/**
 * `promise`, unless `signal` aborts first: then a rejection with `signal.reason`. For SDK calls that take no
 * signal; the call itself goes on, and its late outcome is ignored.
 *
 * @example
 * const messageId = await untilAborted(topic.publishMessage({ data }), signal)
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {})
    return Promise.reject(signal.reason)
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(signal.reason)
    signal.addEventListener('abort', abort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort))
  })
}
