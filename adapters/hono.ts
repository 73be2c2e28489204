import type { Hono } from 'hono'
import type { Outflow } from '../src/engine.js'
import { type HttpHandlerOptions, createHttpHandler } from '../src/http/handler.js'

export type { HttpHandlerOptions }

/**
 * The Outflow API as a fetch handler for a plain mount; Hono strips the mount path. The handler is
 * created here, so a missing `apiKey` fails the host at startup.
 *
 * @example
 * app.mount('/api/v1', outflowFetch(outflow))
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
  // Hono's mount strips whatever path the host later routes this app under.
  app.mount('/', outflowFetch(outflow, options))
  return app
}
