import type { EventEmitter } from 'node:events'
import { CredentialsError } from '../credentials.js'
import type { DeliveryReporter, OutflowEvents } from '../delivery/events.js'
import type { OperatorEvent } from '../model/operator-event.js'
import type { EngineContext } from './context.js'
import * as destinations from './destinations.js'
import * as events from './events.js'
import { OperatorSink } from './operator-sink.js'

/**
 * What delivery reports (storage records), turned into API shapes and the engine's host events; operator
 * events also go to the operator sink (`sink()`: the engine's, made after the worker that reports here).
 *
 * @example
 * const reporter = deliveryReporter(outflow, ctx, () => operatorSink)
 */
export function deliveryReporter(emitter: EventEmitter<OutflowEvents>, ctx: EngineContext, sink: () => OperatorSink): DeliveryReporter {
  return {
    attempted: (attempt) => {
      const name = attempt.status === 'success' ? 'delivery.succeeded' : 'delivery.failed'
      if (emitter.listenerCount(name) > 0)
        emitter.emit(name, { tenant_id: attempt.tenant_id, event_id: attempt.event_id, destination_id: attempt.destination_id, attempt: events.toDeliveryAttempt(attempt) })
    },
    alert: (alert) => emitter.emit('alert', alert),
    wants: (topic) => emitter.listenerCount(topic) > 0 || sink().accepts(topic),
    operatorEvent: (topic, data) => {
      const event = OperatorSink.envelope(topic, data, ctx.now())
      // Each topic's listeners get that topic's envelope (OutflowEvents); the compiler cannot follow the pairing.
      if (emitter.listenerCount(topic) > 0) (emitter.emit as (name: string, event: OperatorEvent) => boolean)(topic, event)
      if (sink().accepts(topic)) sink().publish(event)
    },
    destinationDisabled: (event) => emitter.emit('destination.disabled', event),
    publicDestination: (record) => {
      // An alert about a destination whose credentials cannot be read still goes out, without the destination.
      try {
        return destinations.toDestination(ctx, record)
      } catch (err) {
        if (err instanceof CredentialsError) return null
        throw err
      }
    },
  }
}
