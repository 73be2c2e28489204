import type { Destination } from '../../../src/model/destination.js'

/** What the test published, for a peer to find its copy of the event and check it against. */
export interface Sent {
  /** The id `publish` returned. */
  id: string
  tenant_id: string
  topic: string
  /** The event time as published (RFC 3339, UTC). */
  time: string
  /** The destination as `createDestination` returned it. */
  destination: Destination
}

/** One copy of an event as read back from a peer: the body, and the metadata from wherever the type puts it. */
export interface Received {
  data: unknown
  metadata: Record<string, unknown>
}

/**
 * A server a destination type delivers to over the network, started by the test and read back by it.
 * `read` also checks what only that type carries (a signature, message properties, a content type).
 */
export interface Peer {
  /** The `config` and `credentials` that point a destination of this type at the peer. */
  readonly target: { config?: Record<string, unknown>; credentials?: Record<string, unknown> }
  /** Every copy of `sent` the peer holds, read back from it; empty while it has none. */
  read(sent: Sent): Promise<Received[]>
  close(): Promise<void>
}
