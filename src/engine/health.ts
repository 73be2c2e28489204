import type { Supervisor } from '../delivery/supervisor.js'
import { errorFields } from '../logger.js'
import type { HealthReport } from '../model/health.js'
import type { EngineContext } from './context.js'

/** How long the storage check may take before storage counts as unreachable (a load balancer waits about as long). */
const storageDeadlineMs = 2_000

function withDeadline<T>(work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${storageDeadlineMs} ms`)), storageDeadlineMs)
  })
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer))
}

/**
 * Check storage (the queue figures, or a bare round trip when `queue` is false) and report the worker and
 * the supervised loops. Never throws: an unreachable storage is a report with `status: 'unavailable'`, a
 * failed loop one with `status: 'unhealthy'`.
 */
export async function checkHealth(
  ctx: EngineContext,
  worker: { enabled: boolean; running: boolean },
  supervisor: Supervisor,
  { queue = true }: { queue?: boolean } = {},
): Promise<HealthReport> {
  const storage: HealthReport['storage'] = { dialect: ctx.storage.dialect, reachable: true }
  let figures: HealthReport['queue'] = null
  try {
    if (queue) {
      const now = ctx.now()
      const { due, oldest_due_at } = await withDeadline(ctx.storage.queueStats(now))
      figures = { depth: due, oldest_due_age_seconds: oldest_due_at ? Math.max(0, now.getTime() - oldest_due_at.getTime()) / 1000 : null }
    } else {
      await withDeadline(ctx.storage.ping())
    }
  } catch (err) {
    storage.reachable = false
    storage.error = errorFields(err).message
    ctx.options.logger.error({ error: errorFields(err) }, 'health check: storage unreachable')
  }
  const status = !storage.reachable ? 'unavailable' : supervisor.failedLoops().length > 0 ? 'unhealthy' : 'ok'
  return { status, storage, queue: figures, worker, loops: supervisor.report() }
}
