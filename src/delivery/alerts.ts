import type { DestinationStreak } from '../storage/storage.js'
import type { DeliveryContext } from './context.js'
import { attemptEventData, exhaustedRetries, type RecordedAttempt } from './operator-events.js'

/** Alert levels, in percent of `alerts.consecutiveFailures`; at 100 the destination is disabled (`alerts.autoDisable`). */
export const alertLevels = [50, 70, 90, 100] as const

/** Levels whose threshold the streak crossed in this batch (from `before` to `after` failures). */
export function crossedLevels(threshold: number, before: number, after: number): number[] {
  return alertLevels.filter((level) => {
    const at = Math.ceil((threshold * level) / 100)
    return before < at && after >= at
  })
}

/**
 * After a batch of attempts is recorded: the operator events of each attempt (`attempt.*`,
 * `alert.attempt.exhausted_retries`), then the failure streaks (see `handleStreaks`). The operator
 * tenant's own deliveries raise nothing, so a failing sink cannot feed itself. Returns the
 * destinations it disabled.
 */
export async function reportOutcomes(ctx: DeliveryContext, recorded: RecordedAttempt[], streaks: DestinationStreak[]): Promise<DestinationStreak[]> {
  const { reporter } = ctx
  const operatorTenant = ctx.options.operatorEvents?.tenantId
  const tracked = operatorTenant === undefined ? recorded : recorded.filter((r) => r.delivery.tenant_id !== operatorTenant)
  for (const r of tracked) {
    const topic = r.write.attempt.status === 'success' ? 'attempt.success' : 'attempt.failed'
    if (reporter.wants(topic)) reporter.operatorEvent(topic, attemptEventData(r, r.destination))
    if (exhaustedRetries(r) && reporter.wants('alert.attempt.exhausted_retries')) reporter.operatorEvent('alert.attempt.exhausted_retries', attemptEventData(r, r.destination))
  }
  return handleStreaks(ctx, tracked, operatorTenant === undefined ? streaks : streaks.filter((s) => s.tenant_id !== operatorTenant))
}

/**
 * Raise `alert.destination.consecutive_failure` for failure streaks that crossed a level, and at
 * 100 % disable the destination (`alert.destination.disabled`) unless `alerts.autoDisable` is off.
 */
async function handleStreaks(ctx: DeliveryContext, recorded: RecordedAttempt[], streaks: DestinationStreak[]): Promise<DestinationStreak[]> {
  const disabled: DestinationStreak[] = []
  const { consecutiveFailures: threshold, autoDisable } = ctx.options.alerts
  for (const streak of streaks) {
    if (streak.consecutive_failures === 0) continue
    // Failures this batch added to the streak (those after its last success), and the last of them.
    let added = 0
    let last: RecordedAttempt | undefined
    for (const r of recorded) {
      if (r.delivery.tenant_id !== streak.tenant_id || r.delivery.destination_id !== streak.destination_id) continue
      added = r.write.attempt.status === 'success' ? 0 : added + 1
      last = r
    }
    if (!last) continue
    for (const level of crossedLevels(threshold, streak.consecutive_failures - added, streak.consecutive_failures)) {
      const disable = level === 100 && autoDisable
      const now = ctx.now()
      const record = disable ? await ctx.storage.setDestinationDisabled(streak.tenant_id, streak.destination_id, now, now) : last.destination
      if (!record) continue // deleted meanwhile
      const data = attemptEventData(last, record)
      ctx.reporter.operatorEvent('alert.destination.consecutive_failure', {
        ...data,
        consecutive_failures: { current: streak.consecutive_failures, max: threshold, threshold: level },
      })
      ctx.reporter.alert({
        topic: 'alert.consecutive_failure',
        timestamp: now.toISOString(),
        data: {
          tenant_id: streak.tenant_id,
          destination_id: streak.destination_id,
          consecutive_failures: streak.consecutive_failures,
          max_consecutive_failures: threshold,
          level,
          will_disable: disable,
          destination: ctx.reporter.publicDestination(record),
        },
      })
      if (disable) {
        disabled.push(streak)
        ctx.options.logger.warn({ tenant_id: streak.tenant_id, destination_id: streak.destination_id, consecutive_failures: streak.consecutive_failures }, 'destination disabled after consecutive failures')
        ctx.reporter.operatorEvent('alert.destination.disabled', { ...data, disabled_at: (record.disabled_at ?? now).toISOString(), reason: 'consecutive_failure' })
        ctx.reporter.destinationDisabled({ tenant_id: streak.tenant_id, destination_id: streak.destination_id, reason: 'consecutive_failures' })
      }
    }
  }
  return disabled
}
