import type { EventWriter } from '../delivery/event-writer.js'
import { operatorSinkId } from '../delivery/operator-events.js'
import { OutflowError } from '../errors.js'
import { newId } from '../ids.js'
import { errorFields } from '../logger.js'
import type { JsonObject } from '../model/common.js'
import type { OperatorEvent, OperatorTopic } from '../model/operator-event.js'
import type { EngineContext } from './context.js'
import * as destinations from './destinations.js'
import * as tenants from './tenants.js'

/**
 * Make the operator tenant and its sink destination match `operatorEvents` (at start, on every
 * instance: creating twice at once is a conflict that turns into an update). The sink subscribes to
 * every topic; which operator topics reach it is decided when they are emitted.
 */
export async function ensureOperatorSink(ctx: EngineContext): Promise<void> {
  const settings = ctx.options.operatorEvents
  if (!settings) return
  const { tenantId, destination } = settings
  try {
    await tenants.upsertTenant(ctx, tenantId, undefined)
    const existing = await ctx.storage.getDestination(tenantId, operatorSinkId)
    if (existing && existing.type !== destination.type) await destinations.deleteDestination(ctx, tenantId, operatorSinkId)
    if (!existing || existing.type !== destination.type) {
      try {
        await destinations.createDestination(ctx, tenantId, { id: operatorSinkId, topics: ['*'], ...destination })
        return
      } catch (err) {
        // Another instance created it meanwhile: bring it up to date below.
        if (!(err instanceof OutflowError && err.code === 'conflict')) throw err
      }
    }
    const stored = (await ctx.storage.getDestination(tenantId, operatorSinkId))!
    await destinations.updateDestination(ctx, tenantId, operatorSinkId, {
      topics: ['*'],
      config: replacement(stored.config, destination.config ?? {}),
      // Absent credentials keep what is stored (e.g. the webhook secret generated at creation).
      ...(destination.credentials ? { credentials: destination.credentials } : {}),
    })
    if (stored.disabled_at) ctx.options.logger.warn({ tenant_id: tenantId, destination_id: operatorSinkId }, 'the operator sink is disabled: operator events wait until it is enabled')
  } catch (err) {
    if (err instanceof OutflowError && err.code === 'validation' && err.data) {
      const data = Object.fromEntries(Object.entries(err.data).map(([path, why]) => [`operatorEvents.destination.${path}`, why]))
      throw new OutflowError('validation', `invalid Outflow options: ${Object.entries(data).map(([k, m]) => `${k}: ${m}`).join('; ')}`, { data })
    }
    throw err
  }
}

/** A merge patch that turns `stored` into `wanted`: keys no longer wanted are removed. */
function replacement(stored: JsonObject, wanted: JsonObject): JsonObject {
  return { ...Object.fromEntries(Object.keys(stored).map((key) => [key, null])), ...wanted }
}

/**
 * Publishes operator events to the sink through the normal pipeline: an event of the operator
 * tenant addressed to the sink, so it gets the same retries, signatures and log as any delivery.
 * Its body is the operator event itself.
 */
export class OperatorSink {
  readonly #ctx: EngineContext
  readonly #writer: EventWriter
  readonly #topics: Set<string>

  constructor(ctx: EngineContext, writer: EventWriter) {
    this.#ctx = ctx
    this.#writer = writer
    const topics = ctx.options.operatorEvents?.topics ?? []
    this.#topics = new Set(topics)
  }

  /** Whether events of this topic go to the sink. */
  accepts(topic: OperatorTopic): boolean {
    return this.#topics.has(topic) || this.#topics.has('*')
  }

  /** Record the event for the sink; a failure is logged (the alert is lost, the engine goes on). */
  publish(event: OperatorEvent): void {
    const settings = this.#ctx.options.operatorEvents
    if (!settings) return
    const now = this.#ctx.now()
    const record = { tenant_id: settings.tenantId, id: event.id, topic: event.topic, time: now, data: event, metadata: {}, eligible_for_retry: true, created_at: now }
    this.#writer.write([{ event: record, destinationId: operatorSinkId }]).catch((err: unknown) => {
      this.#ctx.options.logger.error({ topic: event.topic, operator_event_id: event.id, error: errorFields(err) }, 'recording an operator event failed')
    })
  }

  /** A new operator event envelope. */
  static envelope(topic: OperatorTopic, data: OperatorEvent['data'], now: Date): OperatorEvent {
    return { id: newId('opv'), topic, time: now.toISOString(), tenant_id: data.tenant_id, data } as OperatorEvent
  }
}
