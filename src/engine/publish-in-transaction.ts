import { planDeliveries, type EventToWrite } from '../delivery/event-writer.js'
import { OutflowError, notFound } from '../errors.js'
import type { PublishResult } from '../model/event.js'
import type { EventRecord, HostConnection, InsertEventResult, NewEventWithDeliveries } from '../storage/storage.js'
import type { EngineContext } from './context.js'
import { prepareEvents } from './publish.js'

// The outbox: events written by the host's own transaction, so they are delivered if and only if it
// commits. The deliveries are not leased to the local worker (nothing may be attempted before the commit,
// and a rollback leaves nothing to attempt): workers find them once the commit makes them visible,
// woken by a NOTIFY once the storage sees the host's transaction committed (Postgres, see CommitWatch in
// postgres-outbox.ts) or by the engine once the host's transaction has ended (SQLite, see CommitWatcher).

/**
 * Validate and match like `publish`, then write the events and their deliveries through the host's
 * Postgres transaction `tx`. All of the call's events, or none (an unknown tenant is a 404).
 */
export async function publishInTransaction(ctx: EngineContext, inputs: unknown[], single: boolean, tx: unknown): Promise<PublishResult[]> {
  const { storage } = ctx
  if (!storage.insertEventsInTransaction)
    throw new OutflowError(
      'validation',
      storage.dialect === 'sqlite'
        ? 'publish { tx } needs Postgres storage: on SQLite, publish inside your transaction with publishSync(input, { db })'
        : 'publish { tx }: this storage cannot write through a host transaction',
      { data: { tx: 'not supported by this storage' } },
    )
  const items = prepareEvents(ctx, inputs, single)
  return ctx.telemetry.publish(
    items.map((i) => i.event),
    async () => {
      // The storage reads the destinations (or keeps them between publishes, checking them in `tx`), and the
      // statement in `tx` checks again that the tenant and each destination still exist.
      const tenantIds = [...new Set(items.map((i) => i.event.tenant_id))]
      const { planned, results: inserted } = await storage.insertEventsInTransaction!(tx, tenantIds, (targets) => plan(items, targets))
      return results(planned, inserted)
    },
  )
}

/**
 * Validate, match and write synchronously on the host's SQLite connection, inside the transaction the
 * host has open on it. `written` is told of an event of the call that has deliveries, to wake the worker
 * once the host's transaction has committed.
 */
export function publishThroughConnection(
  ctx: EngineContext,
  inputs: unknown[],
  single: boolean,
  db: unknown,
  written: (host: HostConnection, event: EventRecord) => void,
): PublishResult[] {
  const { storage } = ctx
  if (!storage.hostConnection)
    throw new OutflowError('validation', 'publishSync { db } needs SQLite storage: on Postgres, publish inside your transaction with publish(input, { tx })', {
      data: { db: 'not supported by this storage' },
    })
  const host = storage.hostConnection(db)
  if (!host.inTransaction)
    throw new OutflowError('conflict', 'publishSync { db }: no transaction is open on this connection; call it inside db.transaction(() => …)', {
      data: { db: 'no open transaction' },
    })
  const items = prepareEvents(ctx, inputs, single)
  let planned: NewEventWithDeliveries[] = []
  const published = ctx.telemetry.publishSync(
    items.map((i) => i.event),
    () => {
      planned = plan(items, host.publishTargets([...new Set(items.map((i) => i.event.tenant_id))]))
      return results(planned, host.insertEvents(planned))
    },
  )
  const first = published.findIndex((r) => !r.duplicate && r.destination_ids.length > 0)
  if (first >= 0) written(host, planned[first]!.event)
  return published
}

function plan(items: EventToWrite[], targets: Parameters<typeof planDeliveries>[1]): NewEventWithDeliveries[] {
  // One group: the call's events are written all or none.
  return items.map((item) => ({ ...planDeliveries(item, targets), group: 0 }))
}

function results(planned: NewEventWithDeliveries[], inserted: InsertEventResult[]): PublishResult[] {
  // The tenant was deleted between the read of its destinations and the write: as if deleted first.
  const missing = inserted.find((r) => r.missing_tenant !== undefined)?.missing_tenant
  if (missing !== undefined) throw notFound('tenant', missing)
  return inserted.map((r, i) => ({ id: planned[i]!.event.id, duplicate: r.duplicate, destination_ids: r.destination_ids }))
}

/** How often a host connection still inside a transaction is looked at again (SQLite). */
const recheckMs = 10

/**
 * Wakes the worker once a host's SQLite transaction that wrote deliveries has committed, never for one
 * that rolled back. A transaction of better-sqlite3's `db.transaction()` has ended by the next turn of
 * the event loop; one the host holds open across awaits is looked at every 10 ms, until `giveUpMs`, past
 * which the worker's poll finds the deliveries anyway.
 */
export class CommitWatcher {
  readonly #watched = new Map<HostConnection, { event: EventRecord; since: number }[]>()
  readonly #wake: () => void
  readonly #giveUpMs: number
  #immediate?: NodeJS.Immediate
  #timeout?: NodeJS.Timeout

  constructor(wake: () => void, giveUpMs: number) {
    this.#wake = wake
    this.#giveUpMs = giveUpMs
  }

  watch(host: HostConnection, event: EventRecord): void {
    const list = this.#watched.get(host) ?? []
    list.push({ event, since: Date.now() })
    this.#watched.set(host, list)
    if (!this.#immediate && !this.#timeout) this.#immediate = setImmediate(() => this.#check())
  }

  #check(): void {
    this.#immediate = undefined
    this.#timeout = undefined
    let committed = false
    for (const [host, list] of this.#watched) {
      if (host.inTransaction) {
        const kept = list.filter((w) => Date.now() - w.since < this.#giveUpMs)
        if (kept.length > 0) this.#watched.set(host, kept)
        else this.#watched.delete(host)
        continue
      }
      // The host's transaction has ended: its events are there if it committed, gone if it rolled back.
      this.#watched.delete(host)
      try {
        if (list.some(({ event }) => host.hasEvent(event.tenant_id, event.id))) committed = true
      } catch {
        committed = true // could not tell: a wake-up that finds nothing costs one claim
      }
    }
    if (committed) this.#wake()
    if (this.#watched.size > 0) this.#timeout = setTimeout(() => this.#check(), recheckMs).unref()
  }

  /** Stop looking (engine closed). */
  close(): void {
    if (this.#immediate) clearImmediate(this.#immediate)
    clearTimeout(this.#timeout)
    this.#immediate = this.#timeout = undefined
    this.#watched.clear()
  }
}
