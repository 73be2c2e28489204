import type { IncomingMessage, ServerResponse } from 'node:http'
import { OutflowError } from '../errors.js'
import { checkBodyNesting } from './body.js'
import { forbiddenMethodRequest, isForbiddenMethod } from './methods.js'

/** A body the host framework already read and parsed (e.g. Express after `express.json()`). */
export interface ParsedBody {
  value: unknown
}

/**
 * The request stream as a web stream with back-pressure. The handler drains what it does not read;
 * it only cancels past its drain budget, and then the connection is dropped.
 */
function streamBody(req: IncomingMessage): ReadableStream<Uint8Array> {
  let settled = false
  const settle = (finish: () => void) => {
    if (settled) return
    settled = true
    finish()
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        req.on('data', (chunk: Buffer) => {
          if (settled) return
          controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength))
          if ((controller.desiredSize ?? 0) <= 0) req.pause()
        })
        req.once('end', () => settle(() => controller.close()))
        req.once('error', (error) => settle(() => controller.error(error)))
        req.pause()
      },
      pull() {
        req.resume()
      },
      cancel() {
        settled = true
        req.destroy()
      },
    },
    { highWaterMark: 0 },
  )
}

/**
 * A body parsed by the host, back as bytes: text and raw bodies as they were, JSON re-encoded. A value
 * nested too deep to re-encode becomes a body whose read fails with the API's 422, so the handler
 * answers it in its usual order (authentication first), as if it had parsed the body itself.
 */
function parsedBodyBytes(value: unknown): string | Buffer | ReadableStream<Uint8Array> {
  if (typeof value === 'string') return value
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  try {
    checkBodyNesting(value)
  } catch (error) {
    return new ReadableStream({ start: (controller) => controller.error(error) })
  }
  return JSON.stringify(value)
}

/**
 * A web Request for a Node request, its URL path replaced by `path` (the mount prefix removed).
 *
 * @example
 * const request = toWebRequest(req, req.url ?? '/')
 */
export function toWebRequest(req: IncomingMessage, path: string, parsed?: ParsedBody): Request {
  const headers = new Headers()
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!
    if (!name.startsWith(':')) headers.append(name, req.rawHeaders[i + 1]!)
  }
  const url = `http://localhost${path.startsWith('/') ? path : `/${path}`}`
  const method = req.method ?? 'GET'
  if (isForbiddenMethod(method)) return forbiddenMethodRequest(url, method, headers)
  if (method === 'GET' || method === 'HEAD') return new Request(url, { method, headers })
  const body = parsed ? parsedBodyBytes(parsed.value) : streamBody(req)
  return new Request(url, { method, headers, body, duplex: 'half' } as RequestInit)
}

/**
 * Write a web Response to a Node response.
 *
 * @example
 * await sendWebResponse(res, await handle(request))
 */
export async function sendWebResponse(res: ServerResponse, response: Response): Promise<void> {
  const body = Buffer.from(await response.arrayBuffer())
  res.statusCode = response.status
  response.headers.forEach((value, name) => res.setHeader(name, value))
  res.end(body)
}

type HostParserError = [code: 'bad_request' | 'payload_too_large' | 'unsupported_media_type', message: string]

/** body-parser errors by `type`, Fastify content-type parser errors by `code`. */
const hostParserErrors: Record<string, HostParserError> = {
  'entity.parse.failed': ['bad_request', 'malformed JSON'],
  'entity.too.large': ['payload_too_large', 'request body too large'],
  'encoding.unsupported': ['unsupported_media_type', 'unsupported request body encoding'],
  'charset.unsupported': ['unsupported_media_type', 'unsupported request body charset'],
  FST_ERR_CTP_INVALID_MEDIA_TYPE: ['unsupported_media_type', 'request body must be application/json'],
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: ['bad_request', 'Content-Length does not match the request body'],
  FST_ERR_CTP_BODY_TOO_LARGE: ['payload_too_large', 'request body too large'],
  FST_ERR_CTP_EMPTY_JSON_BODY: ['bad_request', 'malformed JSON'],
  FST_ERR_CTP_INVALID_JSON_BODY: ['bad_request', 'malformed JSON'],
}

/**
 * The API's error for a host framework's body-parsing failure (Express `express.json()`, Fastify
 * content-type parsers), so such requests still get a JSON error body; `undefined` for anything else.
 *
 * @example
 * hostBodyError(Object.assign(new SyntaxError('Unexpected token'), { type: 'entity.parse.failed' })) // 400 malformed JSON
 */
export function hostBodyError(error: unknown): OutflowError | undefined {
  const { type, code } = (error ?? {}) as { type?: unknown; code?: unknown }
  const known = (typeof type === 'string' && hostParserErrors[type]) || (typeof code === 'string' && hostParserErrors[code]) || undefined
  if (known) return new OutflowError(known[0], known[1], { data: { body: (error as Error).message } })
  return hostClientError(error)
}

/**
 * Any other 4xx the host raised before the API saw the request, such as body-parser's 400 for a
 * `Content-Encoding: gzip` body that does not inflate (a zlib error with a status and no `type`):
 * still a JSON error with the API's status for it, never the host's HTML page.
 */
function hostClientError(error: unknown): OutflowError | undefined {
  const { status, statusCode, message } = (error ?? {}) as { status?: unknown; statusCode?: unknown; message?: unknown }
  const given = typeof status === 'number' ? status : statusCode
  if (typeof given !== 'number' || given < 400 || given > 499) return undefined
  const data = typeof message === 'string' ? { data: { request: message } } : {}
  if (given === 413) return new OutflowError('payload_too_large', 'request body too large', data)
  if (given === 415) return new OutflowError('unsupported_media_type', 'unsupported request body', data)
  return new OutflowError('bad_request', 'the request could not be read', data)
}
