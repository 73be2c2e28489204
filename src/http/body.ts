import { OutflowError } from '../errors.js'

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
 * The JSON body of a request, or `undefined` when it has none: 413 over `limit` bytes, 415 for a
 * non-JSON content type, 400 for bytes that are not UTF-8 JSON.
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
  try {
    return JSON.parse(text) as unknown
  } catch (error) {
    throw new OutflowError('bad_request', 'malformed JSON', { data: { body: (error as Error).message } })
  }
}
