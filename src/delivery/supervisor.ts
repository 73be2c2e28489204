import { setTimeout as sleep } from 'node:timers/promises'
import { errorFields, type Logger } from '../logger.js'
import type { LoopHealth, LoopName } from '../model/health.js'

export type { LoopHealth, LoopName }

export interface SupervisorSettings {
  /** Failed restarts in a row after which a loop counts as failed (the engine unhealthy); it is still restarted. */
  restarts: number
  /** The pause before the first restart, doubling at each failure in a row... */
  backoffMs: number
  /** ...up to this. */
  maxBackoffMs: number
}

interface LoopState {
  restarts: number
  /** Failures since the loop last made progress. */
  failures: number
  since?: number
  error?: string
}

/**
 * Keeps the engine's loops running. A loop that throws an error it does not handle itself (a bug, an
 * unexpected driver error; storage outages are handled inside each loop) is started again after a pause
 * that doubles with each failure in a row. The first failure of a run is logged with its error, the others
 * are counted; after `restarts` failures in a row the loop counts as failed, health reports the engine
 * unhealthy, and the loop is still restarted at the longest pause. A loop that completes a pass afterwards
 * (`ok`) is running again, and that is logged too.
 */
export class Supervisor {
  readonly #settings: SupervisorSettings
  readonly #logger: Logger
  readonly #loops = new Map<LoopName, LoopState>()

  constructor(settings: SupervisorSettings, logger: Logger) {
    this.#settings = settings
    this.#logger = logger
  }

  /**
   * Run `body` until it returns, starting it again after a pause whenever it throws, until `stopped()`.
   * `signal` ends a pause early (close()).
   */
  async run(name: LoopName, body: () => Promise<void>, stopped: () => boolean, signal?: AbortSignal): Promise<void> {
    this.watch(name)
    for (;;) {
      try {
        await body()
        return
      } catch (err) {
        if (stopped()) return
        const pause = this.failed(name, err)
        await sleep(pause, undefined, { ref: false, signal }).catch(() => undefined)
        if (stopped()) return
      }
    }
  }

  /** A loop (or one pass of it) threw: record it, log it once per run of failures, and return the pause before trying again. */
  failed(name: LoopName, err: unknown): number {
    const state = this.#state(name)
    state.failures++
    state.restarts++
    state.error = errorFields(err).message
    const { restarts, backoffMs, maxBackoffMs } = this.#settings
    if (state.failures === 1) {
      state.since = Date.now()
      this.#logger.error({ loop: name, error: errorFields(err) }, `the ${name} loop failed; restarting it`)
    } else if (state.failures === restarts) {
      this.#logger.error({ loop: name, failures: state.failures, error: errorFields(err) }, `the ${name} loop failed ${state.failures} times in a row: the engine reports itself unhealthy until it runs again`)
    }
    return Math.min(maxBackoffMs, backoffMs * 2 ** (state.failures - 1))
  }

  /** A loop completed a pass: it is running again, if it had failed. */
  ok(name: LoopName): void {
    const state = this.#loops.get(name)
    if (!state?.failures) return
    this.#logger.warn({ loop: name, failures: state.failures, failing_ms: Date.now() - (state.since ?? Date.now()) }, `the ${name} loop is running again`)
    state.failures = 0
    state.since = undefined
    state.error = undefined
  }

  /** Loops that failed `restarts` times in a row and have not run since. */
  failedLoops(): LoopName[] {
    return [...this.#loops].filter(([, s]) => s.failures >= this.#settings.restarts).map(([name]) => name)
  }

  /** Every loop that has been supervised, with its state. */
  report(): LoopHealth[] {
    return [...this.#loops].map(([name, s]) => ({
      name,
      status: s.failures === 0 ? 'running' : s.failures >= this.#settings.restarts ? 'failed' : 'restarting',
      restarts: s.restarts,
      ...(s.failures > 0 ? { error: s.error, since: new Date(s.since ?? Date.now()).toISOString() } : {}),
    }))
  }

  /** Register a loop, so health lists it while it runs without trouble. */
  watch(name: LoopName): void {
    this.#state(name)
  }

  #state(name: LoopName): LoopState {
    let state = this.#loops.get(name)
    if (!state) this.#loops.set(name, (state = { restarts: 0, failures: 0 }))
    return state
  }
}

/**
 * Test-only: the next `count` passes of a loop throw (`injectFault('claim', 3)`; 0 clears). Process-wide, and empty
 * unless a test sets it; each loop calls `faultPoint` once a pass, where an unexpected error would surface.
 */
const injected = new Map<LoopName, number>()

export function injectFault(name: LoopName, count = 1): void {
  if (count > 0) injected.set(name, count)
  else injected.delete(name)
}

export function faultPoint(name: LoopName): void {
  if (injected.size === 0) return
  const left = injected.get(name)
  if (!left) return
  if (left === 1) injected.delete(name)
  else injected.set(name, left - 1)
  throw new Error(`injected fault in the ${name} loop`)
}
