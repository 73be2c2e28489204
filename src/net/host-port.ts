// Hosts and ports as settings, URLs and clients write them: an IPv6 literal goes in brackets.

/** `host` or `host:port`, an IPv6 literal in brackets: the host as written (group 1) and the port (group 2). */
export const hostPortPattern = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/

/**
 * A host without the brackets of an IPv6 literal, as sockets and DNS take it.
 *
 * @example
 * unbracketed('[::1]') // '::1'
 */
export function unbracketed(host: string): string {
  return host.replace(/^\[|\]$/g, '')
}

/**
 * `host:port`, an IPv6 literal in brackets.
 *
 * @example
 * hostPort('::1', 4222) // '[::1]:4222'
 */
export function hostPort(host: string, port: number | string): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`
}

/** A server setting as `readServerAddress` reads it: the host (without brackets), the port as written, and the URL if it was one. */
export interface ServerAddressText {
  hostname: string
  port: string | undefined
  url?: URL
}

/**
 * Read a server setting written as `host:port` (the port optional) or as a URL of one of `schemes`: its host and port,
 * and the URL for the caller's own checks (credentials, path); `invalid` when it is neither, and 'must name a host' for
 * a URL without one.
 *
 * @example
 * readServerAddress('[::1]:4222', ['nats', 'tls'], 'must be "host:port" or a nats:// or tls:// URL') // { hostname: '::1', port: '4222' }
 */
export function readServerAddress(text: string, schemes: readonly string[], invalid: string): ServerAddressText | string {
  const scheme = /^([a-z]+):\/\//i.exec(text)?.[1]?.toLowerCase()
  if (scheme === undefined) {
    const match = hostPortPattern.exec(text)
    return match ? { hostname: unbracketed(match[1]!), port: match[2] } : invalid
  }
  if (!schemes.includes(scheme)) return invalid
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return invalid
  }
  if (!url.hostname) return 'must name a host'
  return { hostname: unbracketed(url.hostname), port: url.port || undefined, url }
}
