/** Live traffic counts as flowing while live deliveries are held or one was taken in this recently. */
const liveQuietMs = 1_000
/** While live traffic flows, replayed attempts hold at most this share of the global slots (at least one). */
const shareWhileLive = 1 / 25
/** The rate is adjusted once per interval, on whether a fresh publish reached its attempt late in it. */
const intervalMs = 100
/** Replayed starts a second beside live traffic: where the rate begins, the least it halves to, what it gains per on-time interval, the most. */
const startRate = 20
const floorRate = 5
const rateStep = 20
const maxRate = 10_000
/**
 * A fresh publish is late when it waited for its attempt (from its event's creation, the commit included)
 * more than `lateFactor` times the quickest such wait of the last one or two `baselineWindowMs` (what this
 * database's commits take when nothing competes), and at least `lateMs`.
 */
const lateMs = 10
const lateFactor = 3
const baselineWindowMs = 5_000

/**
 * When a replayed delivery may start. Without live traffic a replay has every slot and no rate. While live
 * deliveries flow, it holds at most a twenty-fifth of the slots and starts at most `rate` attempts a second,
 * and the rate follows the live deliveries' own latency, as TCP's window follows loss: every 100 ms it halves
 * (not below 5/s) if a fresh publish reached its attempt late in that interval, and grows by 20/s if they
 * all were on time (an interval without one keeps the rate). So a
 * replay fills what the event loop, the connection and the database leave live traffic, backs off within an
 * interval of live deliveries starting late, whatever made them late (the event loop, another process
 * loading the database), and never stops: at the floor it still finishes.
 *
 * @example
 * const admission = new ReplayAdmission(50)
 * admission.liveTaken() // a live delivery held...
 * admission.liveStarted(createdAt) // ...its attempt starts (fresh publishes only)
 * if (held < admission.slots() && admission.take() === 0) startReplayed()
 */
export class ReplayAdmission {
  readonly #concurrency: number
  readonly #now: () => number
  /** Live deliveries held, and when the last was taken in. */
  #liveHeld = 0
  #liveAt = -Infinity
  #rate = startRate
  #tokens = 1
  #tokensAt = 0
  /** The current interval's start, and whether a fresh publish started in it, and late. */
  #intervalAt = 0
  #started = false
  #late = false
  /** The quickest wait of a fresh publish in this window and the one before. */
  #baseline = { at: -Infinity, quickest: Infinity, before: Infinity }

  constructor(concurrency: number, now: () => number = () => performance.now()) {
    this.#concurrency = concurrency
    this.#now = now
  }

  /** A live delivery was taken in (held until `liveDone`). */
  liveTaken(): void {
    const now = this.#now()
    // Live traffic begins: the rate starts low and climbs while it stays on time.
    if (!this.#live(now)) this.#restart(now)
    this.#liveHeld++
    this.#liveAt = now
  }

  /** A live delivery left the worker (attempted and written, or released). */
  liveDone(): void {
    this.#liveHeld--
  }

  /** A fresh publish's first attempt starts; `waitedMs`: since its event was created. */
  liveStarted(waitedMs: number): void {
    const now = this.#now()
    this.#advance(now)
    const b = this.#baseline
    if (now - b.at > baselineWindowMs) Object.assign(b, { at: now, quickest: Infinity, before: b.quickest })
    b.quickest = Math.min(b.quickest, waitedMs)
    this.#started = true
    if (waitedMs > Math.max(lateMs, lateFactor * Math.min(b.quickest, b.before))) this.#late = true
  }

  /** How many replayed attempts may be in flight now. */
  slots(): number {
    return this.#live(this.#now()) ? Math.max(1, Math.floor(this.#concurrency * shareWhileLive)) : this.#concurrency
  }

  /** Take a start for one replayed attempt: 0 when taken, else the ms until one can be. */
  take(): number {
    const now = this.#now()
    if (!this.#live(now)) return 0
    this.#advance(now)
    // At most one interval's worth of starts at once.
    const burst = Math.max(1, (this.#rate * intervalMs) / 1000)
    this.#tokens = Math.min(burst, this.#tokens + ((now - this.#tokensAt) * this.#rate) / 1000)
    this.#tokensAt = now
    if (this.#tokens >= 1) {
      this.#tokens--
      return 0
    }
    return Math.ceil(((1 - this.#tokens) * 1000) / this.#rate)
  }

  /** Replayed starts a second allowed now (Infinity without live traffic). */
  get rate(): number {
    return this.#live(this.#now()) ? this.#rate : Infinity
  }

  #live(now: number): boolean {
    return this.#liveHeld > 0 || now - this.#liveAt < liveQuietMs
  }

  #restart(now: number): void {
    this.#rate = startRate
    this.#tokens = 1
    this.#tokensAt = now
    this.#intervalAt = now
    this.#started = false
    this.#late = false
  }

  /**
   * Apply the interval that ended: halve after a late start in it, grow after on-time starts only, keep
   * the rate through intervals without a start (no news). Starts are recorded in the interval they came
   * in (this runs first), so of several ended intervals only the first can hold any.
   */
  #advance(now: number): void {
    const ended = Math.floor((now - this.#intervalAt) / intervalMs)
    if (ended <= 0) return
    if (this.#late) this.#rate = Math.max(floorRate, this.#rate / 2)
    else if (this.#started) this.#rate = Math.min(maxRate, this.#rate + rateStep)
    this.#started = false
    this.#late = false
    this.#intervalAt += ended * intervalMs
  }
}
