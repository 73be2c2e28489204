import { OutflowError } from '../errors.js'
import type { RouteSpec } from './routes.js'

interface CompiledRoute {
  spec: RouteSpec
  /** Literal segments as strings, parameters as `{ param: name }`. */
  segments: (string | { param: string })[]
}

export interface RouteMatch {
  spec: RouteSpec
  params: Record<string, string>
}

export interface Router {
  /** The route for a method and path below the API prefix; 404, 405 (with `Allow`) or 400 otherwise. */
  match(method: string, path: string): RouteMatch
  /** Methods served at a path, empty when the path is unknown. */
  allowed(path: string): string[]
}

function compile(spec: RouteSpec): CompiledRoute {
  const segments = spec.path
    .split('/')
    .slice(1)
    .map((s) => (s.startsWith('{') && s.endsWith('}') ? { param: s.slice(1, -1) } : s))
  return { spec, segments }
}

function splitPath(path: string): string[] {
  const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
  return trimmed.split('/').slice(1)
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment)
  } catch {
    throw new OutflowError('bad_request', 'invalid path', { data: { path: 'malformed percent-encoding' } })
  }
}

function matchSegments(route: CompiledRoute, parts: string[]): Record<string, string> | undefined {
  if (route.segments.length !== parts.length) return undefined
  const params: Record<string, string> = {}
  for (const [i, segment] of route.segments.entries()) {
    const part = parts[i]!
    if (typeof segment === 'string') {
      if (segment !== part) return undefined
    } else {
      params[segment.param] = decodeSegment(part)
    }
  }
  return params
}

/**
 * A router over the route table: paths are matched segment by segment, `{name}` capturing one segment.
 *
 * @example
 * createRouter(routes).match('GET', '/tenants/acme') // { spec: getTenant, params: { tenant_id: 'acme' } }
 */
export function createRouter(specs: RouteSpec[]): Router {
  const compiled = specs.map(compile)
  const candidates = (path: string) => {
    const parts = splitPath(path)
    return compiled.flatMap((route) => {
      const params = matchSegments(route, parts)
      return params ? [{ spec: route.spec, params }] : []
    })
  }
  return {
    match(method, path) {
      const found = candidates(path)
      const hit = found.find((c) => c.spec.method === method)
      if (hit) return hit
      if (found.length === 0) throw new OutflowError('not_found', `route not found: ${method} ${path}`)
      const allow = [...new Set(found.map((c) => c.spec.method))].join(', ')
      throw new OutflowError('method_not_allowed', `method ${method} not allowed on ${path}`, { headers: { Allow: allow } })
    },
    allowed(path) {
      return [...new Set(candidates(path).map((c) => c.spec.method))]
    },
  }
}
