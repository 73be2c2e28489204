import { describe, expect, it } from 'vitest'
import { awsBatchCall, mergeResults, sendCalls, sendPrepared, splitCalls } from '../../src/destinations/batch-calls.js'
import type { AttemptResult } from '../../src/model/attempt-result.js'

describe('batch calls', () => {
  it('splits in order at the entry count and at the byte total', () => {
    expect(splitCalls(Array(11).fill(1), { entries: 10, bytes: 100 })).toEqual([
      [0, 10],
      [10, 11],
    ])
    expect(splitCalls([40, 40, 40, 10], { entries: 10, bytes: 100 })).toEqual([
      [0, 2],
      [2, 4],
    ])
    expect(splitCalls([], { entries: 10, bytes: 100 })).toEqual([])
  })

  it('gives an entry larger than the service takes a call of its own', () => {
    expect(splitCalls([10, 300, 10, 10], { entries: 10, bytes: 256 })).toEqual([
      [0, 1],
      [1, 2],
      [2, 4],
    ])
    expect(splitCalls([10, 150, 10], { entries: 10, bytes: 1000, entryBytes: 100 })).toEqual([
      [0, 1],
      [1, 2],
      [2, 3],
    ])
  })

  it('sends every call when unordered, and stops after a failure when ordered', async () => {
    const sent: number[][] = []
    const send = async (part: number[]): Promise<AttemptResult[]> => (sent.push(part), part.map((n) => (n === 1 ? { ok: false, error_kind: 'throttled', error: 'slow down' } : { ok: true })))
    const calls: [number, number][] = [
      [0, 2],
      [2, 3],
    ]
    expect((await sendCalls([0, 1, 2], calls, send, false)).map((r) => r.ok)).toEqual([true, false, true])
    expect(sent).toEqual([[0, 1], [2]])
    const ordered = await sendCalls([0, 1, 2], calls, send, true)
    expect(ordered[2]).toEqual({ ok: false, error_kind: 'throttled', error: 'not sent: an earlier message of this ordered batch failed (slow down)' })
    expect(sent).toHaveLength(3)
  })

  it('merges the results of sent messages with those made before sending', () => {
    const early = new Map<number, AttemptResult>([[1, { ok: false, error_kind: 'configuration', error: 'no key' }]])
    expect(mergeResults(3, early, [0, 2], [{ ok: true }, { ok: true }]).map((r) => r.error_kind ?? 'ok')).toEqual(['ok', 'configuration', 'ok'])
  })

  it('sends a prepared batch around the messages that failed before sending; when ordered, not past the first of them', async () => {
    const early = new Map<number, AttemptResult>([[1, { ok: false, error_kind: 'configuration', error: 'no key' }]])
    const batch = { count: 4, early, sent: [0, 2, 3], entries: ['a', 'c', 'd'] }
    const sent: string[][] = []
    const send = async (entries: string[]): Promise<AttemptResult[]> => (sent.push(entries), entries.map(() => ({ ok: true })))
    expect((await sendPrepared(batch, false, send)).map((r) => r.ok)).toEqual([true, false, true, true])
    const ordered = await sendPrepared(batch, true, send)
    expect(ordered.map((r) => r.error_kind ?? 'ok')).toEqual(['ok', 'configuration', 'configuration', 'configuration'])
    expect(ordered[3]!.error).toContain('not sent')
    expect(sent).toEqual([['a', 'c', 'd'], ['a']])
  })

  it('reads an AWS batch call per entry with its status, and gives a failure of the whole call to every entry', async () => {
    const read = (out: { ids: string[]; $metadata: { httpStatusCode?: number } }, status: number): AttemptResult[] => out.ids.map((id) => ({ ok: true, response_status_code: status, response_body: id }))
    const failed = (err: unknown): AttemptResult => ({ ok: false, error_kind: 'network', error: (err as Error).message })
    const answered = await awsBatchCall(2, async () => ({ ids: ['a', 'b'], $metadata: {} }), read, failed)
    expect(answered).toEqual([
      { ok: true, response_status_code: 200, response_body: 'a' },
      { ok: true, response_status_code: 200, response_body: 'b' },
    ])
    const refused = await awsBatchCall(3, () => Promise.reject(new Error('socket hang up')), read, failed)
    expect(refused).toEqual(Array(3).fill({ ok: false, error_kind: 'network', error: 'socket hang up' }))
  })
})
