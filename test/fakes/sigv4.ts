import { createHash, createHmac, timingSafeEqual } from 'node:crypto'
import type http from 'node:http'

// AWS Signature Version 4, checked the way AWS checks it: the fakes (SQS, EventBridge) recompute the signature of
// each request with the secret they expect.

function sha256Hex(data: string | Buffer): string {
  return createHash('sha256').update(data).digest('hex')
}

function hmac(key: string | Buffer, data: string): Buffer {
  return createHmac('sha256', key).update(data).digest()
}

/** What an Authorization header names: the key, its credential scope, the signed headers and the signature. */
export interface SigV4 {
  accessKeyId: string
  date: string
  region: string
  service: string
  signedHeaders: string[]
  signature: string
}

/** The parts of an `Authorization: AWS4-HMAC-SHA256 …` header, or undefined when it is not one. */
export function parseAuthorization(header: string | undefined): SigV4 | undefined {
  const match = /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, ?SignedHeaders=([^,]+), ?Signature=([0-9a-f]{64})$/.exec(header ?? '')
  if (!match) return undefined
  const [, accessKeyId, date, region, service, signedHeaders, signature] = match as unknown as [string, string, string, string, string, string, string]
  return { accessKeyId, date, region, service, signedHeaders: signedHeaders.split(';'), signature }
}

/** Recompute the SigV4 signature of a request with the expected secret. */
export function signatureMatches(req: http.IncomingMessage, body: Buffer, auth: SigV4, secret: string): boolean {
  const url = new URL(req.url ?? '/', 'http://fake')
  const canonicalHeaders = auth.signedHeaders
    .map((name) => {
      const value = req.headers[name]
      const text = Array.isArray(value) ? value.join(',') : (value ?? '')
      return `${name}:${text.trim().replace(/\s+/g, ' ')}\n`
    })
    .join('')
  const query = [...url.searchParams.entries()]
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .sort()
    .join('&')
  const canonicalRequest = [req.method, url.pathname, query, canonicalHeaders, auth.signedHeaders.join(';'), sha256Hex(body)].join('\n')
  const amzDate = String(req.headers['x-amz-date'] ?? '')
  const scope = `${auth.date}/${auth.region}/${auth.service}/aws4_request`
  const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256Hex(canonicalRequest)].join('\n')
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, auth.date), auth.region), auth.service), 'aws4_request')
  const expected = createHmac('sha256', key).update(stringToSign).digest()
  return timingSafeEqual(expected, Buffer.from(auth.signature, 'hex'))
}
