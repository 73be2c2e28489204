import { setTimeout as sleep } from 'node:timers/promises'
import type { ClaimedDelivery } from '../storage/storage.js'
import { ClaimWindow } from './claim-window.js'
import { orderedWorkMs, promotePollMs } from './idle-polls.js'
import type { DeliveryContext } from './context.js'
import type { OutageLog } from './storage-outage.js'
import { faultPoint } from './supervisor.js'

/** What the claim loop feeds: the worker's held deliveries and its queues. */
export interface ClaimHost {
  /** The lease owner. */
  readonly id: string
  /** Deliveries the worker holds, by id: their leases are renewed. */
  readonly held: ReadonlyMap<string, ClaimedDelivery>
  /** How many more deliveries the worker can hold now. */
  room(): number
  /** Take claimed deliveries into the worker's queues. */
  enqueue(deliveries: ClaimedDelivery[]): void
}

/**
 * Takes the deliveries the local publish fast path did not: due retries, other instances' publishes, expired
 * leases. Claims a batch whenever the worker has room, then sleeps a poll interval unless woken (a local retry
 * falling due, a manual retry, another instance's NOTIFY, a finished FIFO delivery). Beside it, the leases of
 * everything the worker holds are renewed every third of a lease, and once a second (on Citus every 30 s unless it
 * just wrote an ordered result: idle-polls.ts) FIFO destinations' waiting deliveries are promoted (a safety net for
 * a race).
 *
 * @example
 * const claims = new ClaimLoop(ctx, outage, worker); claims.start(); claims.wake(); await claims.close()
 */
export class ClaimLoop {
  readonly #ctx: Pick<DeliveryContext, 'storage' | 'options' | 'supervisor' | 'now'>
  readonly #outage: OutageLog
  readonly #host: ClaimHost
  /** Claims between two full scans of the due index look only at recent due times. */
  readonly #window: ClaimWindow
  #stopping = false
  /** Ends the supervisor's pauses before restarting a loop, and the renewal loop's sleep (close()). */
  readonly #stop = new AbortController()
  #loop?: Promise<void>
  #leaseLoop?: Promise<void>
  #unlisten?: Promise<(() => Promise<void>) | undefined>
  #wake?: () => void
  /** wake() came while the claim loop was not asleep (claiming, renewing leases). */
  #wakeMissed = false
  #retryTimer?: NodeJS.Timeout
  #retryAt = Infinity
  /** When this worker last wrote the result of a delivery to a FIFO destination (Date.now()). */
  #orderedResultAt = -Infinity

  constructor(ctx: Pick<DeliveryContext, 'storage' | 'options' | 'supervisor' | 'now'>, outage: OutageLog, host: ClaimHost) {
    this.#ctx = ctx
    this.#outage = outage
    this.#host = host
    this.#window = new ClaimWindow(ctx.options.delivery.pollIntervalMs)
  }

  start(): void {
    const { supervisor } = this.#ctx
    const stopped = () => this.#stopping
    this.#loop = supervisor.run('claim', () => this.#claimLoop(), stopped, this.#stop.signal)
    this.#leaseLoop = supervisor.run('leases', () => this.#renewalLoop(), stopped, this.#stop.signal)
    this.#unlisten = this.#listen()
  }

