import type PostgresJs from 'postgres'
import { OutflowError } from '../errors.js'
import { errorFields, stderrLogger, type Logger } from '../logger.js'
import { codeOf, isUnavailable } from './postgres-faults.js'
import type { Storage } from './storage.js'

// A read replica (`postgres({ url, readUrl })`): the listings and metrics, which may lag a write by the
// replica's replay delay, are read from it; everything else stays on the primary. When the replica cannot
// answer (unreachable, a statement cancelled by a recovery conflict) or is further behind than
// `maxReplicaLagMs`, the read is made on the primary instead: a replica never turns a read into a 503.

/** A read replica's options of `postgres()` (docs/scaling.md › Read replica). */
export interface ReplicaOptions {
  /**
   * A streaming replica of `url` (`postgres://…`, the same database): event and attempt listings and the metrics
   * API are read from it, eventually consistent (a write shows there after the replica's replay delay). Reads that
   * must see a write just made stay on the primary: single resources, tenants and destinations, publish, the
   * worker, replays, portal codes, signing keys, health. A replica that fails is skipped for 5 s (reads go to the
   * primary, logged once), then tried again.
   */
  readUrl?: string
  /** The replica's pool size (default `max`). */
  readMax?: number
  /**
   * With `readUrl`: past this replay delay, ms, the replica's reads are made on the primary (checked with each
   * read, in parallel with it). Unset (default): the replica answers however far behind it is.
   */
  maxReplicaLagMs?: number
}

/** After the replica failed, reads go to the primary this long before the replica is tried again, ms. */
export const replicaRetryMs = 5_000

/**
 * The replica's replay delay, ms: 0 when it has replayed all it received (a quiet primary is no lag), else the
 * time since the last transaction it replayed committed on the primary. 0 on a server that is not a standby.
 */
const replicaLagSql = `select case
  when not pg_is_in_recovery() or pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
  else coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000, 0)
end::float8 as lag_ms`

/** The replica's replay delay, ms (`replicaLagSql`). */
export async function replicaLag(client: PostgresJs.Sql): Promise<number> {
  const [row] = await client.unsafe<{ lag_ms: number }[]>(replicaLagSql)
  return Number(row?.lag_ms ?? 0)
}

/**
 * SQLSTATEs of a read the replica cancelled, which the primary answers: 40001 (conflict with recovery:
 * replay needed rows the statement read) and 40P01 (its deadlock form).
 */
const recoveryConflictStates = new Set(['40001', '40P01'])

/** `readUrl`, `readMax` and `maxReplicaLagMs`, refused (`validation`) unless usable. */
export function checkedReplicaOptions(options: ReplicaOptions): void {
  const invalid = (field: keyof ReplicaOptions, rule: string) =>
    new OutflowError('validation', `invalid Postgres option ${field}: ${rule}`, { data: { [field]: rule } })
  const { readUrl, readMax, maxReplicaLagMs } = options
  if (readUrl !== undefined && (typeof readUrl !== 'string' || !/^postgres(ql)?:\/\//.test(readUrl))) throw invalid('readUrl', 'must be a postgres:// or postgresql:// URL')
  if (readMax !== undefined && !(Number.isSafeInteger(readMax) && readMax >= 1)) throw invalid('readMax', 'must be an integer of at least 1')
  if (maxReplicaLagMs !== undefined && !(Number.isFinite(maxReplicaLagMs) && maxReplicaLagMs > 0)) throw invalid('maxReplicaLagMs', 'must be a number above 0')
}

/**
 * Chooses, for each lag-tolerant read, the replica or the primary; one per storage, shared by its two bounds
 * (the worker's and the callers'). Logs each change once: the replica failing or falling behind, and answering again.
 */
export class ReplicaRouter {
  /** Until this time (performance.now()) reads skip the replica: it failed. */
  #skipUntil = 0
  #failing = false
  #behind = false

  constructor(
    private readonly maxLagMs: number | undefined,
    private readonly logger: Logger = stderrLogger,
  ) {}

  /**
   * `fromReplica()`, or `fromPrimary()` when the replica fails, is behind (`lagMs()`, checked alongside the read
   * when `maxReplicaLagMs` is set), or failed less than `replicaRetryMs` ago.
   */
  async read<T>(fromReplica: () => Promise<T>, fromPrimary: () => Promise<T>, lagMs: () => Promise<number>): Promise<T> {
    if (performance.now() < this.#skipUntil) return fromPrimary()
    const lag = this.maxLagMs === undefined ? undefined : lagMs()
    lag?.catch(() => undefined)
    let answer: T
    let lagNow: number | undefined
    try {
      ;[answer, lagNow] = await Promise.all([fromReplica(), lag])
    } catch (err) {
      if (!this.#movesToPrimary(err)) throw err
      return fromPrimary()
    }
    this.#answering()
    if (lagNow === undefined || lagNow <= this.maxLagMs!) {
      if (this.#behind) this.logger.info({ lag_ms: Math.round(lagNow ?? 0) }, 'Postgres read replica caught up: listings and metrics are read from it again')
      this.#behind = false
      return answer
    }
    if (!this.#behind) this.logger.warn({ lag_ms: Math.round(lagNow), max_replica_lag_ms: this.maxLagMs }, 'Postgres read replica is behind: listings and metrics are read from the primary')
    this.#behind = true
    return fromPrimary()
  }

  /** Whether a replica's failure sends the read to the primary: unreachable (for a while), or a recovery conflict. */
  #movesToPrimary(err: unknown): boolean {
    if (isUnavailable(err)) {
      this.#skipUntil = performance.now() + replicaRetryMs
      if (!this.#failing) this.logger.warn({ error: errorFields(err), retry_ms: replicaRetryMs }, 'Postgres read replica unavailable: listings and metrics are read from the primary')
      this.#failing = true
      return true
    }
    return recoveryConflictStates.has(codeOf(err) ?? '')
  }

  #answering(): void {
    if (this.#failing) this.logger.info({}, 'Postgres read replica answers again: listings and metrics are read from it')
    this.#failing = false
  }
}

/**
 * `primary` with its lag-tolerant reads made on `replica` (the same storage over the replica's pool) through
 * `router`: event listings, attempt listings and the metrics API. An event's attempts that the replica does not
 * have yet are read from the primary, so an event a GET just showed is never "not found" for its attempts.
 */
export function readingFromReplica(primary: Storage, replica: Storage, router: ReplicaRouter, lagMs: () => Promise<number>): Storage {
  const read = <T>(fromReplica: () => Promise<T>, fromPrimary: () => Promise<T>) => router.read(fromReplica, fromPrimary, lagMs)
  return {
    ...primary,
    listEvents: (q) => read(() => replica.listEvents(q), () => primary.listEvents(q)),
    listAttempts: async (tenantId, eventId) => {
      const attempts = await read(() => replica.listAttempts(tenantId, eventId), () => primary.listAttempts(tenantId, eventId))
      return attempts.length ? attempts : primary.listAttempts(tenantId, eventId)
    },
    eventMetrics: (q) => read(() => replica.eventMetrics(q), () => primary.eventMetrics(q)),
    attemptMetrics: (q) => read(() => replica.attemptMetrics(q), () => primary.attemptMetrics(q)),
  }
}
