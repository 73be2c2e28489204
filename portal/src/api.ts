// The portal's only way to the engine: the public /api/v1 with a tenant token kept in memory (never in
// storage, never in the URL).

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** Field path → problem, from a 422 or 400 body. */
    readonly data: Record<string, string> = {},
  ) {
    super(message)
  }
}

interface Session {
  token: string
  tenantId: string
}

let session: Session | undefined
const sessionEndListeners = new Set<() => void>()

/** The API prefix the engine wrote into the page (default /api/v1). */
export const apiBase = document.querySelector('meta[name="outflow-api"]')?.getAttribute('content')?.replace(/\/$/, '') || '/api/v1'

/** Called when the API refuses the token (expired, or the tenant was deleted). */
export function onSessionEnd(listener: () => void): () => void {
  sessionEndListeners.add(listener)
  return () => sessionEndListeners.delete(listener)
}

export function tenantId(): string {
  if (!session) throw new Error('no portal session')
  return session.tenantId
}

/** `/tenants/{tenant}` + suffix, the tenant taken from the session, never from the page URL. */
export function tenantPath(suffix = ''): string {
  return `/tenants/${encodeURIComponent(tenantId())}${suffix}`
}

async function errorOf(response: Response): Promise<ApiError> {
  let message = `${response.status} ${response.statusText}`
  let data: Record<string, string> = {}
  try {
    const body = (await response.json()) as { message?: unknown; data?: unknown }
    if (typeof body.message === 'string') message = body.message
    if (body.data && typeof body.data === 'object') data = body.data as Record<string, string>
  } catch {
    // Not JSON: keep the status line.
  }
  return new ApiError(response.status, message, data)
}

/**
 * Exchange the sign-in code of the portal URL for a tenant token (once: a code works one time).
 *
 * @example
 * await signIn(new URLSearchParams(location.search).get('code')!)
 */
export async function signIn(code: string): Promise<string> {
  const response = await fetch(`${apiBase}/portal/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ code }),
    credentials: 'omit',
  })
  if (!response.ok) throw await errorOf(response)
  const body = (await response.json()) as { token: string; tenant_id: string }
  session = { token: body.token, tenantId: body.tenant_id }
  return body.tenant_id
}

/**
 * One API call with the session's token; a non-2xx answer is an ApiError with the API's message.
 *
 * @example
 * const destinations = await api<Destination[]>('GET', tenantPath('/destinations'))
 */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  if (!session) throw new ApiError(401, 'not signed in')
  const headers: Record<string, string> = { authorization: `Bearer ${session.token}` }
  if (body !== undefined) headers['content-type'] = 'application/json'
  const response = await fetch(`${apiBase}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'omit' })
  if (response.status === 401) {
    session = undefined
    for (const listener of sessionEndListeners) listener()
  }
  if (!response.ok) throw await errorOf(response)
  return (await response.json()) as T
}

/** A query string from defined, non-empty values; arrays repeat the name. */
export function query(params: Record<string, string | number | undefined | null | (string | number)[]>): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(params)) {
    if (Array.isArray(value)) for (const item of value) search.append(name, String(item))
    else if (value !== undefined && value !== null && value !== '') search.set(name, String(value))
  }
  const text = search.toString()
  return text ? `?${text}` : ''
}

let replaySupport: Promise<boolean> | undefined

/**
 * Whether this engine serves replay by range (the recovery feature): read once from the public
 * OpenAPI document, so the button stays hidden on engines without the route.
 */
export function replaySupported(): Promise<boolean> {
  replaySupport ??= fetch(`${apiBase}/openapi.json`, { credentials: 'omit' })
    .then(async (response) => {
      if (!response.ok) return false
      const doc = (await response.json()) as { paths?: Record<string, { post?: unknown }> }
      return Boolean(doc.paths?.['/tenants/{tenant_id}/destinations/{destination_id}/replay']?.post)
    })
    .catch(() => false)
  return replaySupport
}
