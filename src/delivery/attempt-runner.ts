import { performance } from 'node:perf_hooks'
import { failureBeforeSending } from '../destinations/failure.js'
import { errorFields } from '../logger.js'
import type { AttemptResult } from '../model/attempt-result.js'
import { startDeadline } from '../net/deadline.js'
import type { DestinationRecord, EventRecord } from '../storage/storage.js'
import type { AttemptSpan } from '../telemetry.js'
import { attemptWrite, deliveryMessage } from './attempt.js'
import { publishBatch } from './batch-publish.js'
import { logAttempt } from './attempt-log.js'
import type { DeliveryContext, QueuedDelivery } from './context.js'
import type { DestinationCache } from './destination-cache.js'
import { attemptEventData, type RecordedAttempt } from './operator-events.js'
import { retryPolicy } from './retry-schedule.js'
import { isUnavailable, type OutageLog } from './storage-outage.js'

/** An event whose payload was erased (published data is always an object; erasure makes it null). */
function erased(event: EventRecord): boolean {
  return event.data_json === undefined ? event.data === null : event.data_json === 'null'
}

/** Where an attempt's delivery goes next. */
export interface AttemptHost {
  /** The worker is closing: a delivery not started yet is not attempted (its lease is released). */
  stopping(): boolean
  /** The attempt's result, to be written (the delivery stays held until it is). */
  record(entry: RecordedAttempt): void
  /** Not attempted and nothing to write (its destination is gone or disabled, or the attempt failed unexpectedly). */
  release(id: string): void
  /** Storage failed before the attempt: attempt it again after a pause. */
  later(d: QueuedDelivery): void
}

/**
 * One delivery attempt: read the destination (cached), publish through its cached publisher under the
 * destination's deadline, hand the result to be written, and report it (span, metrics, log, host event). A
 * receiver that answered 410 Gone disables its destination.
 *
 * @example
 * await runner.run(delivery) // the result goes to host.record; the delivery leaves the worker once it is written
 */
export class AttemptRunner {
  readonly #ctx: DeliveryContext
  readonly #destinations: DestinationCache
  readonly #outage: OutageLog
  readonly #host: AttemptHost

  constructor(ctx: DeliveryContext, destinations: DestinationCache, outage: OutageLog, host: AttemptHost) {
    this.#ctx = ctx
    this.#destinations = destinations
    this.#outage = outage
    this.#host = host
  }

