import type { Outflow } from '../engine.js'
import { OutflowError } from '../errors.js'
import { type AuthSettings, authenticate, assertAuthConfigured, authorize } from './auth.js'
import { discardUnreadBody, readJsonBody } from './body.js'
import { buildOpenApiDocument } from './openapi.js'
import { createPortalServer } from './portal.js'
import { queryRecord, validateParams, validateQuery } from './query.js'
import { type HttpLogger, JsonText, errorResponse, jsonResponse, jsonTextResponse, withHeaders } from './responses.js'
import { type Router, createRouter } from './router.js'
import { type Access, Reply, routes, signingKeysCacheControl } from './routes.js'

/** Where `outflow.fetch` also serves the signing key set, at the root of the host (beside `/api/v1`). */
export const wellKnownSigningKeysPath = '/.well-known/webhook-signing-keys.json'

/** How an HTTP mount of the API is set up: its path prefix and where its faults are logged. */
export interface HttpHandlerOptions {
  /** Prefix stripped from request paths when present (default `/api/v1`); paths without it are served too. */
  basePath?: string
  /** Receives real faults (500s); defaults to the engine's logger. */
  logger?: HttpLogger
}

function stripBasePath(pathname: string, basePath: string): string {
  if (pathname === basePath || pathname === `${basePath}/`) return '/'
  return pathname.startsWith(`${basePath}/`) ? pathname.slice(basePath.length) : pathname
}

/**
 * The whole `/api/v1` API as one `fetch(Request)` function. Throws at creation when the engine has
 * no `apiKey` and `auth: false` was not given, so a host fails at startup rather than run open.
 *
 * @example
 * const handle = createHttpHandler(outflow)
 * const response = await handle(new Request('http://localhost/api/v1/healthz'))
 */
export function createHttpHandler(outflow: Outflow, options: HttpHandlerOptions = {}): (request: Request) => Promise<Response> {
  const settings = { apiKey: outflow.options.apiKey, auth: outflow.options.auth, verifyTenantToken: (token: string) => outflow.verifyTenantToken(token) }
  assertAuthConfigured(settings)
  const basePath = (options.basePath ?? '/api/v1').replace(/\/$/, '')
  const logger = options.logger ?? outflow.options.logger
  const { portal: portalOptions } = outflow.options
  // The built-in portal beside the API (`/portal` beside `/api/v1`), unless the host turned it off.
  const portal = portalOptions.serve ? createPortalServer({ path: portalOptions.path, apiBase: basePath, frameAncestors: portalOptions.frameAncestors }) : undefined
  let document: unknown
  const openapi = async () => (document ??= buildOpenApiDocument(routes, { serverUrl: basePath || '/', topics: await outflow.listTopics() }))
  const api: Api = { outflow, settings, router: createRouter(routes), basePath, logger, openapi, portalPath: portal ? portalOptions.path : undefined }

  return async function handle(request: Request): Promise<Response> {
    const started = performance.now()
    const served: Served = {}
    const response = await serve(request, served)
    // The route's template, never the raw path: ids would make every tenant a new time series.
    outflow.telemetry.recordApiResponse(request.method, served.route ?? 'unmatched', response.status, performance.now() - started)
    return response
  }

  async function serve(request: Request, served: Served): Promise<Response> {
    const url = new URL(request.url)
    if (portal?.claims(url.pathname)) {
      served.route = `${portalOptions.path}/*`
      return portal.serve(request, url)
    }
    if (url.pathname === wellKnownSigningKeysPath && request.method === 'GET') {
      // The key set at a stable, well-known address of the host (outflow serve, or a handler mounted at the root).
      served.route = wellKnownSigningKeysPath
      return outflow.getSigningKeys().then(
        (set) => jsonResponse(200, set, { 'Cache-Control': signingKeysCacheControl }),
        (error: unknown) => errorResponse(error, logger, { method: request.method, path: url.pathname }),
      )
    }
    return serveApi(api, request, url, served)
  }
}

/** What the handler learns of a request as it serves it: the route template it matched. */
interface Served {
  route?: string
}

/** What serving an API request needs, set up once per handler. */
interface Api {
  outflow: Outflow
  settings: AuthSettings
  router: Router
  basePath: string
  logger: HttpLogger
  openapi: () => Promise<unknown>
  /** The built-in portal's path, when it is served. */
  portalPath?: string
}

/** One API request: matched to its route, authenticated, authorized and validated, then answered as JSON. */
async function serveApi(api: Api, request: Request, url: URL, served: Served): Promise<Response> {
  const { outflow, settings, openapi } = api
  const path = stripBasePath(url.pathname, api.basePath)
  let headers: Record<string, string> = {}
  try {
    if (request.method === 'OPTIONS') return optionsResponse(api.router.allowed(path), path)
    const { spec, params } = api.router.match(request.method, path)
    served.route = spec.path
    if (spec.deprecated) headers = { Deprecation: 'true' }
    const principal = spec.access === 'public' ? undefined : await authenticate(request.headers.get('authorization'), settings)
    if (principal) authorize(principal, spec.access, params)
    const check = async (access: Access) => authorize(principal ?? (await authenticate(request.headers.get('authorization'), settings)), access, params)
    validateParams(spec.params, params)
    const query = validateQuery(spec.query, queryRecord(url.searchParams), spec.queryStyle)
    const body = spec.body ? await readJsonBody(request, outflow.options.maxBodyBytes) : undefined
    const tenantScope = principal?.kind === 'tenant' ? principal.tenantId : undefined
    const portalUrl = api.portalPath !== undefined ? builtInPortalUrl(request, url, api.portalPath) : undefined
    const result = await spec.handle({ outflow, params, query, body, openapi, authorize: check, tenantScope, portalUrl })
    if (result instanceof Reply) return jsonResponse(result.status, result.body, { ...headers, ...result.headers })
    if (result instanceof JsonText) return jsonTextResponse(spec.responses[0].status, result.text, headers)
    return jsonResponse(spec.responses[0].status, result, headers)
  } catch (error) {
    return withHeaders(errorResponse(error, api.logger, { method: request.method, path }), headers)
  } finally {
    discardUnreadBody(request)
  }
}

const hostPattern = /^([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(:\d{1,5})?$/

/**
 * The built-in portal's URL as the caller reached this server: the `Host` (or `X-Forwarded-Host`)
 * and `X-Forwarded-Proto` of the request, which only the admin sends (the portal route is admin-only).
 * A host whose API is called from inside its network sets `portal.url` to the public URL instead.
 */
function builtInPortalUrl(request: Request, url: URL, portalPath: string): string | undefined {
  const first = (name: string) => request.headers.get(name)?.split(',')[0]?.trim()
  const host = first('x-forwarded-host') || first('host') || url.host
  const proto = first('x-forwarded-proto')?.toLowerCase()
  const scheme = proto === 'https' || proto === 'http' ? proto : url.protocol.slice(0, -1)
  return hostPattern.test(host) ? `${scheme}://${host}${portalPath}/` : undefined
}

/** `OPTIONS`: the methods a path serves, without authentication. */
function optionsResponse(allowed: string[], path: string): Response {
  if (allowed.length === 0) throw new OutflowError('not_found', `route not found: OPTIONS ${path}`)
  return new Response(null, { status: 204, headers: { Allow: [...allowed, 'OPTIONS'].join(', ') } })
}
