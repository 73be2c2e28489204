import { randomBytes } from 'node:crypto'
import type { DeliveryReporter } from '../delivery/events.js'
import { OutflowError } from '../errors.js'
import { EventWriter } from '../delivery/event-writer.js'
import { ReplayRunner } from '../delivery/replay-runner.js'
import { ExpungeRunner } from '../delivery/expunge-runner.js'
import { Supervisor } from '../delivery/supervisor.js'
import { DeliveryWorker } from '../delivery/worker.js'
import { durationMs, type ResolvedOptions } from '../options.js'
import type { Storage } from '../storage/storage.js'
import type { Telemetry } from '../telemetry.js'
import { payloadLinkKey } from '../tokens.js'
import type { Catalog } from '../delivery/catalog.js'
import type { EngineContext } from './context.js'
import { credentialKeys } from './credential-keys.js'
import { ensureOperatorSink, OperatorSink } from './operator-sink.js'
import { CommitWatcher } from './publish-in-transaction.js'
import { Pruner, type PruneResult } from './pruner.js'
import { SigningKeyring } from './signing-keys.js'

/**
 * The running parts of an engine and their lifecycle: the context its operations share, the delivery worker,
 * the publish writer, the replay and erasure runners, the operator sink, the pruner and the supervisor of their loops.
 * `start()` sets them going, `close()` stops them in order (what `Outflow.start` and `Outflow.close` do).
 *
 * @example
 * const runtime = new EngineRuntime(storage, options, telemetry, catalog, (ctx, sink) => deliveryReporter(outflow, ctx, sink))
 * await runtime.start(); …; await runtime.close()
 */
export class EngineRuntime {
  readonly ctx: EngineContext
  readonly supervisor: Supervisor
  readonly worker: DeliveryWorker
  readonly writer: EventWriter
  readonly replays: ReplayRunner
  readonly expunges: ExpungeRunner
  readonly operatorSink: OperatorSink
  readonly pruner: Pruner | undefined
  /** Wakes the worker after a host's SQLite transaction with new deliveries committed (publishSync). */
  readonly commits: CommitWatcher
  readonly #storage: Storage
  readonly #telemetry: Telemetry
  #stopObservingQueue?: () => void
  #closed = false

  constructor(storage: Storage, options: ResolvedOptions, telemetry: Telemetry, catalog: Catalog | undefined, reporter: (ctx: EngineContext, sink: () => OperatorSink) => DeliveryReporter) {
    this.#storage = storage
    this.#telemetry = telemetry
    const secret = jwtSecret(options)
    // API requests and typed-API calls give up on a paused database sooner than the worker does (Storage.forCallers).
    const forCallers = storage.forCallers ?? storage
    const keys = credentialKeys(options, storage)
    const now = () => new Date()
    const signingKeys = new SigningKeyring(storage, options, keys, now)
    const linkKey = payloadLinkKey(secret)
    this.ctx = {
      storage: forCallers,
      options,
      credentialKeys: keys,
      signingKeys,
      jwtSecret: secret,
      payloadLinkKey: linkKey,
      telemetry,
      catalog,
      now,
      destinationChanged: (tenantId, destinationId) => this.worker.destinationChanged(tenantId, destinationId),
      stopDeliveries: (tenantId, destinationId) => this.worker.stopDeliveries(tenantId, destinationId),
      stopEventDeliveries: (tenantId, eventIds) => this.worker.stopEventDeliveries(tenantId, eventIds),
      jobCreated: () => {
        this.replays.wake()
        this.expunges.wake()
      },
    }
    const supervisor = (this.supervisor = new Supervisor(options.supervisor, options.logger))
    const signers = () => signingKeys.signers()
    const payloadLinks = options.publicUrl ? { baseUrl: options.publicUrl.replace(/\/+$/, ''), ttlMs: durationMs(options.payloadLinkTtl), key: linkKey } : undefined
    this.worker = new DeliveryWorker({ storage, options, credentialKeys: keys, now, telemetry, reporter: reporter(this.ctx, () => this.operatorSink), signers, supervisor, payloadLinks })
    this.writer = new EventWriter(forCallers, this.worker, now)
    this.replays = new ReplayRunner({ storage, options, now, wakeWorker: () => this.worker.wake(), supervisor })
    this.expunges = new ExpungeRunner({ storage, options, now, supervisor, erased: (tenantId, eventIds) => this.worker.stopEventDeliveries(tenantId, eventIds) })
    this.operatorSink = new OperatorSink(this.ctx, this.writer)
    this.commits = new CommitWatcher(() => this.worker.wake(), options.delivery.pollIntervalMs)
    this.pruner = this.#pruner(options)
  }

  #pruner(options: ResolvedOptions): Pruner | undefined {
    const { retention } = options
    if (!retention) return undefined
    return new Pruner(this.#storage, {
      windowMs: retention.events,
      batchSize: retention.batchSize,
      intervalMs: retention.intervalMs,
      // Live work: deliveries in flight, or a publish in the last second.
      busy: () => this.worker.inFlight > 0 || performance.now() - this.writer.lastWriteAt < 1000,
      logger: options.logger,
      supervisor: this.supervisor,
      now: this.ctx.now,
    })
  }

  /** Set up the operator sink and start the delivery worker (unless `delivery.worker` is false) and the pruner. */
  async start(): Promise<void> {
    const { options } = this.ctx
    await this.ctx.signingKeys.start()
    await ensureOperatorSink(this.ctx)
    if (options.delivery.worker) {
      this.worker.start()
      this.replays.start()
      this.expunges.start()
    }
    this.pruner?.start()
    this.#stopObservingQueue ??= this.#telemetry.observeQueue(async () => {
      const now = this.ctx.now()
      const { due, oldest_due_at } = await this.#storage.queueStats(now)
      return { depth: due, lagSeconds: oldest_due_at ? Math.max(0, now.getTime() - oldest_due_at.getTime()) / 1000 : 0 }
    })
    options.logger.info({ storage: this.#storage.dialect, worker: options.delivery.worker, worker_id: this.worker.id }, 'outflow started')
  }

  /** close() was called. */
  get closed(): boolean {
    return this.#closed
  }

  /** One pruning pass now; refused without `retention`, or once closed. */
  prune(): Promise<PruneResult> {
    if (!this.pruner) return Promise.reject(new OutflowError('validation', 'retention is not configured: createOutflow({ retention: { events: "30d" } })'))
    if (this.#closed) return Promise.reject(new OutflowError('unavailable', 'the Outflow engine is closed'))
    return this.pruner.prune()
  }

  /** Stop claiming, drain in-flight attempts (bounded), release leases, close connections. Idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#stopObservingQueue?.()
    this.commits.close()
    // Publishes already accepted are committed before the worker stops.
    await this.writer.drain()
    await this.pruner?.close()
    await this.replays.close()
    await this.expunges.close()
    await this.worker.close()
    this.ctx.signingKeys.close()
    // Operator events raised by the last results are committed too (delivered after a restart).
    await this.writer.drain()
    await this.#storage.close()
    this.ctx.options.logger.info({ worker_id: this.worker.id }, 'outflow stopped')
  }
}

/** The configured secret that signs tenant tokens, or a random one per process (with a warning). */
function jwtSecret(options: ResolvedOptions): string {
  if (options.jwtSecret) return options.jwtSecret
  options.logger.warn({}, 'no jwtSecret configured: tenant tokens are signed with a random per-process secret and stop working on restart')
  return randomBytes(32).toString('base64url')
}
