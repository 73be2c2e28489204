/**
 * Whether the Fetch `Request` constructor refuses `method` (the spec's forbidden methods: CONNECT,
 * TRACE, TRACK). Node's HTTP server passes TRACE on to request handlers, so such a request can
 * reach a mount, and copying it into a new `Request` throws.
 *
 * @example
 * isForbiddenMethod('trace') // true
 */
export function isForbiddenMethod(method: string): boolean {
  return /^(CONNECT|TRACE|TRACK)$/i.test(method)
}

/**
 * A web Request for a method the constructor refuses: built as a body-less GET that reports the
 * real method (as @hono/node-server does for TRACE), so the handler answers it 405 like any other
 * method a path does not serve.
 *
 * @example
 * forbiddenMethodRequest('http://localhost/tenants', 'TRACE', new Headers()).method // 'TRACE'
 */
export function forbiddenMethodRequest(url: string, method: string, headers: Headers): Request {
  const request = new Request(url, { method: 'GET', headers })
  Object.defineProperty(request, 'method', { value: method.toUpperCase() })
  return request
}