  async run(d: QueuedDelivery): Promise<void> {
    let recorded = false
    let later = false
    try {
      if (this.#host.stopping()) return // not started before close(): its lease is released
      const read = this.#destinations.read(d.tenant_id, d.destination_id)
      const destination = read ? read.record : await this.#destinations.get(d.tenant_id, d.destination_id)
      if (!destination || destination.disabled_at) {
        // Gone: cancel. Disabled: park until enabled. Neither is an attempt.
        await this.#ctx.storage.holdDeliveries([d.id], !destination, this.#ctx.now())
        return
      }
      // Its event was erased (storage ended the delivery with it): never sent with an empty body.
      if (erased(d.event)) return
      const { entry, span } = await this.#attempt(d, destination)
      recorded = true
      this.#report(entry, span)
      if (entry.gone) await this.#disableGone(entry)
    } catch (err) {
      const fields = { tenant_id: d.tenant_id, destination_id: d.destination_id, event_id: d.event_id }
      // Storage failed before the attempt (reading the destination): try again soon, rather than leave
      // the delivery to wait for its lease to expire.
      later = !recorded && isUnavailable(err) && !this.#host.stopping()
      if (later) this.#outage.failed(err, 'reading the destination failed', fields)
      else this.#ctx.options.logger.error({ ...fields, error: errorFields(err) }, 'delivery attempt failed unexpectedly')
    } finally {
      // A recorded attempt stays held until its result is written, so the claim loop cannot take it again.
      if (later) this.#host.later(d)
      else if (!recorded) this.#host.release(d.id)
    }
  }

  /**
   * A gathered batch of one destination's deliveries: published together (batch-publish.ts), then each delivery's
   * own result written, reported and retried as a single attempt's would be.
   */
  async runBatch(ds: QueuedDelivery[]): Promise<void> {
    const recorded = new Set<string>()
    let later = false
    const { tenant_id: tenantId, destination_id: destinationId } = ds[0]!
    try {
      if (this.#host.stopping()) return // not started before close(): the leases are released
      const read = this.#destinations.read(tenantId, destinationId)
      const destination = read ? read.record : await this.#destinations.get(tenantId, destinationId)
      if (!destination || destination.disabled_at) {
        await this.#ctx.storage.holdDeliveries(ds.map((d) => d.id), !destination, this.#ctx.now())
        return
      }
      const sending = ds.filter((d) => !erased(d.event))
      if (sending.length === 0) return
      const entries = await this.#attemptBatch(sending, destination, recorded)
      const gone = entries.find((entry) => entry.gone)
      if (gone) await this.#disableGone(gone)
    } catch (err) {
      const fields = { tenant_id: tenantId, destination_id: destinationId, count: ds.length }
      later = recorded.size === 0 && isUnavailable(err) && !this.#host.stopping()
      if (later) this.#outage.failed(err, 'reading the destination failed', fields)
      else this.#ctx.options.logger.error({ ...fields, error: errorFields(err) }, 'batch delivery attempt failed unexpectedly')
    } finally {
      for (const d of ds) {
        if (recorded.has(d.id)) continue
        if (later) this.#host.later(d)
        else this.#host.release(d.id)
      }
    }
  }

  /** Publish a batch, and hand each delivery's result to be written. */
  async #attemptBatch(ds: QueuedDelivery[], destination: DestinationRecord, recorded: Set<string>): Promise<RecordedAttempt[]> {
    const { telemetry } = this.#ctx
    const at = this.#ctx.now()
    const spans = ds.map((d) =>
      telemetry.startAttempt(
        { tenant_id: d.tenant_id, destination_id: d.destination_id, destination_type: destination.type, event_id: d.event_id, attempt_number: d.attempt_count + 1 },
        d.trace,
      ),
    )
    const timeoutMs = destination.delivery?.timeout_ms ?? this.#ctx.options.delivery.timeoutMs
    let outcomes
    try {
      const publisher = await this.#destinations.publisher(destination)
      const messages = ds.map((d, i) => deliveryMessage(d, destination, spans[i]?.headers, this.#ctx.payloadLinks, at))
      outcomes = await publishBatch(publisher, messages, timeoutMs)
    } catch (err) {
      const result = failureBeforeSending(err)
      outcomes = ds.map(() => ({ result, durationMs: 0 }))
    }
    const retry = retryPolicy(this.#ctx.options.delivery.retry, destination.delivery)
    const block = destination.delivery?.on_exhausted === 'block'
    return ds.map((d, i) => {
      const { result, durationMs } = outcomes[i]!
      const write = attemptWrite(d, destination.type, result, at, durationMs, retry, block)
      const entry: RecordedAttempt = { write, delivery: d, destination, gone: result.disable === true }
      this.#host.record(entry)
      recorded.add(d.id)
      this.#report(entry, spans[i])
      return entry
    })
  }

  /** Publish, and hand the result to be written. */
  async #attempt(d: QueuedDelivery, destination: DestinationRecord): Promise<{ entry: RecordedAttempt; span: AttemptSpan | undefined }> {
    const { telemetry } = this.#ctx
    const at = this.#ctx.now()
    const started = performance.now()
    const span = telemetry.startAttempt(
      { tenant_id: d.tenant_id, destination_id: d.destination_id, destination_type: destination.type, event_id: d.event_id, attempt_number: d.attempt_count + 1 },
      d.trace,
    )
    const result = await this.#publish(d, destination, span)
    const retry = retryPolicy(this.#ctx.options.delivery.retry, destination.delivery)
    const write = attemptWrite(d, destination.type, result, at, performance.now() - started, retry, destination.delivery?.on_exhausted === 'block')
    const entry: RecordedAttempt = { write, delivery: d, destination, gone: result.disable === true }
    this.#host.record(entry)
    return { entry, span }
  }

  /** The attempt's span, metrics, log line and host event. */
  #report({ write, delivery: d, destination }: RecordedAttempt, span: AttemptSpan | undefined): void {
    span?.end(write.attempt)
    this.#ctx.telemetry.recordDelivered(destination.type, write.attempt.status, Date.now() - d.event.created_at.getTime())
    logAttempt(this.#ctx.options.logger, destination, write)
    this.#ctx.reporter.attempted(write.attempt)
  }

  async #publish(d: QueuedDelivery, destination: DestinationRecord, span: AttemptSpan | undefined): Promise<AttemptResult> {
    try {
      const publisher = await this.#destinations.publisher(destination)
      // One deadline for every destination type: each publisher honours the signal and reports a timeout.
      const deadline = startDeadline(destination.delivery?.timeout_ms ?? this.#ctx.options.delivery.timeoutMs)
      try {
        return await publisher.publish(deliveryMessage(d, destination, span?.headers, this.#ctx.payloadLinks, this.#ctx.now()), { signal: deadline.signal })
      } finally {
        deadline.clear()
      }
    } catch (err) {
      return failureBeforeSending(err)
    }
  }

  async #disableGone(entry: RecordedAttempt): Promise<void> {
    const { delivery: d } = entry
    const now = this.#ctx.now()
    const record = await this.#ctx.storage.setDestinationDisabled(d.tenant_id, d.destination_id, now, now)
    this.#destinations.evict(d.tenant_id, d.destination_id)
    this.#ctx.options.logger.warn({ tenant_id: d.tenant_id, destination_id: d.destination_id }, 'destination disabled: the receiver answered 410 Gone')
    this.#ctx.reporter.destinationDisabled({ tenant_id: d.tenant_id, destination_id: d.destination_id, reason: 'gone' })
    if (record && d.tenant_id !== this.#ctx.options.operatorEvents?.tenantId)
      this.#ctx.reporter.operatorEvent('alert.destination.disabled', { ...attemptEventData(entry, record), disabled_at: (record.disabled_at ?? now).toISOString(), reason: 'gone' })
  }
}
