import { createHash, createPrivateKey, X509Certificate } from 'node:crypto'

/** A client certificate for mTLS and/or the one CA the receiver's certificate must chain to. */
export interface ClientTls {
  cert?: string
  key?: string
  ca?: string
  /** Hash of the three: connections are pooled per certificate, never shared between destinations that differ. */
  id: string
}

/**
 * What is wrong with a PEM certificate, key and CA for mTLS, by field; empty when they can be used:
 * each parses, and the key is the certificate's.
 *
 * @example
 * clientTlsProblems({ cert, key }) // {} or { tls_client_key: 'is not the private key of tls_client_cert' }
 */
export function clientTlsProblems(fields: { cert?: string; key?: string; ca?: string }, names = { cert: 'tls_client_cert', key: 'tls_client_key', ca: 'tls_ca' }): Record<string, string> {
  const problems: Record<string, string> = {}
  if ((fields.cert === undefined) !== (fields.key === undefined)) problems[fields.cert === undefined ? names.cert : names.key] = `required with ${fields.cert === undefined ? names.key : names.cert}`
  let cert: X509Certificate | undefined
  if (fields.cert !== undefined) {
    try {
      cert = new X509Certificate(fields.cert)
    } catch {
      problems[names.cert] = 'must be a PEM certificate'
    }
  }
  if (fields.key !== undefined) {
    try {
      const key = createPrivateKey(fields.key)
      if (cert && !cert.checkPrivateKey(key)) problems[names.key] = `is not the private key of ${names.cert}`
    } catch {
      problems[names.key] = 'must be an unencrypted PEM private key'
    }
  }
  if (fields.ca !== undefined) {
    try {
      new X509Certificate(fields.ca)
    } catch {
      problems[names.ca] = 'must be a PEM certificate'
    }
  }
  return problems
}

/** The TLS settings of a destination: its client certificate and key, its pinned CA; undefined with neither. */
export function clientTls(cert: unknown, key: unknown, ca: unknown): ClientTls | undefined {
  const pair = typeof cert === 'string' && typeof key === 'string' ? { cert, key } : undefined
  const pinned = typeof ca === 'string' ? ca : undefined
  if (!pair && !pinned) return undefined
  const id = createHash('sha256').update(`${pair?.cert ?? ''}\0${pair?.key ?? ''}\0${pinned ?? ''}`).digest('base64url').slice(0, 22)
  return { ...pair, ...(pinned ? { ca: pinned } : {}), id }
}
