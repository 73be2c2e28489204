/**
 * How far back from where the last claim found the queue caught up the next windowed claim looks:
 * deliveries inserted with an earlier due time (a publish that took this long to commit, another
 * instance's clock behind this one) wait for the next full claim, at most pollIntervalMs.
 */
const marginMs = 1_000

/**
 * Which part of the due index the worker's next claim scans.
 *
 * A claim scans the due index from the oldest due delivery. Entries of finished deliveries stay in that
 * index until vacuum removes them, and while a long transaction holds back the xmin horizon it cannot:
 * every claim then read every delivery finished since (fault scenario 7, held xmin: 7,000 buffers a claim
 * after two minutes at 170 deliveries/s). So one claim per pollIntervalMs scans the whole index; the
 * others (woken by a publish, a NOTIFY, a full batch) start a second before the due time at which the
 * last claim found the queue caught up. While a backlog lasts (a claim took all it asked for), the next one
 * starts at the latest due time of that batch (at the latest a second before now): the batch took every
 * claimable delivery due before it, so claims do not scan again and again the deliveries this worker holds.
 * What a windowed claim cannot see (an expired or released lease, a late commit) the next full claim
 * finds, as the poll did before.
 */
export class ClaimWindow {
  #fullAt = 0
  #from: Date | undefined
  readonly #pollIntervalMs: number

  constructor(pollIntervalMs: number) {
    this.#pollIntervalMs = pollIntervalMs
  }

  /** The lower bound of due times for the next claim, or undefined to scan the whole index. */
  next(): Date | undefined {
    return this.#from === undefined || Date.now() - this.#fullAt >= this.#pollIntervalMs ? undefined : this.#from
  }

  /** A claim made with `dueSince` (from `next()`) at `now` took `claimed` of the `room` it asked for. */
  claimed(dueSince: Date | undefined, now: Date, claimed: readonly { due_at?: Date }[], room: number): void {
    if (dueSince === undefined) this.#fullAt = Date.now()
    // Caught up: nothing claimable was due before now in the range scanned.
    if (claimed.length < room) {
      this.#from = new Date(now.getTime() - marginMs)
      return
    }
    // A full batch: the rest is due at or after its latest due time (ties included), or at the margin before now
    // if that is earlier, as when caught up. A storage that does not say when its deliveries fell due: a full
    // batch of the whole index is scanned whole again; a windowed one keeps its window.
    const due = claimed.map((c) => c.due_at?.getTime() ?? Number.NaN)
    if (!due.some(Number.isNaN)) this.#from = new Date(Math.min(Math.max(...due), now.getTime() - marginMs))
    else if (dueSince === undefined) this.#from = undefined
  }
}
