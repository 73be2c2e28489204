import { OutflowError } from '../errors.js'
import { errorResponse, withHeaders } from './responses.js'
import { loadPortalFiles, portalDirectory, type PortalFile, type PortalFiles } from './portal-files.js'

// The built-in tenant portal: static files under `portal.path` (default /portal), served by the same
// handler as the API, with a strict Content-Security-Policy. The page talks to the API only.

export interface PortalSettings {
  /** Where the portal is served, e.g. `/portal`. */
  path: string
  /** The API prefix the page calls (the handler's basePath). */
  apiBase: string
  /** CSP frame-ancestors sources. */
  frameAncestors: string[]
}

export interface PortalServer {
  /** Whether this request path is the portal's (its page, index.html or an asset). */
  claims(pathname: string): boolean
  serve(request: Request, url: URL): Response
}

/** API route prefixes a portal path must not shadow. */
const apiSegments = new Set(['tenants', 'destination-types', 'publish', 'events', 'metrics', 'healthz', 'openapi.json'])

function securityHeaders(frameAncestors: string[]): Record<string, string> {
  const csp = [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${frameAncestors.length ? frameAncestors.join(' ') : "'none'"}`,
    "require-trusted-types-for 'script'",
  ].join('; ')
  const headers: Record<string, string> = {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    // The page's URL carries the sign-in code until the page drops it: never send it anywhere.
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=(), usb=()',
  }
  if (frameAncestors.length === 1 && frameAncestors[0] === "'self'") headers['X-Frame-Options'] = 'SAMEORIGIN'
  return headers
}

/** Whether the client takes gzip (`Accept-Encoding`, honouring `q=0`). */
function acceptsGzip(header: string | null): boolean {
  if (!header) return false
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    if (name !== 'gzip' && name !== '*') return false
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='))
    return q === undefined || Number(q.slice(2)) > 0
  })
}

function fileResponse(request: Request, page: PortalFile, headers: Record<string, string>, cacheControl: string): Response {
  const gzip = acceptsGzip(request.headers.get('accept-encoding'))
  const body = gzip ? page.gzip : page.body
  const all: Record<string, string> = {
    ...headers,
    'Content-Type': page.type,
    'Content-Length': String(body.byteLength),
    'Cache-Control': cacheControl,
    Vary: 'Accept-Encoding',
  }
  if (gzip) all['Content-Encoding'] = 'gzip'
  return new Response(request.method === 'HEAD' ? null : body, { status: 200, headers: all })
}

/**
 * The portal's static files under `settings.path`: `GET`/`HEAD` of the page (`/portal/`, `/portal/index.html`)
 * and of `assets/<hashed name>`. Throws at creation when the path would shadow the API.
 *
 * @example
 * const portal = createPortalServer({ path: '/portal', apiBase: '/api/v1', frameAncestors: ["'self'"] })
 * if (portal.claims(url.pathname)) return portal.serve(request, url)
 */
export function createPortalServer(settings: PortalSettings): PortalServer {
  const { path, apiBase } = settings
  const first = path.split('/')[1]!
  if (apiSegments.has(first) || (apiBase && (path === apiBase || path.startsWith(`${apiBase}/`) || apiBase.startsWith(`${path}/`))))
    throw new OutflowError('internal', `portal.path ${path} overlaps the API (${apiBase || '/'}): choose another path, e.g. /portal`)
  const headers = securityHeaders(settings.frameAncestors)
  let files: PortalFiles | undefined
  const load = () => {
    if (files) return files
    const dir = portalDirectory()
    if (!dir) throw new OutflowError('unavailable', 'the portal is not built: run npm run build (the package ships it built)')
    return (files = loadPortalFiles(dir, apiBase))
  }

  return {
    claims(pathname) {
      return pathname === path || pathname === `${path}/` || pathname === `${path}/index.html` || pathname.startsWith(`${path}/assets/`)
    },
    serve(request, url) {
      try {
        return serveFile(request, url)
      } catch (error) {
        return withHeaders(errorResponse(error), headers)
      }
    },
  }

  function serveFile(request: Request, url: URL): Response {
    if (request.method !== 'GET' && request.method !== 'HEAD')
      throw new OutflowError('method_not_allowed', `method ${request.method} not allowed on ${url.pathname}`, { headers: { Allow: 'GET, HEAD' } })
    // The page's assets are relative (assets/…): the page must be a directory URL.
    if (url.pathname === path) return new Response(null, { status: 308, headers: { ...headers, Location: `${path.slice(path.lastIndexOf('/') + 1)}/${url.search}` } })
    const portal = load()
    if (url.pathname.startsWith(`${path}/assets/`)) {
      const asset = portal.asset(url.pathname.slice(path.length + '/assets/'.length))
      if (!asset) throw new OutflowError('not_found', `portal file not found: ${url.pathname}`)
      // Names carry a content hash: a new build has new names.
      return fileResponse(request, asset, headers, 'public, max-age=31536000, immutable')
    }
    const theme = url.searchParams.get('theme')
    // The page's URL carries a sign-in code: keep it out of every cache.
    return fileResponse(request, portal.index(theme === 'light' || theme === 'dark' ? theme : undefined), headers, 'no-store')
  }
}
