import { canonicalJson } from '../delivery/thin-payload.js'
import { OutflowError } from '../errors.js'
import { verifyPayloadLink } from '../tokens.js'
import type { EngineContext } from './context.js'

/** One answer for every link that does not lead to data, so a caller learns nothing of why. */
function payloadNotFound(): OutflowError {
  return new OutflowError('not_found', 'payload not found')
}

/**
 * The data a thin delivery's payload link points to, as the canonical JSON its `sha256` was computed over; a 404
 * `payload not found` alike for a token that is malformed, signed by another key, changed or expired, and for an
 * event, destination or delivery that is gone or whose data was erased.
 */
export async function readPayload(ctx: EngineContext, token: string): Promise<string> {
  const claims = verifyPayloadLink(ctx.payloadLinkKey, token, ctx.now())
  if (!claims) throw payloadNotFound()
  const [destination, event] = await Promise.all([
    ctx.storage.getDestination(claims.tenantId, claims.destinationId),
    ctx.storage.getDeliveredData(claims.tenantId, claims.eventId, claims.destinationId),
  ])
  if (!destination || event?.data === null || event?.data === undefined) throw payloadNotFound()
  return canonicalJson(event.data)
}
