import { useEffect, useState } from 'preact/hooks'

// Hash routes (#/events?status=failed): the server serves one page, and the sign-in code in the real
// query string is never part of a route.

export interface Route {
  /** Path segments, decoded: `#/destinations/d1` → ['destinations', 'd1']. */
  segments: string[]
  query: URLSearchParams
}

function current(): Route {
  const hash = location.hash.replace(/^#/, '') || '/'
  const [path = '/', search = ''] = hash.split('?', 2)
  const segments = path
    .split('/')
    .filter(Boolean)
    .map((s) => {
      try {
        return decodeURIComponent(s)
      } catch {
        return s
      }
    })
  return { segments, query: new URLSearchParams(search) }
}

/** The current route, updated on every hash change. */
export function useRoute(): Route {
  const [route, setRoute] = useState(current)
  useEffect(() => {
    const update = () => setRoute(current())
    addEventListener('hashchange', update)
    return () => removeEventListener('hashchange', update)
  }, [])
  return route
}

/**
 * A link target: `href(['events', id], { destination_id })` → `#/events/<id>?destination_id=…`.
 *
 * @example
 * <a href={href(['destinations', d.id])}>{d.id}</a>
 */
export function href(segments: string[], params: Record<string, string | undefined | null> = {}): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) if (value) search.set(name, value)
  const text = search.toString()
  return `#/${segments.map(encodeURIComponent).join('/')}${text ? `?${text}` : ''}`
}

export function navigate(segments: string[], params: Record<string, string | undefined | null> = {}): void {
  location.hash = href(segments, params)
}
