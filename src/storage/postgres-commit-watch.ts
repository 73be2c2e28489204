import { sql } from 'drizzle-orm'
import { prepared, slot, type Driver } from './postgres-prepared.js'

// Publishes inside host transactions (postgres-outbox.ts) carry no NOTIFY: Postgres commits notifying transactions
// one at a time (a database-wide lock from the NOTIFY's queue entry through the commit's WAL flush), which made
// concurrent host transactions that publish wait for each other. The engine watches them commit instead.

/**
 * Wakes the workers once host transactions that wrote deliveries commit: `check` asks Postgres for the status of
 * the watched transactions (`pg_xact_status`) and sends a NOTIFY on the work channel, from the engine's own pool,
 * when one has committed. A rolled-back one is dropped without a wake-up. The first look comes `firstLookMs` after
 * the publish, then ever less often (doubling up to a second) for as long as the transaction stays open, up to
 * `giveUpMs`; one look at a time covers every watched transaction. Past that, or if a look fails, the workers'
 * poll finds the deliveries.
 */
export class CommitWatch {
  readonly #check: (xacts: string[]) => Promise<Map<string, string | null>>
  readonly #watched = new Map<string, { since: number; due: number; step: number }>()
  #timer?: NodeJS.Timeout
  #looking = false
  #closed = false

  /** `check` answers each transaction's status (`committed`, `aborted`, `in progress`; null if unknown) and notifies for committed ones. */
  constructor(check: (xacts: string[]) => Promise<Map<string, string | null>>) {
    this.#check = check
  }

  watch(xact: string): void {
    if (this.#closed || this.#watched.has(xact)) return
    const now = Date.now()
    this.#watched.set(xact, { since: now, due: now + firstLookMs, step: firstLookMs })
    this.#schedule()
  }

  #schedule(): void {
    if (this.#looking || this.#timer || this.#watched.size === 0 || this.#closed) return
    let due = Infinity
    for (const w of this.#watched.values()) due = Math.min(due, w.due)
    this.#timer = setTimeout(() => void this.#look(), Math.max(0, due - Date.now()))
    this.#timer.unref()
  }

  async #look(): Promise<void> {
    this.#timer = undefined
    this.#looking = true
    const xacts = [...this.#watched.keys()]
    let statuses: Map<string, string | null> | undefined
    try {
      statuses = await this.#check(xacts)
    } catch {
      // Storage unavailable: look again later (each transaction's next look backs off as usual).
    }
    const now = Date.now()
    for (const xact of xacts) {
      const w = this.#watched.get(xact)!
      const status = statuses?.get(xact)
      if (statuses && status !== 'in progress') this.#watched.delete(xact)
      else if (now - w.since >= giveUpMs) this.#watched.delete(xact)
      else {
        w.step = Math.min(w.step * 2, maxStepMs)
        w.due = now + w.step
      }
    }
    this.#looking = false
    this.#schedule()
  }

  /** Stop looking (storage closed). */
  close(): void {
    this.#closed = true
    clearTimeout(this.#timer)
    this.#watched.clear()
  }
}

const lookAtCommits = prepared<'xacts' | 'channel'>(sql`
  with s as (select x, pg_xact_status(x::xid8)::text as status from unnest(${slot('xacts')}::text[]) x),
  wake as (select pg_notify(${slot('channel')}::text, '') from (select 1) one where exists (select 1 from s where status = 'committed'))
  select x, status from s
  union all select null, null from wake`)

/**
 * CommitWatch's look: the status of each transaction, and one NOTIFY on `channel` (from `driver`, the engine's pool)
 * if any has committed.
 */
export function commitStatuses(driver: Driver, channel: string): (xacts: string[]) => Promise<Map<string, string | null>> {
  return async (xacts) => {
    const rows = await lookAtCommits(driver, { xacts, channel })
    return new Map(rows.filter(([x]) => x !== null).map(([x, status]) => [x as string, status as string | null]))
  }
}

/** How soon after a publish the first look is: a host typically commits right after it. */
const firstLookMs = 2
/** The longest pause between two looks at a transaction still open. */
const maxStepMs = 1_000
/** How long an open host transaction is watched; after that the poll finds its deliveries. */
const giveUpMs = 10 * 60_000
