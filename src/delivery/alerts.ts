import { errorFields } from '../logger.js'
import { sendHttp } from '../net/http-client.js'
import type { AttemptWrite, DestinationStreak } from '../storage/storage.js'
import type { DeliveryContext } from './context.js'
import type { AlertPayload } from './events.js'

/** Alert levels, in percent of `alerts.consecutiveFailures`; at 100 the destination is disabled. */
export const alertLevels = [50, 70, 90, 100] as const

/** Levels whose threshold the streak crossed in this batch (from `before` to `after` failures). */
export function crossedLevels(threshold: number, before: number, after: number): number[] {
  return alertLevels.filter((level) => {
    const at = Math.ceil((threshold * level) / 100)
    return before < at && after >= at
  })
}

/**
 * After a batch of attempts is recorded: raise alerts for failure streaks that crossed a level
 * (host event + optional callback URL) and auto-disable destinations that reached the threshold.
 * Returns the destinations it disabled.
 */
export async function handleStreaks(ctx: DeliveryContext, writes: AttemptWrite[], streaks: DestinationStreak[]): Promise<DestinationStreak[]> {
  const disabled: DestinationStreak[] = []
  const threshold = ctx.options.alerts.consecutiveFailures
  for (const streak of streaks) {
    if (streak.consecutive_failures === 0) continue
    // Failures this batch added to the streak: those after its last success, or all of them.
    let added = 0
    for (const { attempt } of writes) {
      if (attempt.tenant_id !== streak.tenant_id || attempt.destination_id !== streak.destination_id) continue
      added = attempt.status === 'success' ? 0 : added + 1
    }
    const levels = crossedLevels(threshold, streak.consecutive_failures - added, streak.consecutive_failures)
    for (const level of levels) {
      const disable = level === 100
      const record = disable
        ? await ctx.storage.setDestinationDisabled(streak.tenant_id, streak.destination_id, ctx.now(), ctx.now())
        : await ctx.storage.getDestination(streak.tenant_id, streak.destination_id)
      const alert: AlertPayload = {
        topic: 'alert.consecutive_failure',
        timestamp: ctx.now().toISOString(),
        data: {
          tenant_id: streak.tenant_id,
          destination_id: streak.destination_id,
          consecutive_failures: streak.consecutive_failures,
          max_consecutive_failures: threshold,
          level,
          will_disable: disable,
          destination: record ? ctx.reporter.publicDestination(record) : null,
        },
      }
      ctx.reporter.alert(alert)
      await postAlert(ctx, alert)
      if (disable) {
        disabled.push(streak)
        ctx.options.logger.warn({ tenant_id: streak.tenant_id, destination_id: streak.destination_id, consecutive_failures: streak.consecutive_failures }, 'destination disabled after consecutive failures')
        ctx.reporter.destinationDisabled({ tenant_id: streak.tenant_id, destination_id: streak.destination_id, reason: 'consecutive_failures' })
      }
    }
  }
  return disabled
}

/** POST the alert to `alerts.callbackUrl` with the admin key as bearer. The operator chose the URL, so private networks are allowed. */
async function postAlert(ctx: DeliveryContext, alert: AlertPayload): Promise<void> {
  const url = ctx.options.alerts.callbackUrl
  if (!url) return
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  if (ctx.options.apiKey) headers.authorization = `Bearer ${ctx.options.apiKey}`
  try {
    const res = await sendHttp(url, { method: 'POST', headers, body: JSON.stringify(alert) }, { allowPrivateNetworks: true, timeoutMs: ctx.options.delivery.timeoutMs })
    if (res.status < 200 || res.status >= 300) ctx.options.logger.warn({ status_code: res.status }, 'alert callback answered with an error')
  } catch (err) {
    ctx.options.logger.warn({ error: errorFields(err) }, 'alert callback failed')
  }
}
