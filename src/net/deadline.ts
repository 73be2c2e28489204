import { DeliveryError } from './http-client.js'

/** A running deadline: `signal` aborts when it passes; `clear()` stops the timer once the work is done. */
export interface Deadline {
  signal: AbortSignal
  clear(): void
}

/**
 * Start a deadline of `ms`. Its signal aborts with a `timeout` DeliveryError naming the limit, so whoever
 * gives up on it can record why.
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
  const controller = new AbortController()
  // Cleared as soon as the work is done: at thousands of attempts a second, timers left to run out would pile up.
  const timer = setTimeout(() => controller.abort(new DeliveryError('timeout', `no complete response within ${ms} ms`)), ms)
  return { signal: controller.signal, clear: () => clearTimeout(timer) }
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
