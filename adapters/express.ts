import type { ErrorRequestHandler, Request, RequestHandler } from 'express'
import type { Outflow } from '../src/engine.js'
import { type HttpHandlerOptions, createHttpHandler } from '../src/http/handler.js'
import { type ParsedBody, hostBodyError, sendWebResponse, toWebRequest } from '../src/http/node.js'
import { errorResponse } from '../src/http/responses.js'

export type { HttpHandlerOptions }

/** A body the host already read (body-parser 2 leaves the stream ended, body-parser 1 also sets `_body`). */
function parsedBody(req: Request): ParsedBody | undefined {
  const consumed = req.readableEnded || (req as Request & { _body?: boolean })._body === true
  return consumed ? { value: req.body } : undefined
}

/**
 * The Outflow API for Express 4/5, mounted with `app.use(path, …)`. Works with or without a host
 * `express.json()` before it: a parsed body is re-encoded (the API's size limit still applies), and
 * the host parser's failures on API paths are answered in the API's JSON error format.
 * The handler is created here, so a missing `apiKey` fails the host at startup.
 *
 * @example
 * app.use('/api/v1', outflowRouter(outflow))
 */
export function outflowRouter(outflow: Outflow, options?: HttpHandlerOptions): [RequestHandler, ErrorRequestHandler] {
  const handle = createHttpHandler(outflow, options)
  const serve: RequestHandler = (req, res, next) => {
    handle(toWebRequest(req, req.url, parsedBody(req)))
      .then((response) => sendWebResponse(res, response))
      .catch(next)
  }
  const answerHostBodyError: ErrorRequestHandler = (error, _req, res, next) => {
    const apiError = hostBodyError(error)
    if (!apiError) return next(error)
    sendWebResponse(res, errorResponse(apiError)).catch(next)
  }
  return [serve, answerHostBodyError]
}
