import type { Destination } from '../model/destination.js'
import type { DeliveryAttempt } from '../model/event.js'
import type { OperatorEventOf, OperatorTopic } from '../model/operator-event.js'
import type { AttemptRecord, DestinationRecord } from '../storage/storage.js'

/**
 * Typed events the engine emits for its host: the operator events (each under its topic, the same
 * envelope the operator sink receives), and the outcome of every attempt.
 */
export interface OutflowEvents {
  /** A destination's failure streak reached 50, 70, 90 or 100 % of `alerts.consecutiveFailures`. */
  'alert.destination.consecutive_failure': [OperatorEventOf<'alert.destination.consecutive_failure'>]
  /** A destination was disabled: its failure streak reached the threshold, or its receiver answered 410 Gone. */
  'alert.destination.disabled': [OperatorEventOf<'alert.destination.disabled'>]
  /** An automatic attempt failed with no retry left. */
  'alert.attempt.exhausted_retries': [OperatorEventOf<'alert.attempt.exhausted_retries'>]
  /** An attempt succeeded (one event per attempt). */
  'attempt.success': [OperatorEventOf<'attempt.success'>]
  /** An attempt failed (one event per attempt). */
  'attempt.failed': [OperatorEventOf<'attempt.failed'>]
  /** A delivery attempt succeeded, with the attempt as the delivery log records it. */
  'delivery.succeeded': [DeliveryOutcome]
  /** A delivery attempt failed, with the attempt as the delivery log records it. */
  'delivery.failed': [DeliveryOutcome]
  /** Delivery disabled a destination (410 Gone, or the failure threshold). */
  'destination.disabled': [DestinationDisabled]
  /** @deprecated Use `alert.destination.consecutive_failure`. */
  alert: [AlertPayload]
}

/** The payload of `delivery.succeeded` and `delivery.failed`: which delivery, and its attempt. */
export interface DeliveryOutcome {
  /** The tenant of the delivery. */
  tenant_id: string
  /** The event delivered. */
  event_id: string
  /** The destination it went to. */
  destination_id: string
  /** The attempt, as `listDeliveries` returns it. */
  attempt: DeliveryAttempt
}

/** The payload of `destination.disabled`: which destination delivery disabled, and why. */
export interface DestinationDisabled {
  /** The tenant of the destination. */
  tenant_id: string
  /** The destination disabled. */
  destination_id: string
  /** The failure streak reached `alerts.consecutiveFailures`, or the receiver answered 410 Gone. */
  reason: 'consecutive_failures' | 'gone'
}

/** @deprecated The payload of the `alert` event; `alert.destination.consecutive_failure` replaces it. */
export interface AlertPayload {
  /** Always `alert.consecutive_failure`. */
  topic: 'alert.consecutive_failure'
  /** When the alert was raised (RFC 3339). */
  timestamp: string
  /** The destination and its failure streak. */
  data: {
    /** The tenant of the destination. */
    tenant_id: string
    /** The destination failing. */
    destination_id: string
    /** Failed attempts in a row so far. */
    consecutive_failures: number
    /** The streak that disables the destination (`alerts.consecutiveFailures`). */
    max_consecutive_failures: number
    /** 50, 70, 90 or 100 (percent of the threshold). */
    level: number
    /** Whether this alert disables the destination. */
    will_disable: boolean
    /** The destination as the API shows it, or null when its credentials cannot be read. */
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
