import { createHash } from 'node:crypto'
import { jsonBody, type DeliveryMessage } from '../destinations/types.js'
import type { PayloadPolicy } from '../model/payload-policy.js'
import { signPayloadLink } from '../tokens.js'

/** What minting payload links takes: the engine's public API URL, the links' lifetime and their key. */
export interface PayloadLinks {
  /** The engine's `publicUrl` (its HTTP API, `/api/v1` included), without a trailing slash. */
  baseUrl: string
  ttlMs: number
  /** `payloadLinkKey(jwtSecret)` (src/tokens.ts). */
  key: Uint8Array
}

/** The body of a thin delivery: what the event is, and where its data can be fetched until when. */
export interface ThinEnvelope {
  id: string
  topic: string
  time: string
  metadata: Record<string, string>
  /** Bytes of the data the link answers. */
  size: number
  /** Lowercase hex SHA-256 of those bytes. */
  sha256: string
  payload_url: string
  payload_expires_at: string
}

/** What a broker message holds beside the data and metadata (JSON framing, attribute types, a detail type, a source). */
const brokerFramingBytes = 1024

/**
 * Whether a destination gets this message thin: `thin` always, `full` never, `{ thin_above_bytes }` when the
 * data's JSON is larger; without a policy, when the data and metadata would pass the type's broker limit. Sizes
 * are measured only when a threshold applies.
 */
export function sendsThin(policy: PayloadPolicy | null | undefined, maxMessageBytes: number | undefined, message: DeliveryMessage): boolean {
  if (policy === 'thin') return true
  if (policy === 'full') return false
  if (policy) return Buffer.byteLength(jsonBody(message)) > policy.thin_above_bytes
  if (maxMessageBytes === undefined) return false
  return Buffer.byteLength(jsonBody(message)) + Buffer.byteLength(JSON.stringify(message.metadata)) + brokerFramingBytes > maxMessageBytes
}

/**
 * JSON with object keys in code-unit order at every level (RFC 8785's order; numbers and strings as JSON.stringify
 * writes them). What a payload link answers and what `sha256` hashes: the same bytes whichever storage held the
 * data (Postgres jsonb reorders keys) and whether it was read back or handed over by the publish.
 *
 * @example
 * canonicalJson({ b: 1, a: [true, null] }) // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null'
  const object = value as Record<string, unknown>
  const keys = Object.keys(object).filter((k) => object[k] !== undefined).sort()
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(object[k])}`).join(',')}}`
}

/**
 * The message with its data replaced by the thin envelope: the link is signed for this tenant, event and
 * destination and expires `ttlMs` from `now`. Signatures and broker bodies then cover the envelope.
 */
export function thinMessage(message: DeliveryMessage, links: PayloadLinks, now: Date): DeliveryMessage {
  const payload = Buffer.from(canonicalJson(message.data ?? null))
  const exp = Math.floor((now.getTime() + links.ttlMs) / 1000)
  const token = signPayloadLink(links.key, { tenantId: message.tenant_id, eventId: message.id, destinationId: message.destination_id, exp })
  const envelope: ThinEnvelope = {
    id: message.id,
    topic: message.topic,
    time: message.time.toISOString(),
    metadata: message.metadata,
    size: payload.length,
    sha256: createHash('sha256').update(payload).digest('hex'),
    payload_url: `${links.baseUrl}/payloads/${token}`,
    payload_expires_at: new Date(exp * 1000).toISOString(),
  }
  const { id, tenant_id, destination_id, topic, time, metadata, attempt, ordering_key, trace_headers } = message
  return {
    id, tenant_id, destination_id, topic, time, metadata, attempt,
    ...(ordering_key === undefined ? {} : { ordering_key }),
    ...(trace_headers === undefined ? {} : { trace_headers }),
    data: envelope,
    data_json: JSON.stringify(envelope),
  }
}