  /** Claim now rather than at the next poll. */
  wake(): void {
    if (this.#wake) this.#wake()
    // Asked while claiming: the claim may have run before the work was visible (a host's commit, another
    // instance's NOTIFY), so claim once more rather than sleep a whole poll interval.
    else this.#wakeMissed = true
  }

  /** A delivery to a FIFO destination finished here: claim its successor now, and keep the FIFO safety net busy a while. */
  orderedResultWritten(): void {
    this.#orderedResultAt = Date.now()
    this.wake()
  }

  /** Claim again when the earliest scheduled retry falls due, rather than waiting for the next poll. */
  wakeAt(ms: number): void {
    if (ms >= this.#retryAt || this.#stopping) return
    this.#retryAt = ms
    clearTimeout(this.#retryTimer)
    this.#retryTimer = setTimeout(() => {
      this.#retryAt = Infinity
      this.wake()
    }, Math.max(0, ms - Date.now()))
    this.#retryTimer.unref()
  }

  /** Stop claiming and renewing, and unsubscribe; resolves once both loops have ended. */
  async close(): Promise<void> {
    this.#stopping = true
    this.#stop.abort()
    clearTimeout(this.#retryTimer)
    this.wake()
    await this.#loop
    await this.#leaseLoop
    await (await this.#unlisten)?.().catch(() => undefined)
  }

  /**
   * Other instances announce work they could not take themselves; the poll is only the fallback. The
   * listener is also called when the subscription is made again after a lost connection: claiming then
   * catches up on what was announced meanwhile. A subscription that fails is tried again (the poll covers
   * the meantime).
   */
  async #listen(): Promise<(() => Promise<void>) | undefined> {
    const { storage, supervisor } = this.#ctx
    if (!storage.onWork) return undefined
    supervisor.watch('listen')
    while (!this.#stopping) {
      try {
        faultPoint('listen')
        const unlisten = await storage.onWork(() => this.wake())
        supervisor.ok('listen')
        return unlisten
      } catch (err) {
        if (this.#stopping) break
        await sleep(supervisor.failed('listen', err), undefined, { ref: false, signal: this.#stop.signal }).catch(() => undefined)
      }
    }
    return undefined
  }

  async #claimLoop(): Promise<void> {
    const { pollIntervalMs } = this.#ctx.options.delivery
    let promotedAt = 0
    while (!this.#stopping) {
      faultPoint('claim')
      // A safety net for a rare race, it scans every waiting delivery: see promotePollMs.
      const orderedWork = Date.now() - this.#orderedResultAt < orderedWorkMs
      if (Date.now() - promotedAt >= promotePollMs(this.#ctx.storage, pollIntervalMs, orderedWork)) {
        promotedAt = Date.now()
        await this.#promoteWaiting()
      }
      const claim = await this.#claimOnce()
      if (!claim) break
      const { room, full } = claim
      this.#ctx.supervisor.ok('claim')
      if (full || (this.#wakeMissed && room > 0)) continue
      // close() during the claim found no sleeper to wake: do not start one (the sleep is unref'd, so
      // close() would wait a whole poll interval, or the process would exit with close() unfinished).
      if (this.#stopping) break
      const woken = new Promise<void>((resolve) => (this.#wake = resolve))
      await Promise.race([sleep(pollIntervalMs, undefined, { ref: false }), woken])
      this.#wake = undefined
    }
  }

  /** Claim as many due deliveries as the worker has room for; `full` when it got all it asked for; undefined: failed while closing. */
  async #claimOnce(): Promise<{ room: number; full: boolean } | undefined> {
    const room = Math.min(this.#ctx.options.delivery.batchSize, this.#host.room())
    if (room <= 0) return { room, full: false }
    this.#wakeMissed = false
    try {
      const claimed = await this.#claim(room)
      this.#outage.answered()
      return { room, full: claimed === room }
    } catch (err) {
      if (this.#stopping) return undefined
      this.#outage.failed(err, 'claiming deliveries failed')
      return { room, full: false }
    }
  }

  async #claim(room: number): Promise<number> {
    const { leaseMs } = this.#ctx.options.delivery
    const now = this.#ctx.now()
    const dueSince = this.#window.next()
    const claimed = await this.#ctx.storage.claimDueDeliveries({ owner: this.#host.id, now, leaseUntil: new Date(now.getTime() + leaseMs), limit: room, dueSince })
    this.#window.claimed(dueSince, now, claimed, room)
    this.#host.enqueue(claimed)
    return claimed.length
  }

  /** FIFO destinations: the safety net for a next delivery that two racing transactions both left waiting. */
  async #promoteWaiting(): Promise<void> {
    try {
      await this.#ctx.storage.promoteWaitingDeliveries(this.#ctx.now())
    } catch (err) {
      this.#outage.failed(err, 'promoting waiting deliveries failed')
    }
  }

  /**
   * Deliveries can wait in memory behind a slow destination; keep their leases alive so no other
   * instance takes them meanwhile (which would deliver them twice): renewed every third of a lease.
   */
  async #renewalLoop(): Promise<void> {
    const { leaseMs } = this.#ctx.options.delivery
    while (!this.#stopping) {
      await sleep(leaseMs / 3, undefined, { ref: false, signal: this.#stop.signal }).catch(() => undefined)
      if (this.#stopping) break
      faultPoint('leases')
      await this.#renewLeases()
      this.#ctx.supervisor.ok('leases')
    }
  }

  async #renewLeases(): Promise<void> {
    const { held } = this.#host
    if (held.size === 0) return
    try {
      const until = new Date(Date.now() + this.#ctx.options.delivery.leaseMs)
      await this.#ctx.storage.extendLeases(this.#host.id, [...held.keys()], until)
    } catch (err) {
      this.#outage.failed(err, 'renewing leases failed', { count: held.size })
    }
  }
}
