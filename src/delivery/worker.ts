import PQueue from 'p-queue'
import { setTimeout as sleep } from 'node:timers/promises'
import { performance } from 'node:perf_hooks'
import { destinationType } from '../destinations/registry.js'
import type { AttemptResult } from '../model/attempt-result.js'
import type { Publisher } from '../destinations/types.js'
import { CredentialsError, unsealCredentials } from '../credentials.js'
import { newId } from '../ids.js'
import { errorFields } from '../logger.js'
import type { TraceLink } from '../telemetry.js'
import type { ClaimedDelivery, DestinationRecord } from '../storage/storage.js'
import { reportOutcomes } from './alerts.js'
import type { DeliveryContext } from './context.js'
import { attemptWrite, deliveryMessage } from './attempt.js'
import { ClaimWindow } from './claim-window.js'
import { ReplayAdmission } from './replay-admission.js'
import { RateLimiter } from './rate-limiter.js'
import { retryPolicy } from './retry-schedule.js'
import { logAttempt } from './attempt-log.js'
import { attemptEventData, operatorSinkId, type RecordedAttempt } from './operator-events.js'
import { DeliveryError, closeHttpClients } from '../net/http-client.js'
import { failureBeforeSending } from '../destinations/failure.js'
import { startDeadline } from '../net/deadline.js'
import { OutflowError } from '../errors.js'
import { faultPoint } from './supervisor.js'

const userAgent = 'outflow/0.1.0'
/** How long a destination read is reused before it is read again (changes on this instance evict at once). */
const destinationCacheMs = 1_000
/** Attempt results are written in batches of at most this many. */
const writeBatch = 500
/** How long results gather before a write: bigger batches, fewer commits; delivery itself is not delayed. */
const writeGatherMs = 10
/** Results that could not be written while storage was unavailable are written again after this, doubling up to 2 s. */
const writeRetryMs = 100
const maxWriteRetryMs = 2_000

/** Storage did not answer or lost its connection (Postgres restarting, paused, unreachable): worth trying again. */
const isUnavailable = (err: unknown) => err instanceof OutflowError && err.code === 'unavailable'
const key = (tenantId: string, destinationId: string) => `${tenantId}\u0000${destinationId}`

/** A leased delivery in this worker's queues; a local publish's carry its span context in memory. */
export type QueuedDelivery = ClaimedDelivery & { trace?: TraceLink }

/**
 * The delivery worker: runs attempts with a global and a per-destination concurrency limit, takes
 * deliveries from the local publish fast path and from a claim loop (due retries, other instances'
 * publishes, expired leases), and writes attempt results back in batches.
 */
export class DeliveryWorker {
  readonly id = newId('wrk')
  readonly #ctx: DeliveryContext
  readonly #global: PQueue
  readonly #perDestination = new Map<string, PQueue>()
  /** Deliveries this worker holds (queued or in flight), so the claim loop never takes them twice. */
  readonly #held = new Map<string, ClaimedDelivery>()
  /** Attempts past their start (destination read, publish, result), by delivery id. */
  readonly #started = new Map<string, Promise<void>>()
  /** Held deliveries of a deleted tenant or destination: dropped when their turn comes, never attempted. */
  readonly #dropped = new Set<string>()
  readonly #maxHeld: number
  readonly #limiter: RateLimiter
  /** Destination reads by key; `read` once the read has answered (what most attempts use, without waiting). */
  readonly #destinations = new Map<string, { record: Promise<DestinationRecord | null>; at: number; read?: { record: DestinationRecord | null } }>()
  readonly #publishers = new Map<string, { publisher: Promise<Publisher>; version: number }>()
  #writes: RecordedAttempt[] = []
  #writing?: Promise<void>
  /** Failed writes in a row while storage is unavailable (sets the retry delay). */
  #writeFailures = 0
  /** Ends the wait before writing results again (close()). */
  #retryWrites?: () => void
  /** Since when storage has been unavailable, and how many calls failed meanwhile (logged once per outage). */
  #outage?: { since: number; failures: number }
  #running = false
  #stopping = false
  /** Ends the supervisor's pauses before restarting a loop (close()). */
  readonly #stop = new AbortController()
  #loop?: Promise<void>
  #leaseLoop?: Promise<void>
  #wake?: () => void
  /** wake() came while the claim loop was not asleep (claiming, renewing leases). */
  #wakeMissed = false
  #retryTimer?: NodeJS.Timeout
  #retryAt = Infinity
  /** When a replayed delivery may start, from what live deliveries do. */
  readonly #admission: ReplayAdmission
  /** Replayed deliveries waiting to be admitted, and the ids of those past it (queued or being attempted). */
  readonly #replayWaiting: QueuedDelivery[] = []
  readonly #replayAdmitted = new Set<string>()
  /** Admits the next replayed delivery when the admission's rate allows one. */
  #replayTimer?: NodeJS.Timeout

