import type { AttemptResult } from '../model/attempt-result.js'

/** What one call of a batch API takes: at most `entries` entries of at most `bytes` bytes together. */
export interface CallLimits {
  entries: number
  bytes: number
  /** The largest entry the service takes (default `bytes`): a larger one goes alone, so it is refused alone. */
  entryBytes?: number
}

/**
 * Split entries of these sizes into consecutive calls, in order, each within `limits`: `[start, end)` index ranges.
 * An entry larger than the service takes (`limits.entryBytes`, else `limits.bytes`) gets a call of its own, so the
 * service answers for it as it would for a single publish (and the others are not refused with it).
 *
 * @example
 * splitCalls([100, 100, 100], { entries: 2, bytes: 1000 }) // [[0, 2], [2, 3]]
 */
export function splitCalls(sizes: readonly number[], limits: CallLimits): [number, number][] {
  const calls: [number, number][] = []
  let start = 0
  let bytes = 0
  const entryBytes = limits.entryBytes ?? limits.bytes
  for (let i = 0; i < sizes.length; i++) {
    const size = sizes[i]!
    const alone = size > entryBytes || sizes[i - 1]! > entryBytes
    if (i > start && (alone || i - start === limits.entries || bytes + size > limits.bytes)) {
      calls.push([start, i])
      start = i
      bytes = 0
    }
    bytes += size
  }
  if (start < sizes.length) calls.push([start, sizes.length])
  return calls
}

/**
 * Send the calls of a batch one after the other, in order; `send` gets a call's entries and the index of its first,
 * and answers one result per entry, never throwing. When `ordered` (a FIFO queue, an ordered destination), a failed entry stops the calls after its own: their
 * entries are not sent (so nothing overtakes it) and fail with its kind, to be retried behind it.
 *
 * @example
 * const results = await sendCalls(entries, splitCalls(sizes, { entries: 10, bytes: 256 * 1024 }), (part) => sendBatch(part), false)
 */
export async function sendCalls<T>(entries: readonly T[], calls: readonly [number, number][], send: (part: T[], start: number) => Promise<AttemptResult[]>, ordered: boolean): Promise<AttemptResult[]> {
  const results: AttemptResult[] = []
  for (const [start, end] of calls) {
    const failed = ordered ? results.find((r) => !r.ok) : undefined
    if (failed) {
      const notSent: AttemptResult = { ok: false, error_kind: failed.error_kind ?? 'unknown', error: `not sent: an earlier message of this ordered batch failed (${failed.error ?? failed.error_kind})` }
      for (let i = start; i < end; i++) results.push(notSent)
      continue
    }
    results.push(...(await send(entries.slice(start, end), start)))
  }
  return results
}

/**
 * One call of an AWS batch API (PutEvents, PutRecords, SendMessageBatch), which answers an outcome per entry:
 * `read` turns the call's output, with its HTTP status, into one result per entry; a failure of the whole call
 * (refused, unreachable, past the deadline) is every entry's result, as `failed` makes it.
 *
 * @example
 * return awsBatchCall(entries.length, () => client.send(command, { abortSignal: signal }), (out, status) => entries.map(…), (err) => failureOf(err, describe, { signal, secrets }))
 */
export async function awsBatchCall<O extends { $metadata: { httpStatusCode?: number } }>(
  count: number,
  call: () => Promise<O>,
  read: (output: O, status: number) => AttemptResult[],
  failed: (err: unknown) => AttemptResult,
): Promise<AttemptResult[]> {
  try {
    const output = await call()
    return read(output, output.$metadata.httpStatusCode ?? 200)
  } catch (err) {
    return new Array<AttemptResult>(count).fill(failed(err))
  }
}

/**
 * Results for `count` messages from the results of those that were sent: `sent[i]` is the message index of the
 * i-th result; a message left out has its own result in `early` (one the publisher made without sending it).
 *
 * @example
 * mergeResults(3, new Map([[1, keyFailure]]), [0, 2], [okA, okC]) // [okA, keyFailure, okC]
 */
export function mergeResults(count: number, early: ReadonlyMap<number, AttemptResult>, sent: readonly number[], results: readonly AttemptResult[]): AttemptResult[] {
  const out: AttemptResult[] = new Array<AttemptResult>(count)
  for (const [index, result] of early) out[index] = result
  sent.forEach((index, i) => (out[index] = results[i] ?? { ok: false, error_kind: 'unknown', error: 'no result for this message' }))
  return out
}

/** A batch as a publisher prepared it: the entries to send (of the messages `sent`), and results made without sending. */
export interface PreparedBatch<T> {
  count: number
  early: ReadonlyMap<number, AttemptResult>
  sent: readonly number[]
  entries: readonly T[]
}

/**
 * Send the entries of a prepared batch and merge every message's result, in order. When `ordered`, a message that
 * failed before sending stops the ones after it too: they are not sent (nothing overtakes it) and fail with its kind.
 *
 * @example
 * return sendPrepared({ count: messages.length, early, sent, entries }, ordered, (entries) => sendCalls(entries, calls(entries), putRecords, ordered))
 */
export async function sendPrepared<T>(batch: PreparedBatch<T>, ordered: boolean, send: (entries: T[]) => Promise<AttemptResult[]>): Promise<AttemptResult[]> {
  const first = ordered && batch.early.size > 0 ? Math.min(...batch.early.keys()) : undefined
  const cut = first === undefined ? -1 : batch.sent.findIndex((index) => index > first)
  const sending = cut < 0 ? batch.sent.length : cut
  const results = sending > 0 ? await send(batch.entries.slice(0, sending)) : []
  if (sending < batch.sent.length) {
    const failed = batch.early.get(first!)!
    const notSent: AttemptResult = { ok: false, error_kind: failed.error_kind ?? 'unknown', error: `not sent: an earlier message of this ordered batch failed (${failed.error ?? failed.error_kind})` }
    for (let i = sending; i < batch.sent.length; i++) results.push(notSent)
  }
  return mergeResults(batch.count, batch.early, batch.sent, results)
}
