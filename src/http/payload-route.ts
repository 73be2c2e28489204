import * as v from 'valibot'
import { JsonText } from './responses.js'
import type { RouteSpec } from './route-spec.js'
import { NoQuerySchema } from './schemas.js'

/** A thin delivery's payload link (docs/delivery.md › Thin payloads): public, the signed token is its only credential. */
export const payloadRoute: RouteSpec = {
  method: 'GET', path: '/payloads/{token}', operationId: 'getPayload', summary: 'The data of a thin delivery (its signed, expiring payload_url)', tag: 'Events', access: 'public',
  params: { token: v.string() }, query: NoQuerySchema,
  responses: [{ status: 200, description: 'The event\'s data as canonical JSON (object keys sorted): the bytes whose size and sha256 the thin envelope carries', schema: v.unknown() }],
  errors: [{ status: 404, description: 'The same answer for an expired, changed or unknown link and for an event, destination or data that is gone' }],
  handle: async ({ outflow, params }) => new JsonText(await outflow.readPayload(params.token!)),
}
