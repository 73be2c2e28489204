import { performance } from 'node:perf_hooks'
import { failureBeforeSending } from '../destinations/failure.js'
import type { DeliveryMessage, Publisher } from '../destinations/types.js'
import type { AttemptResult } from '../model/attempt-result.js'
import { startDeadline } from '../net/deadline.js'

/** One message's result in a batch, and how long its attempt took. */
export interface BatchOutcome {
  result: AttemptResult
  durationMs: number
}

const missing: AttemptResult = { ok: false, error_kind: 'unknown', error: 'the publisher gave no result for this message' }

/**
 * Publish a batch of one destination's messages: one `publishBatch` call under one deadline of `timeoutMs`, or,
 * for a type without it, one `publish` after the other in order, each under its own deadline. One outcome per
 * message, in order; failures are results, never thrown.
 *
 * @example
 * const outcomes = await publishBatch(publisher, messages, 10_000) // outcomes[i] belongs to messages[i]
 */
export async function publishBatch(publisher: Publisher, messages: DeliveryMessage[], timeoutMs: number): Promise<BatchOutcome[]> {
  if (!publisher.publishBatch) {
    const outcomes: BatchOutcome[] = []
    for (const message of messages) {
      const started = performance.now()
      const [result] = await deadlined(timeoutMs, 1, (signal) => publisher.publish(message, { signal }).then((r) => [r]))
      outcomes.push({ result: result ?? missing, durationMs: performance.now() - started })
    }
    return outcomes
  }
  const batch = publisher.publishBatch.bind(publisher)
  const started = performance.now()
  const results = await deadlined(timeoutMs, messages.length, (signal) => batch(messages, { signal }))
  const durationMs = performance.now() - started
  return messages.map((_, i) => ({ result: results[i] ?? missing, durationMs }))
}

/** Run `send` under a deadline; a throw becomes `count` copies of its failure. */
async function deadlined(timeoutMs: number, count: number, send: (signal: AbortSignal) => Promise<AttemptResult[]>): Promise<AttemptResult[]> {
  const deadline = startDeadline(timeoutMs)
  try {
    return await send(deadline.signal)
  } catch (err) {
    return Array.from({ length: count }, () => failureBeforeSending(err))
  } finally {
    deadline.clear()
  }
}
