import { describe, expect, it } from 'vitest'
import { ReplayAdmission } from '../../src/delivery/replay-admission.js'

// The replay admission policy on a clock of the test's own: each rule of its one paragraph, exactly.

function admission(concurrency = 50) {
  let now = 1_000_000
  const a = new ReplayAdmission(concurrency, () => now)
  return {
    a,
    advance: (ms: number) => (now += ms),
  }
}

describe('replay admission', () => {
  it('gives a replay every slot and no rate without live traffic', () => {
    const { a } = admission(50)
    expect(a.slots()).toBe(50)
    expect(a.rate).toBe(Infinity)
    for (let i = 0; i < 1_000; i++) expect(a.take()).toBe(0)
  })

  it('while live deliveries flow, a twenty-fifth of the slots (at least one), starting at 20 starts a second', () => {
    const { a } = admission(50)
    a.liveTaken()
    expect(a.slots()).toBe(2)
    expect(a.rate).toBe(20)
    const small = admission(10)
    small.a.liveTaken()
    expect(small.a.slots()).toBe(1)
  })

  it('grows the rate by 20/s for each 100 ms in which fresh publishes started on time, and keeps it through ones without a start', () => {
    const { a, advance } = admission()
    a.liveTaken()
    for (let i = 0; i < 5; i++) {
      a.liveStarted(2)
      advance(100)
    }
    a.take()
    expect(a.rate).toBe(20 + 5 * 20)
    // No start in the last interval nor in the second after it: no news, the same rate.
    advance(1_000)
    a.take()
    expect(a.rate).toBe(120)
  })

  it('halves the rate after an interval with a late fresh publish, down to 5/s and not below', () => {
    const { a, advance } = admission()
    a.liveTaken()
    a.liveStarted(2) // what a publish takes here: 2 ms
    advance(100)
    a.liveStarted(2)
    expect(a.rate).toBe(40)
    a.liveStarted(11) // more than max(10 ms, 3 × 2 ms)
    advance(100)
    a.liveStarted(2)
    expect(a.rate).toBe(20)
    for (let i = 0; i < 5; i++) {
      a.liveStarted(50)
      advance(100)
    }
    a.take()
    expect(a.rate).toBe(5)
  })

  it('measures late against what publishes take here: steady slow commits are on time, three times slower is late', () => {
    const { a, advance } = admission()
    a.liveTaken()
    for (let i = 0; i < 10; i++) {
      a.liveStarted(30) // every commit takes 30 ms on this database
      advance(100)
    }
    a.take()
    expect(a.rate).toBe(20 + 10 * 20)
    a.liveStarted(95) // more than 3 × 30 ms
    advance(100)
    a.take()
    expect(a.rate).toBe(110)
  })

  it('forgets a quick wait once two baseline windows of five seconds have passed', () => {
    const { a, advance } = admission()
    a.liveTaken()
    a.liveStarted(1)
    advance(5_001)
    a.liveStarted(30) // the window before still holds the 1 ms wait: late (> 10 ms)
    advance(100)
    a.take()
    const afterLate = a.rate
    expect(afterLate).toBe(20) // 40 after the first interval, halved
    advance(5_001)
    a.liveStarted(30) // new window: 30 ms is its quickest, and the one before was 30 ms
    a.liveStarted(30)
    advance(100)
    a.take()
    expect(a.rate).toBe(afterLate + 20)
  })

  it('starts no more than the rate allows, in bursts of at most one interval', () => {
    const { a, advance } = admission()
    a.liveTaken()
    // Late in every interval: the rate falls to the floor and stays there.
    for (let i = 0; i < 10; i++) {
      a.liveStarted(1)
      a.liveStarted(100)
      advance(100)
    }
    a.take()
    expect(a.rate).toBe(5)
    // Ten seconds late without a start: the tokens do not pile up beyond one interval's worth (here one start).
    for (let i = 0; i < 100; i++) {
      a.liveStarted(1)
      a.liveStarted(100)
      advance(100)
    }
    expect(a.take()).toBe(0)
    expect(a.take()).toBeGreaterThan(0)
    // Keep it late: 5/s over two seconds, give or take the first.
    let starts = 0
    for (let t = 0; t < 2_000; t += 10) {
      if (t % 100 === 0) a.liveStarted(1), a.liveStarted(100)
      while (a.take() === 0) starts++
      advance(10)
    }
    expect(starts).toBeGreaterThanOrEqual(9)
    expect(starts).toBeLessThanOrEqual(11)
  })

  it('says how long until the next start when none can be taken', () => {
    const { a } = admission()
    a.liveTaken()
    expect(a.take()).toBe(0) // the one start it begins with
    expect(a.take()).toBe(50) // 20/s: one every 50 ms
  })

  it('gives every slot back a second after the last live delivery, and starts low when live traffic returns', () => {
    const { a, advance } = admission()
    a.liveTaken()
    for (let i = 0; i < 10; i++) {
      a.liveStarted(2)
      advance(100)
    }
    a.take()
    expect(a.rate).toBe(220)
    a.liveTaken()
    a.liveDone()
    a.liveDone()
    advance(999)
    expect(a.slots()).toBe(2)
    advance(1)
    expect(a.slots()).toBe(50)
    expect(a.rate).toBe(Infinity)
    a.liveTaken()
    expect(a.rate).toBe(20)
  })
})
