import type { Destination } from '../model/destination.js'
import type { DeliveryAttempt } from '../model/event.js'
import type { AttemptRecord, DestinationRecord } from '../storage/storage.js'

/** Typed events the engine emits for its host. */
export interface OutflowEvents {
  'delivery.succeeded': [DeliveryOutcome]
  'delivery.failed': [DeliveryOutcome]
  'destination.disabled': [DestinationDisabled]
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

/** Sent to the host callback and the optional alert URL when failures pile up. */
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
  /** A failure streak crossed an alert level. */
  alert(alert: AlertPayload): void
  /** A destination was disabled by delivery (410 Gone, or the failure threshold). */
  destinationDisabled(event: DestinationDisabled): void
  /** The API shape of a destination, for alert payloads; null when its credentials cannot be read. */
  publicDestination(record: DestinationRecord): Destination | null
}
