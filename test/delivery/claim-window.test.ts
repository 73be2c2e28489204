import { describe, expect, it } from 'vitest'
import { ClaimWindow } from '../../src/delivery/claim-window.js'

const now = new Date('2026-03-01T12:00:00.000Z')
const at = (ms: number) => new Date(now.getTime() + ms)
const batch = (...due: number[]) => due.map((ms) => ({ due_at: at(ms) }))

describe('ClaimWindow', () => {
  it('scans the whole due index first, and again once a poll interval has passed since the last full scan', () => {
    const window = new ClaimWindow(0)
    expect(window.next()).toBeUndefined()
    window.claimed(undefined, now, batch(-5_000), 10)
    expect(window.next()).toBeUndefined()
  })

  it('starts a second before now once a claim found fewer than it asked for (caught up)', () => {
    const window = new ClaimWindow(60_000)
    window.claimed(undefined, now, batch(-5_000), 10)
    expect(window.next()).toEqual(at(-1_000))
  })

  it('starts at the latest due time of a full batch, so the deliveries it took are not scanned again', () => {
    const window = new ClaimWindow(60_000)
    window.claimed(undefined, now, batch(-9_000, -7_000, -8_000), 3)
    expect(window.next()).toEqual(at(-7_000))
    // A full windowed batch moves it on too.
    window.claimed(at(-7_000), now, batch(-7_000, -6_500, -6_000), 3)
    expect(window.next()).toEqual(at(-6_000))
  })

  it('starts no later than a second before now after a full batch of fresh deliveries, as when caught up', () => {
    const window = new ClaimWindow(60_000)
    window.claimed(undefined, now, batch(-300, -200, -100), 3)
    expect(window.next()).toEqual(at(-1_000))
  })

  it('scans the whole index again after a full batch whose due times it does not know', () => {
    const window = new ClaimWindow(60_000)
    window.claimed(undefined, now, [{}, {}], 2)
    expect(window.next()).toBeUndefined()
    window.claimed(undefined, now, [{}], 2)
    window.claimed(at(-1_000), now, [{}, {}], 2)
    expect(window.next()).toEqual(at(-1_000))
  })
})
