import { describe, expect, it } from 'vitest'
import { RateLimiter } from '../../src/delivery/rate-limiter.js'
import type { RateLimit } from '../../src/model/delivery-settings.js'
import type { Storage, TokensTaken } from '../../src/storage/storage.js'

/** A bucket that answers from a script and records how many tokens each call asked for. */
function scriptedBucket(answers: (TokensTaken | Error)[]) {
  const asked: number[] = []
  let release!: () => void
  const firstCall = new Promise<void>((resolve) => (release = resolve))
  const storage = {
    takeTokens: async (_t: string, _d: string, _limit: RateLimit, count: number) => {
      asked.push(count)
      await firstCall
      const answer = answers.shift() ?? { taken: count, waitMs: 0 }
      if (answer instanceof Error) throw answer
      return answer
    },
  } as unknown as Storage
  return { storage, asked, release }
}

const limited = async (): Promise<RateLimit> => ({ per_second: 10, burst: 3 })
const settle = (p: Promise<void>) => p.then(() => 'token', (err: Error) => err.message)

describe('rate limiter', () => {
  it('asks the bucket once for every delivery waiting and hands out what it gave, in arrival order', async () => {
    const { storage, asked, release } = scriptedBucket([{ taken: 1, waitMs: 0 }, { taken: 2, waitMs: 5 }, { taken: 2, waitMs: 0 }])
    const limiter = new RateLimiter(storage, () => new Date())
    const order: number[] = []
    const first = limiter.acquire('t', 'd', limited).then(() => order.push(0))
    while (asked.length === 0) await new Promise((resolve) => setImmediate(resolve))
    // The first round trip is on its way: these four wait for the next one, together.
    const rest = [1, 2, 3, 4].map((i) => limiter.acquire('t', 'd', limited).then(() => order.push(i)))
    release()
    await Promise.all([first, ...rest])
    // One token for the first; then 2 of the 4 asked for, and after a wait the 2 still waiting.
    expect(asked).toEqual([1, 4, 2])
    expect(order).toEqual([0, 1, 2, 3, 4])
  })

  it('lets a delivery that no longer needs a token go without asking the bucket for it', async () => {
    const { storage, asked, release } = scriptedBucket([])
    release()
    const limiter = new RateLimiter(storage, () => new Date())
    const gone = async () => undefined
    await Promise.all([limiter.acquire('t', 'd', gone), limiter.acquire('t', 'd', limited), limiter.acquire('t', 'd', gone)])
    expect(asked).toEqual([1])
  })

  it('fails every waiting delivery when the bucket cannot be reached, and asks again on the next acquire', async () => {
    const { storage, asked, release } = scriptedBucket([new Error('storage unavailable')])
    const limiter = new RateLimiter(storage, () => new Date())
    const waiting = [settle(limiter.acquire('t', 'd', limited)), settle(limiter.acquire('t', 'd', limited))]
    release()
    expect(await Promise.all(waiting)).toEqual(['storage unavailable', 'storage unavailable'])
    expect(await settle(limiter.acquire('t', 'd', limited))).toBe('token')
    expect(asked).toEqual([2, 1])
  })

  it('keeps destinations apart: each has its own taker and bucket', async () => {
    const calls: string[] = []
    const storage = {
      takeTokens: async (_t: string, d: string, _limit: RateLimit, count: number) => {
        calls.push(`${d}:${count}`)
        return { taken: count, waitMs: 0 }
      },
    } as unknown as Storage
    const limiter = new RateLimiter(storage, () => new Date())
    await Promise.all([limiter.acquire('t', 'a', limited), limiter.acquire('t', 'b', limited), limiter.acquire('t', 'a', limited)])
    // Both of a's deliveries came in the same turn of the event loop: one request for two tokens.
    expect(calls.sort()).toEqual(['a:2', 'b:1'])
  })
})
