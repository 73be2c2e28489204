import type { Hono } from 'hono'
import type { Outflow } from '../src/engine.js'
import { type HttpHandlerOptions, createHttpHandler } from '../src/http/handler.js'
import { isForbiddenMethod } from '../src/http/methods.js'
import { errorResponse } from '../src/http/responses.js'

export type { HttpHandlerOptions }

/**
 * The Outflow API as a fetch handler for a plain mount. Mount it with `replaceRequest: false`: Hono's
 * request rewriting copies the request, which the Request constructor refuses for TRACE (a plain-text
 * 500 from the host app), while the handler strips `basePath` (default `/api/v1`) itself. The handler
 * is created here, so a missing `apiKey` fails the host at startup.
 *
 * The same handler serves the built-in tenant portal under `portal.path` (default `/portal`): mount it
 * there too, also with `replaceRequest: false`, so it sees the full path.
 *
 * @example
 * app.mount('/api/v1', outflowFetch(outflow), { replaceRequest: false })
 * app.mount('/portal', outflowFetch(outflow), { replaceRequest: false })
 * app.mount('/outflow', outflowFetch(outflow, { basePath: '/outflow' }), { replaceRequest: false })
 */
export function outflowFetch(outflow: Outflow, options?: HttpHandlerOptions): (request: Request) => Promise<Response> {
  const handle = createHttpHandler(outflow, options)
  return (request) => handle(request)
}

/**
 * Register the Outflow API on a Hono app (pass a fresh `new Hono()`) to use as a sub-app with
 * `app.route(path, …)`. Hono is not imported at runtime: the host's own Hono builds the app.
 *
 * @example
 * app.route('/api/v1', outflowApp(outflow, new Hono()))
 */
export function outflowApp<App extends Hono<any, any, any>>(outflow: Outflow, app: App, options?: HttpHandlerOptions): App {
  const handle = createHttpHandler(outflow, options)
  // Hono's mount strips whatever path the host later routes this app under.
  app.mount('/', handle)
  // Mounting copies the request, which the Request constructor refuses for TRACE: the handler
  // answers the original (stripping `basePath` itself). Hono's own HTTP errors stay as they are;
  // a fault is the API's JSON 500, reported to its logger.
  app.onError((error, c) => {
    if (isForbiddenMethod(c.req.method)) return handle(c.req.raw)
    if ('getResponse' in error) return error.getResponse()
    return errorResponse(error, options?.logger ?? outflow.options.logger, { method: c.req.method, path: c.req.path })
  })
  return app
}
