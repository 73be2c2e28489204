import { errorData, OutflowError } from '../errors.js'
import { maxJsonDepth, nestsDeeperThan, tooDeepMessage } from '../model/common.js'

function tooLarge(limit: number): OutflowError {
  return new OutflowError('payload_too_large', `request body exceeds ${limit} bytes`)
}

/** How much of a rejected or unread body is read and dropped before giving up on the connection. */
const discardBudget = 16 * 1024 * 1024

/** Read and drop the rest of a stream (bounded), so the client's keep-alive connection stays usable. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let left = discardBudget
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      left -= value.byteLength
      if (left < 0) {
        await reader.cancel()
        return
      }
    }
  } catch {
    // The client went away; nothing left to drain.
  }
}

/**
 * Drop a body the handler did not read (a 401, a 413 by Content-Length, a route without a body),
 * in the background, so the connection can carry the next request.
 *
 * @example
 * discardUnreadBody(request)
 */
export function discardUnreadBody(request: Request): void {
  if (request.body && !request.bodyUsed) void drain(request.body.getReader())
}

/** `application/json` or a `+json` type, any parameters (charset) allowed. */
function isJson(contentType: string | null): boolean {
  const type = contentType?.split(';')[0]?.trim().toLowerCase() ?? ''
  return type === 'application/json' || /^application\/[\w.+-]+\+json$/.test(type)
}

/** Read at most `limit` bytes; one byte more is a 413, and the rest is left unread. */
async function readLimited(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
  if (!body) return new Uint8Array(0)
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > limit) {
      void drain(reader)
      throw tooLarge(limit)
    }
    chunks.push(value)
  }
  return Buffer.concat(chunks)
}

/**
 * Refuse (422, naming each field) a body whose fields nest objects and arrays deeper than
 * `maxJsonDepth` levels, before anything recursive sees it: V8's JSON.parse is iterative, but
 * JSON.stringify (storage, re-encoding) overflows the stack at a few thousand levels. The engine
 * checks its own input the same way, so typed callers get the same answer.
 *
 * @example
 * checkBodyNesting({ data: deeplyNested }) // throws 422 { data: { data: 'nested deeper than 32 levels' } }
 */
export function checkBodyNesting(body: unknown): void {
  if (typeof body !== 'object' || body === null) return
  const data = errorData()
  for (const [field, value] of Object.entries(body)) if (nestsDeeperThan(value, maxJsonDepth)) data[field] = tooDeepMessage
  if (Object.keys(data).length > 0) throw new OutflowError('validation', 'validation error', { data })
}

/**
 * The JSON body of a request, or `undefined` when it has none: 413 over `limit` bytes, 415 for a
 * non-JSON content type, 400 for bytes that are not UTF-8 JSON, 422 for fields nested too deep.
 *
 * @example
 * const body = await readJsonBody(request, 1024 * 1024)
 */
export async function readJsonBody(request: Request, limit: number): Promise<unknown> {
  const declared = Number(request.headers.get('content-length') ?? 0)
  if (declared > limit) throw tooLarge(limit)
  const bytes = await readLimited(request.body, limit)
  if (bytes.byteLength === 0) return undefined
  if (!isJson(request.headers.get('content-type')))
    throw new OutflowError('unsupported_media_type', 'request body must be application/json', {
      data: { 'content-type': `expected application/json, got ${request.headers.get('content-type') ?? 'none'}` },
    })
  let text: string
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    throw new OutflowError('bad_request', 'malformed JSON', { data: { body: 'not valid UTF-8' } })
  }
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch (error) {
    throw new OutflowError('bad_request', 'malformed JSON', { data: { body: (error as Error).message } })
  }
  checkBodyNesting(body)
  return body
}
