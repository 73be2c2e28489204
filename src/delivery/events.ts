import type { Destination } from '../model/destination.js'
import type { DeliveryAttempt } from '../model/event.js'
import type { OperatorEventOf, OperatorTopic } from '../model/operator-event.js'
import type { AttemptRecord, DestinationRecord } from '../storage/storage.js'

/**
 * Typed events the engine emits for its host: the operator events (each under its topic, the same
 * envelope the operator sink receives), and the outcome of every attempt.
 */
export interface OutflowEvents {
  'alert.destination.consecutive_failure': [OperatorEventOf<'alert.destination.consecutive_failure'>]
  'alert.destination.disabled': [OperatorEventOf<'alert.destination.disabled'>]
  'alert.attempt.exhausted_retries': [OperatorEventOf<'alert.attempt.exhausted_retries'>]
  'attempt.success': [OperatorEventOf<'attempt.success'>]
  'attempt.failed': [OperatorEventOf<'attempt.failed'>]
  'delivery.succeeded': [DeliveryOutcome]
  'delivery.failed': [DeliveryOutcome]
  'destination.disabled': [DestinationDisabled]
  /** @deprecated Use `alert.destination.consecutive_failure`. */
  alert: [AlertPayload]
}

export interface DeliveryOutcome {
  tenant_id: string
  event_id: string
  destination_id: string
  attempt: DeliveryAttempt
}

export interface DestinationDisabled {
  tenant_id: string
  destination_id: string
  reason: 'consecutive_failures' | 'gone'
}

/** @deprecated The payload of the `alert` event; `alert.destination.consecutive_failure` replaces it. */
export interface AlertPayload {
  topic: 'alert.consecutive_failure'
  timestamp: string
  data: {
    tenant_id: string
    destination_id: string
    consecutive_failures: number
    max_consecutive_failures: number
    /** 50, 70, 90 or 100 (percent of the threshold). */
    level: number
    will_disable: boolean
    destination: Destination | null
  }
}

/**
 * What delivery tells the engine. Delivery speaks in storage records; the engine turns them into
 * API shapes and emits `OutflowEvents` (so delivery never imports the engine).
 */
export interface DeliveryReporter {
  /** An attempt's outcome, before it is written. */
  attempted(attempt: AttemptRecord): void
  /** A failure streak crossed an alert level (the deprecated `alert` event). */
  alert(alert: AlertPayload): void
  /** Whether an operator topic has a listener or goes to the sink: events nobody wants are not built. */
  wants(topic: OperatorTopic): boolean
  /** An operator event: emitted in-process and published to the operator sink when its topic is configured. */
  operatorEvent<T extends OperatorTopic>(topic: T, data: OperatorEventOf<T>['data']): void
  /** A destination was disabled by delivery (410 Gone, or the failure threshold). */
  destinationDisabled(event: DestinationDisabled): void
  /** The API shape of a destination, for alert payloads; null when its credentials cannot be read. */
  publicDestination(record: DestinationRecord): Destination | null
}
