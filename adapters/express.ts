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

/**
 * The built-in tenant portal for Express: serves `portal.path` (default `/portal`) and passes every
 * other request on. Mount it at the app's root; its page calls the API under `basePath` (default
 * `/api/v1`), so mount `outflowRouter` there.
 *
 * @example
 * app.use('/api/v1', outflowRouter(outflow))
 * app.use(outflowPortal(outflow))
 */
export function outflowPortal(outflow: Outflow, options?: HttpHandlerOptions): RequestHandler {
  const handle = createHttpHandler(outflow, options)
  const { path } = outflow.options.portal
  return (req, res, next) => {
    // originalUrl: the full path also when the host mounted this under a prefix.
    const url = req.originalUrl || req.url
    const pathname = url.split('?', 1)[0]!
    if (pathname !== path && !pathname.startsWith(`${path}/`)) return next()
    handle(toWebRequest(req, url))
      .then((response) => sendWebResponse(res, response))
      .catch(next)
  }
}
