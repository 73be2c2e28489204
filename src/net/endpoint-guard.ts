import type { LookupAddress } from 'node:dns'
import { guardedLookup, ipLiteral, isPrivateAddress, SSRF_ERROR_CODE, ssrfError } from './ssrf.js'
import type { AttemptResult } from '../model/attempt-result.js'
import { transportErrorKind } from './transport-error.js'

/** Whether tenant-supplied hosts may be private addresses (the engine's `allowPrivateNetworks`). */
export interface NetworkPolicy {
  allowPrivateNetworks: boolean
}

/**
 * Why a tenant-supplied host is refused before any DNS: an IP literal in a private range.
 * Checked once per publisher, since a literal cannot change; it also never reaches a `lookup`
 * hook (sockets skip DNS for literals), so this is its only check.
 *
 * @example
 * privateHostError('169.254.169.254', context) // 'refusing to connect to a private network address (169.254.169.254); …'
 * privateHostError('sqs.us-east-1.amazonaws.com', context) // undefined: a name is checked after DNS
 */
export function privateHostError(hostname: string, context: NetworkPolicy): string | undefined {
  if (context.allowPrivateNetworks) return undefined
  const literal = ipLiteral(hostname)
  return literal !== null && isPrivateAddress(literal) ? ssrfError(literal, literal).message : undefined
}

/**
 * `privateHostError` of an endpoint URL's host.
 *
 * @example
 * privateEndpointError('http://127.0.0.1:4566', context) // refused unless private networks are allowed
 */
export function privateEndpointError(endpoint: string | undefined, context: NetworkPolicy): string | undefined {
  return endpoint === undefined ? undefined : privateHostError(new URL(endpoint).hostname, context)
}

/**
 * Resolve a tenant-supplied host name now, for an SDK that does its own DNS and offers no socket `lookup`
 * hook: rejects with `ERR_OUTFLOW_SSRF` when any address is private, else the (public) addresses.
 * Undefined when there is nothing to resolve: private networks are allowed, or the host is an IP literal
 * (`privateHostError` judged it once). `family: 4` asks for the IPv4 addresses a client can be pinned to.
 *
 * @example
 * const addresses = await resolvePublicHost('acme.servicebus.windows.net', context)
 */
export function resolvePublicHost(hostname: string, context: NetworkPolicy, family: 0 | 4 = 0): Promise<LookupAddress[] | undefined> {
  if (context.allowPrivateNetworks || ipLiteral(hostname) !== null) return Promise.resolve(undefined)
  return new Promise((resolve, reject) => {
    guardedLookup(hostname, { all: true, family }, (err, addresses) => (err ? reject(err) : resolve(addresses as LookupAddress[])))
  })
}

/**
 * The failed attempt of a `resolvePublicHost` rejection: `ssrf` for a private address, `dns` for a name that did
 * not resolve, else `network`.
 *
 * @example
 * catch (err) { return hostFailure(err, 'localhost') } // { ok: false, error_kind: 'ssrf', error: '… (localhost resolves to 127.0.0.1) …' }
 */
export function hostFailure(err: unknown, hostname: string): AttemptResult {
  const e = err as { code?: unknown; message?: unknown } | null
  if (e?.code === SSRF_ERROR_CODE) return { ok: false, error_kind: 'ssrf', error: String(e.message) }
  const code = typeof e?.code === 'string' ? e.code : 'error'
  const kind = transportErrorKind(err)
  return { ok: false, error_kind: kind === 'dns' || kind === 'timeout' ? kind : 'network', error: `could not resolve ${hostname}: ${code}` }
}

/** What `hostChecker` found: the public addresses to pin a client to (undefined: nothing was resolved), or the failed attempt. */
export type HostCheck = { addresses: LookupAddress[] | undefined } | { failure: AttemptResult }

/**
 * The check, before each publish, of a tenant-supplied host that an SDK connects to with its own DNS (it offers no
 * socket `lookup` hook): a private IP literal is refused (judged once, since a literal cannot change), a name is
 * resolved and its addresses checked every time, since DNS answers change. No host (the SDK's own service): nothing to check.
 *
 * @example
 * const checkHost = hostChecker(namespace.hostname, context)
 * const host = await checkHost()
 * if ('failure' in host) return host.failure
 */
export function hostChecker(hostname: string | undefined, context: NetworkPolicy, family: 0 | 4 = 0): () => Promise<HostCheck> {
  const refused = hostname === undefined ? undefined : privateHostError(hostname, context)
  return async () => {
    if (refused) return { failure: { ok: false, error_kind: 'ssrf', error: refused } }
    if (hostname === undefined) return { addresses: undefined }
    try {
      return { addresses: await resolvePublicHost(hostname, context, family) }
    } catch (err) {
      return { failure: hostFailure(err, hostname) }
    }
  }
}
