import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { CommitWatch } from '../../src/storage/postgres-commit-watch.js'

/** A fake Postgres: each transaction's status, and the looks made (each a list of the transactions asked about). */
function fakeStatuses(initial: Record<string, string | null>) {
  const status = new Map(Object.entries(initial))
  const looks: string[][] = []
  let failing = false
  return {
    status,
    looks,
    fail: (on: boolean) => (failing = on),
    check: async (xacts: string[]) => {
      looks.push([...xacts])
      if (failing) throw new Error('unavailable')
      return new Map(xacts.map((x) => [x, status.get(x) ?? null]))
    },
  }
}

describe('CommitWatch (Postgres outbox wake-ups)', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('looks until the transaction has committed, then stops watching it', async () => {
    const pg = fakeStatuses({ '100': 'in progress' })
    const watch = new CommitWatch(pg.check)
    watch.watch('100')
    await vi.advanceTimersByTimeAsync(5)
    expect(pg.looks.length).toBeGreaterThan(0)
    pg.status.set('100', 'committed')
    await vi.advanceTimersByTimeAsync(2_000)
    const looks = pg.looks.length
    expect(pg.looks.at(-1)).toEqual(['100'])
    await vi.advanceTimersByTimeAsync(10_000)
    expect(pg.looks).toHaveLength(looks)
    watch.close()
  })

  it('drops a rolled-back transaction (and one whose status is unknown) at the first look', async () => {
    const pg = fakeStatuses({ '7': 'aborted', '8': null })
    const watch = new CommitWatch(pg.check)
    watch.watch('7')
    watch.watch('8')
    await vi.advanceTimersByTimeAsync(60_000)
    expect(pg.looks).toEqual([['7', '8']])
    watch.close()
  })

  it('one look covers every watched transaction, and looks at an open one ever less often', async () => {
    const pg = fakeStatuses({ '1': 'in progress', '2': 'in progress' })
    const watch = new CommitWatch(pg.check)
    watch.watch('1')
    watch.watch('2')
    await vi.advanceTimersByTimeAsync(60_000)
    expect(pg.looks.every((l) => l.length === 2)).toBe(true)
    // Doubling from 2 ms to a look a second: about 10 looks to reach a second, then one a second.
    expect(pg.looks.length).toBeGreaterThan(55)
    expect(pg.looks.length).toBeLessThan(75)
    watch.close()
  })

  it('keeps watching while Postgres does not answer, and stops after ten minutes open', async () => {
    const pg = fakeStatuses({ '5': 'in progress' })
    const watch = new CommitWatch(pg.check)
    pg.fail(true)
    watch.watch('5')
    await vi.advanceTimersByTimeAsync(5_000)
    pg.fail(false)
    await vi.advanceTimersByTimeAsync(11 * 60_000)
    const looks = pg.looks.length
    await vi.advanceTimersByTimeAsync(60_000)
    expect(pg.looks).toHaveLength(looks)
    watch.close()
  })

  it('after close() it looks no more and takes nothing new', async () => {
    const pg = fakeStatuses({ '9': 'in progress' })
    const watch = new CommitWatch(pg.check)
    watch.watch('9')
    watch.close()
    watch.watch('10')
    await vi.advanceTimersByTimeAsync(10_000)
    expect(pg.looks).toEqual([])
  })
})
