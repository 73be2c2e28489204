import type { ErrorKind } from '../model/attempt-result.js'
import { SSRF_ERROR_CODE } from './ssrf.js'

/**
 * Codes found on an error, its causes and (for happy-eyeballs connects) its aggregated errors, outermost first.
 *
 * @example
 * errorCodes(Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } })) // ['ECONNREFUSED']
 */
export function errorCodes(err: unknown, depth = 0): string[] {
  if (typeof err !== 'object' || err === null || depth > 4) return []
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown }
  const own = typeof e.code === 'string' ? [e.code] : []
  const nested = Array.isArray(e.errors) ? e.errors.flatMap((x) => errorCodes(x, depth + 1)) : []
  return [...own, ...errorCodes(e.cause, depth + 1), ...nested]
}

const dnsCodes = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME', 'EAI_FAIL', 'EAI_NODATA', 'ENODATA', 'ESERVFAIL'])
/** OpenSSL verification codes (as Node reports them) and Node's TLS errors. */
const tlsCode =
  /^(ERR_TLS_.+|ERR_SSL_.+|CERT_.+|UNABLE_TO_.+|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|HOSTNAME_MISMATCH|INVALID_CA|INVALID_PURPOSE|PATH_LENGTH_EXCEEDED|ERR_OSSL_.+)$/
const timeoutCodes = new Set(['ETIMEDOUT', 'ESOCKETTIMEDOUT', 'UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT'])
const networkCodes = /^(E[A-Z]+|UND_ERR_SOCKET|UND_ERR_CLOSED)$/

/**
 * The kind of a failure below the protocol — DNS, connect, TLS, socket — from the codes on an error and its causes;
 * undefined when there is none (the caller's own tables decide). The most specific wins: a refused private address,
 * then DNS, TLS, a refused connection, a timeout, any other socket error.
 *
 * @example
 * transportErrorKind(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.invalid'), { code: 'ENOTFOUND' })) // 'dns'
 */
export function transportErrorKind(err: unknown): ErrorKind | undefined {
  return kindOfCodes(errorCodes(err))
}

function kindOfCodes(codes: string[]): ErrorKind | undefined {
  if (codes.includes(SSRF_ERROR_CODE)) return 'ssrf'
  if (codes.some((c) => dnsCodes.has(c))) return 'dns'
  if (codes.some((c) => tlsCode.test(c))) return 'tls'
  if (codes.includes('ECONNREFUSED')) return 'connection_refused'
  if (codes.some((c) => timeoutCodes.has(c))) return 'timeout'
  if (codes.some((c) => networkCodes.test(c))) return 'network'
  return undefined
}

/**
 * `transportErrorKind` of an error that only carries the socket error in its text (gRPC statuses, some SDK
 * wrappers): `connect ECONNREFUSED 127.0.0.1:8085`, `getaddrinfo ENOTFOUND host`, `Name resolution failed`,
 * `self-signed certificate`, OpenSSL's `SSL routines`.
 *
 * @example
 * transportKindInText('14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED 127.0.0.1:8085') // 'connection_refused'
 */
export function transportKindInText(text: string): ErrorKind | undefined {
  const codes = text.match(/\b(E[A-Z]{4,}|EAI_[A-Z]+|ERR_TLS_[A-Z_]+|ERR_SSL_[A-Z_]+|ERR_OUTFLOW_SSRF)\b/g) ?? []
  const kind = kindOfCodes(codes)
  if (kind && kind !== 'network') return kind
  if (/Name resolution failed|DNS resolution failed|getaddrinfo/i.test(text)) return 'dns'
  if (/certificate|SSL routines|TLS handshake|wrong version number|handshake failure/i.test(text)) return 'tls'
  return kind
}

/** Kinds of a connection that could not be made or kept (the receiver was not reached, or not for long). */
const connectionKinds: ReadonlySet<ErrorKind> = new Set(['dns', 'connection_refused', 'tls', 'network'])

/**
 * Whether a kind means the receiver was not reached (or the connection to it broke): DNS, refused, TLS, network.
 *
 * @example
 * isConnectionFailure('tls') // true
 */
export function isConnectionFailure(kind: ErrorKind | null | undefined): boolean {
  return kind != null && connectionKinds.has(kind)
}