  constructor(ctx: DeliveryContext) {
    this.#ctx = ctx
    const { concurrency, batchSize } = ctx.options.delivery
    this.#global = new PQueue({ concurrency })
    this.#claimWindow = new ClaimWindow(ctx.options.delivery.pollIntervalMs)
    // Deliveries waiting in memory: enough to keep every slot busy between claims, bounded for memory.
    this.#maxHeld = Math.max(concurrency * 100, batchSize * 10)
    this.#limiter = new RateLimiter(ctx.storage, ctx.now)
    this.#admission = new ReplayAdmission(concurrency)
  }

  start(): void {
    if (this.#running) return
    this.#running = true
    const { supervisor } = this.#ctx
    const stopped = () => this.#stopping
    supervisor.watch('results')
    this.#loop = supervisor.run('claim', () => this.#claimLoop(), stopped, this.#stop.signal)
    this.#leaseLoop = supervisor.run('leases', () => this.#renewalLoop(), stopped, this.#stop.signal)
    this.#unlisten = this.#listen()
  }

  #unlisten?: Promise<(() => Promise<void>) | undefined>

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

  /** Started and not closing. */
  get running(): boolean {
    return this.#running && !this.#stopping
  }

  /** Deliveries this worker holds (claimed, queued or being attempted). */
  get inFlight(): number {
    return this.#held.size
  }

  /** Lease fields for rows a local publish inserts, when this worker has room to take them at once. */
  fastPathLease(count: number, now: Date): { lease_owner: string; lease_until: Date } | undefined {
    if (!this.#running || this.#stopping || this.#held.size + count > this.#maxHeld) return undefined
    return { lease_owner: this.id, lease_until: new Date(now.getTime() + this.#ctx.options.delivery.leaseMs) }
  }

  /** Take leased deliveries into the local queues. */
  enqueue(deliveries: QueuedDelivery[]): void {
    for (const d of deliveries) {
      if (this.#held.has(d.id)) continue
      this.#held.set(d.id, d)
      if (d.replay) {
        this.#replayWaiting.push(d)
        continue
      }
      this.#admission.liveTaken()
      this.#queue(d)
    }
    this.#admitReplays()
  }

  #queue(d: QueuedDelivery): void {
    const k = key(d.tenant_id, d.destination_id)
    const queue = this.#perDestination.get(k) ?? this.#destinationQueue(k)
    // A slow destination holds at most perDestinationConcurrency of the global slots; a rate-limited one
    // waits for its token before it takes one. In both queues a replay fills the slots live traffic leaves:
    // queued live attempts start first.
    const start = () => this.#global.add(() => this.#start(d), { priority: d.replay ? -1 : 0 })
    const task = () => (this.#rateLimitFree(d) ? start() : this.#rateLimited(d).then(start))
    if (!d.replay) {
      void queue.add(task)
      return
    }
    // A replayed delivery's slot is free again once its attempt ended (its result is written later).
    void queue.add(task, { priority: -1 }).finally(() => this.#replayEnded(d.id))
  }

  #replayEnded(id: string): void {
    if (this.#replayAdmitted.delete(id)) this.#admitReplays()
  }

  /**
   * Replays yield to live traffic, as ReplayAdmission decides (a share of the slots and a rate that follows
   * the live deliveries' latency while they flow; everything otherwise). Replayed deliveries wait here,
   * before their destination's queue, so live deliveries to the same destination never queue behind them.
   */
  #admitReplays(): void {
    clearTimeout(this.#replayTimer)
    this.#replayTimer = undefined
    while (this.#replayWaiting.length > 0 && this.#replayAdmitted.size < this.#admission.slots()) {
      const d = this.#replayWaiting[0]!
      // Released meanwhile (close()): nothing to attempt.
      if (this.#held.get(d.id) !== d || this.#stopping) {
        this.#replayWaiting.shift()
        continue
      }
      const wait = this.#admission.take()
      if (wait > 0) {
        this.#replayTimer = setTimeout(() => this.#admitReplays(), wait)
        this.#replayTimer.unref()
        return
      }
      this.#replayWaiting.shift()
      this.#replayAdmitted.add(d.id)
      this.#queue(d)
    }
  }

  /** A held delivery leaves this worker (its result was written, it was released, or it is queued again later). */
  #unhold(id: string): void {
    const d = this.#held.get(id)
    if (!d) return
    this.#held.delete(id)
    if (!d.replay) this.#admission.liveDone()
    else this.#replayEnded(id)
  }

  /** Whether the delivery can take a global slot without waiting: its destination is read and has no rate limit. */
  #rateLimitFree(d: ClaimedDelivery): boolean {
    const read = this.#destinationRead(d.tenant_id, d.destination_id)
    return read !== undefined && !read.record?.delivery?.rate_limit
  }

  /** Resolves when a delivery to a rate-limited destination may start (at once for any other). */
  async #rateLimited(d: ClaimedDelivery): Promise<void> {
    const limit = async () => {
      if (this.#stopping || this.#dropped.has(d.id)) return undefined
      return (await this.#destination(d.tenant_id, d.destination_id))?.delivery?.rate_limit
    }
    for (;;) {
      try {
        if (await limit()) await this.#limiter.acquire(d.tenant_id, d.destination_id, limit)
        return
      } catch (err) {
        this.#storageFailed(err, 'taking a rate-limit token failed', { tenant_id: d.tenant_id, destination_id: d.destination_id })
        // While storage is unavailable no token can be had: wait for it rather than exceed the limit.
        if (!isUnavailable(err) || this.#stopping) return
        await sleep(this.#ctx.options.delivery.pollIntervalMs, undefined, { ref: false })
      }
    }
  }

  #destinationQueue(k: string): PQueue {
    const queue = new PQueue({ concurrency: this.#ctx.options.delivery.perDestinationConcurrency })
    this.#perDestination.set(k, queue)
    queue.on('idle', () => {
      if (this.#perDestination.get(k) === queue && queue.size === 0 && queue.pending === 0) this.#perDestination.delete(k)
    })
    return queue
  }

  /** Claim now rather than at the next poll (after a manual retry, or a NOTIFY from another instance). */
  wake(): void {
    if (this.#wake) this.#wake()
    // Asked while claiming: the claim may have run before the work was visible (a host's commit, another
    // instance's NOTIFY), so claim once more rather than sleep a whole poll interval.
    else this.#wakeMissed = true
  }

  /** Forget a destination's cached record and publisher after it changed. */
  destinationChanged(tenantId: string, destinationId: string): void {
    const k = key(tenantId, destinationId)
    this.#destinations.delete(k)
    const cached = this.#publishers.get(k)
    this.#publishers.delete(k)
    if (cached) void cached.publisher.then((p) => p.close()).catch(() => undefined)
  }

  /**
   * A tenant (or one destination) was deleted: evict its cached records and publishers, drop its queued
   * deliveries, and resolve once its attempts already started have ended, so nothing reaches its
   * receivers after the delete returns. Attempts starting later read the destination afresh and find it gone.
   */
  async stopDeliveries(tenantId: string, destinationId?: string): Promise<void> {
    const owned = (tenant: string, destination: string) => tenant === tenantId && (destinationId === undefined || destination === destinationId)
    for (const k of new Set([...this.#destinations.keys(), ...this.#publishers.keys()])) {
      const [tenant, destination] = k.split('\u0000') as [string, string]
      if (owned(tenant, destination)) this.destinationChanged(tenant, destination)
    }
    const running: Promise<void>[] = []
    for (const [id, d] of this.#held) {
      if (!owned(d.tenant_id, d.destination_id)) continue
      const attempt = this.#started.get(id)
      if (attempt) running.push(attempt)
      else this.#dropped.add(id)
    }
    await Promise.all(running)
  }

  #start(d: ClaimedDelivery): Promise<void> {
    // A local publish's first attempt (claimed ones carry due_at, and their wait is the claim's poll).
    if (!d.replay && d.due_at === undefined && d.attempt_count === 0) this.#admission.liveStarted(Date.now() - d.event.created_at.getTime())
    if (this.#dropped.has(d.id)) {
      this.#release([d.id])
      return Promise.resolve()
    }
    const attempt = this.#attempt(d).finally(() => this.#started.delete(d.id))
    this.#started.set(d.id, attempt)
    return attempt
  }

  /** Claims the worker makes between two full scans of the due index look only at recent due times. */
  readonly #claimWindow: ClaimWindow

  async #claim(room: number): Promise<number> {
    const { leaseMs } = this.#ctx.options.delivery
    const now = this.#ctx.now()
    const dueSince = this.#claimWindow.next()
    const claimed = await this.#ctx.storage.claimDueDeliveries({ owner: this.id, now, leaseUntil: new Date(now.getTime() + leaseMs), limit: room, dueSince })
    this.#claimWindow.claimed(dueSince, now, claimed, room)
    this.enqueue(claimed)
    return claimed.length
  }

  async #claimLoop(): Promise<void> {
    const { batchSize, pollIntervalMs } = this.#ctx.options.delivery
    let promotedAt = 0
    while (!this.#stopping) {
      faultPoint('claim')
      // At most once a second: a safety net for a rare race, it scans every waiting delivery.
      if (Date.now() - promotedAt >= Math.max(pollIntervalMs, 1_000)) {
        promotedAt = Date.now()
        await this.#promoteWaiting()
      }
      let full = false
      const room = Math.min(batchSize, this.#maxHeld - this.#held.size)
      if (room > 0) {
        this.#wakeMissed = false
        try {
          const claimed = await this.#claim(room)
          this.#storageAnswered()
          full = claimed === room
        } catch (err) {
          if (this.#stopping) break
          this.#storageFailed(err, 'claiming deliveries failed')
        }
      }
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

  /** FIFO destinations: the safety net for a next delivery that two racing transactions both left waiting. */
  async #promoteWaiting(): Promise<void> {
    try {
      await this.#ctx.storage.promoteWaitingDeliveries(this.#ctx.now())
    } catch (err) {
      this.#storageFailed(err, 'promoting waiting deliveries failed')
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
    if (this.#held.size === 0) return
    try {
      const until = new Date(Date.now() + this.#ctx.options.delivery.leaseMs)
      await this.#ctx.storage.extendLeases(this.id, [...this.#held.keys()], until)
    } catch (err) {
      this.#storageFailed(err, 'renewing leases failed', { count: this.#held.size })
    }
  }

  /**
   * A storage call failed. While storage is unavailable the loops keep trying at their usual pace; the
   * outage is logged when it starts and when it ends, not at every failed call. Other errors are logged each time.
   */
  #storageFailed(err: unknown, message: string, fields: Record<string, unknown> = {}): void {
    const { logger } = this.#ctx.options
    if (!isUnavailable(err)) return logger.error({ ...fields, error: errorFields(err) }, message)
    if (this.#outage) {
      this.#outage.failures++
      return
    }
    this.#outage = { since: Date.now(), failures: 1 }
    logger.warn({ ...fields, error: errorFields(err) }, `storage unavailable (${message}); delivery resumes when it answers`)
  }

  /** A storage call succeeded: ends an outage. */
  #storageAnswered(): void {
    if (!this.#outage) return
    const { since, failures } = this.#outage
    this.#outage = undefined
    this.#ctx.options.logger.warn({ outage_ms: Date.now() - since, failed_calls: failures }, 'storage available again')
  }

  async #destination(tenantId: string, destinationId: string): Promise<DestinationRecord | null> {
    const k = key(tenantId, destinationId)
    const cached = this.#destinations.get(k)
    if (cached && Date.now() - cached.at < destinationCacheMs) return cached.record
    const record = this.#ctx.storage.getDestination(tenantId, destinationId)
    const entry: { record: typeof record; at: number; read?: { record: DestinationRecord | null } } = { record, at: Date.now() }
    this.#destinations.set(k, entry)
    record.then(
      (answer) => (entry.read = { record: answer }),
      () => this.#destinations.get(k) === entry && this.#destinations.delete(k),
    )
    return record
  }

  /** The destination's cached record if it has been read (null: gone), without waiting; undefined when it must be read. */
  #destinationRead(tenantId: string, destinationId: string): { record: DestinationRecord | null } | undefined {
    const cached = this.#destinations.get(key(tenantId, destinationId))
    return cached && Date.now() - cached.at < destinationCacheMs ? cached.read : undefined
  }

  /** The cached publisher of a destination, replaced when the destination was updated. */
  #publisher(destination: DestinationRecord): Promise<Publisher> {
    const k = key(destination.tenant_id, destination.id)
    const version = destination.updated_at.getTime()
    const cached = this.#publishers.get(k)
    if (cached && cached.version === version) return cached.publisher
    if (cached) void cached.publisher.then((p) => p.close()).catch(() => undefined)
    const { options } = this.#ctx
    const publisher = destinationType(destination.type).createPublisher(
      { id: destination.id, tenant_id: destination.tenant_id, type: destination.type, config: destination.config, credentials: this.#credentials(destination) },
      { allowPrivateNetworks: options.allowPrivateNetworks || this.#isOperatorSink(destination), userAgent, relayUrl: options.relayUrl, signers: this.#ctx.signers, ...(options.delivery.proxy ? { proxy: options.delivery.proxy } : {}) },
    )
    this.#publishers.set(k, { publisher, version })
    publisher.catch(() => this.#publishers.get(k)?.publisher === publisher && this.#publishers.delete(k))
    return publisher
  }

  /** The operator configured the sink's address (like the alert URL before it), so it may be on a private network. */
  #isOperatorSink(destination: DestinationRecord): boolean {
    return destination.tenant_id === this.#ctx.options.operatorEvents?.tenantId && destination.id === operatorSinkId
  }

  /** Unreadable credentials (wrong key, a row copied from another destination) fail the attempt as a configuration error. */
  #credentials(destination: DestinationRecord): Record<string, unknown> {
    try {
      return unsealCredentials(destination.credentials, this.#ctx.credentialKeys, { tenantId: destination.tenant_id, destinationId: destination.id })
    } catch (err) {
      if (err instanceof CredentialsError) throw new DeliveryError('configuration', err.message, { cause: err })
      throw err
    }
  }

  async #attempt(d: QueuedDelivery): Promise<void> {
    let recorded = false
    let later = false
    try {
      if (this.#stopping) return // not started before close(): its lease is released
      const read = this.#destinationRead(d.tenant_id, d.destination_id)
      const destination = read ? read.record : await this.#destination(d.tenant_id, d.destination_id)
      if (!destination || destination.disabled_at) {
        // Gone: cancel. Disabled: park until enabled. Neither is an attempt.
        await this.#ctx.storage.holdDeliveries([d.id], !destination, this.#ctx.now())
        return
      }
      const { telemetry } = this.#ctx
      const at = this.#ctx.now()
      const started = performance.now()
      const span = telemetry.startAttempt(
        { tenant_id: d.tenant_id, destination_id: d.destination_id, destination_type: destination.type, event_id: d.event_id, attempt_number: d.attempt_count + 1 },
        d.trace,
      )
      let result: AttemptResult
      try {
        const publisher = await this.#publisher(destination)
        // One deadline for every destination type: each publisher honours the signal and reports a timeout.
        const deadline = startDeadline(destination.delivery?.timeout_ms ?? this.#ctx.options.delivery.timeoutMs)
        try {
          result = await publisher.publish(deliveryMessage(d, destination, span?.headers), { signal: deadline.signal })
        } finally {
          deadline.clear()
        }
      } catch (err) {
        result = failureBeforeSending(err)
      }
      const retry = retryPolicy(this.#ctx.options.delivery.retry, destination.delivery)
      const write = attemptWrite(d, destination.type, result, at, performance.now() - started, retry, destination.delivery?.on_exhausted === 'block')
      const entry: RecordedAttempt = { write, delivery: d, destination, gone: result.disable === true }
      this.#record(entry)
      recorded = true
      span?.end(write.attempt)
      telemetry.recordDelivered(destination.type, write.attempt.status, Date.now() - d.event.created_at.getTime())
      logAttempt(this.#ctx.options.logger, destination, write)
      this.#ctx.reporter.attempted(write.attempt)
      if (entry.gone) await this.#disableGone(entry)
    } catch (err) {
      const fields = { tenant_id: d.tenant_id, destination_id: d.destination_id, event_id: d.event_id }
      // Storage failed before the attempt (reading the destination): try again soon, rather than leave
      // the delivery to wait for its lease to expire.
      later = !recorded && isUnavailable(err) && !this.#stopping
      if (later) this.#storageFailed(err, 'reading the destination failed', fields)
      else this.#ctx.options.logger.error({ ...fields, error: errorFields(err) }, 'delivery attempt failed unexpectedly')
    } finally {
      // A recorded attempt stays held until its result is written, so the claim loop cannot take it again.
      if (later) this.#startLater(d)
      else if (!recorded) this.#release([d.id])
    }
  }

  /** Queue a held delivery again after a pause (it stays held meanwhile: the claim loop does not take it). */
  #startLater(d: QueuedDelivery): void {
    setTimeout(() => {
      this.#unhold(d.id)
      if (this.#stopping) return this.#release([d.id])
      this.enqueue([d])
    }, this.#ctx.options.delivery.pollIntervalMs).unref()
  }

  #release(ids: string[]): void {
    for (const id of ids) {
      this.#unhold(id)
      this.#dropped.delete(id)
    }
    this.#admitReplays()
    if (this.#held.size < this.#maxHeld / 2) this.wake()
  }

  async #disableGone(entry: RecordedAttempt): Promise<void> {
    const { delivery: d } = entry
    const now = this.#ctx.now()
    const record = await this.#ctx.storage.setDestinationDisabled(d.tenant_id, d.destination_id, now, now)
    this.destinationChanged(d.tenant_id, d.destination_id)
    this.#ctx.options.logger.warn({ tenant_id: d.tenant_id, destination_id: d.destination_id }, 'destination disabled: the receiver answered 410 Gone')
    this.#ctx.reporter.destinationDisabled({ tenant_id: d.tenant_id, destination_id: d.destination_id, reason: 'gone' })
    if (record && d.tenant_id !== this.#ctx.options.operatorEvents?.tenantId)
      this.#ctx.reporter.operatorEvent('alert.destination.disabled', { ...attemptEventData(entry, record), disabled_at: (record.disabled_at ?? now).toISOString(), reason: 'gone' })
  }

  #record(entry: RecordedAttempt): void {
    this.#writes.push(entry)
    if (this.#writes.length >= writeBatch) this.#gathered?.()
    this.#startWriting()
  }

  /** Ends the current gathering window early (a full batch is waiting, or close()). */
  #gathered?: () => void

  /**
   * One writer at a time: while a batch is being written, new results pile up and go in the next
   * batch, so the write rate follows the database's commit rate instead of one commit per attempt.
   */
  #startWriting(): void {
    if (this.#writing) return
    this.#writing = (async () => {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.#stopping ? 0 : writeGatherMs)
        this.#gathered = () => (clearTimeout(timer), resolve())
      })
      this.#gathered = undefined
      while (this.#writes.length > 0) {
        const batch = this.#writes.splice(0, writeBatch)
        let delay: number
        try {
          faultPoint('results')
          if (await this.#writeBatch(batch)) {
            this.#ctx.supervisor.ok('results')
            continue
          }
          // Storage is unavailable: the results wait (their deliveries stay held, so this worker does not
          // attempt them again) and are written once it answers.
          delay = Math.min(maxWriteRetryMs, writeRetryMs * 2 ** (this.#writeFailures - 1))
        } catch (err) {
          // Unexpected (a bug): the batch waits at the head of the queue and is written again after a pause.
          // Closing, it is given up: its leases are released, so the deliveries are attempted again.
          if (this.#stopping) {
            this.#ctx.options.logger.error({ count: batch.length, error: errorFields(err) }, 'recording attempts failed while closing')
            continue
          }
          this.#writes.unshift(...batch)
          delay = this.#ctx.supervisor.failed('results', err)
        }
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay)
          this.#retryWrites = () => (clearTimeout(timer), resolve())
        })
        this.#retryWrites = undefined
      }
    })().finally(() => {
      this.#writing = undefined
      if (this.#writes.length > 0) this.#startWriting()
    })
  }

  /** Resolves when every result recorded so far is written. */
  async #flush(): Promise<void> {
    while (this.#writing || this.#writes.length > 0) {
      this.#startWriting()
      this.#gathered?.()
      this.#retryWrites?.()
      await this.#writing
    }
  }

  /**
   * Write attempt results in one transaction, then report outcomes (operator events, failure streaks) and
   * schedule wake-ups. False when storage was unavailable: the entries are back at the head of the queue
   * (a write that failed this way may still have been applied: writing an attempt again is a no-op).
   */
  async #writeBatch(entries: RecordedAttempt[]): Promise<boolean> {
    const writes = entries.map((e) => e.write)
    let written = true
    try {
      let streaks
      try {
        streaks = await this.#ctx.storage.recordAttempts(writes)
        this.#writeFailures = 0
      } catch (err) {
        if (isUnavailable(err) && !this.#stopping) {
          this.#writeFailures++
          this.#storageFailed(err, 'recording attempts failed', { count: writes.length })
          this.#writes.unshift(...entries)
          written = false
          return false
        }
        // The leases expire and the deliveries are attempted again: at-least-once.
        this.#ctx.options.logger.error({ count: writes.length, error: errorFields(err) }, 'recording attempts failed')
        return true
      }
      for (const w of writes) if (w.delivery.next_attempt_at) this.#wakeAt(w.delivery.next_attempt_at.getTime())
      // A finished delivery to a FIFO destination made the next one of its key due: claim it now.
      if (writes.some((w) => w.delivery.order_key != null && w.delivery.status !== 'pending')) this.wake()
      const disabled = await reportOutcomes(this.#ctx, entries, streaks).catch((err: unknown) => {
        this.#ctx.options.logger.error({ count: writes.length, error: errorFields(err) }, 'reporting attempt outcomes failed')
        return []
      })
      for (const { tenant_id, destination_id } of disabled) this.destinationChanged(tenant_id, destination_id)
      return true
    } finally {
      if (written) this.#release(writes.map((w) => w.delivery.id))
    }
  }

  /** Claim again when the earliest scheduled retry falls due, rather than waiting for the next poll. */
  #wakeAt(ms: number): void {
    if (ms >= this.#retryAt || this.#stopping) return
    this.#retryAt = ms
    clearTimeout(this.#retryTimer)
    this.#retryTimer = setTimeout(() => {
      this.#retryAt = Infinity
      this.wake()
    }, Math.max(0, ms - Date.now()))
    this.#retryTimer.unref()
  }

  /** Stop claiming, let in-flight attempts finish within `drainTimeoutMs`, write results, release leases. */
  async close(): Promise<void> {
    if (this.#stopping) return
    this.#stopping = true
    this.#stop.abort()
    clearTimeout(this.#retryTimer)
    clearTimeout(this.#replayTimer)
    this.wake()
    await this.#loop
    await this.#leaseLoop
    await (await this.#unlisten)?.().catch(() => undefined)
    // Attempts already running may finish; queued ones are not started.
    for (const q of this.#perDestination.values()) q.clear()
    this.#global.clear()
    // Unref'd: the attempts in flight keep the process alive; the timer alone must not (for drainTimeoutMs after close()).
    const drained = await Promise.race([this.#global.onIdle().then(() => true), sleep(this.#ctx.options.delivery.drainTimeoutMs, false, { ref: false })])
    if (!drained) this.#ctx.options.logger.warn({ in_flight: this.#global.pending }, 'close: attempts still in flight after drainTimeoutMs; their leases are released')
    await this.#flush()
    // A worker that never started holds no lease (and an API-only process must not wait on storage here).
    if (this.#running) await this.#ctx.storage.releaseLeases(this.id).catch((err: unknown) => this.#ctx.options.logger.error({ error: errorFields(err) }, 'releasing leases failed'))
    await Promise.all([...this.#publishers.values()].map((c) => c.publisher.then((p) => p.close()).catch(() => undefined)))
    this.#publishers.clear()
    // Pools are shared per origin; ones closed here are re-created on demand by another engine in the process.
    await closeHttpClients()
  }
}
