import { createHmac, createPublicKey, timingSafeEqual, verify as verifySignature, type KeyObject } from 'node:crypto'

// `outflow/verify`: what a receiver runs to check Outflow's webhooks. It imports nothing of the engine
// (node:crypto only), so a receiver installs the package for this alone and loads no storage or HTTP code.

/** A delivery that does not verify: no signature of a known key, a bad header, or a timestamp outside the tolerance. */
export class WebhookVerificationError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'WebhookVerificationError'
  }
}

/** One Ed25519 public key: `whpk_` + base64, a JWK (`kty: "OKP"`, `crv: "Ed25519"`, `x`), or raw 32 bytes. */
export type PublicKeyInput = string | { kty: string; crv: string; x: string; kid?: string } | Uint8Array

/** What a verifier checks signatures with (a secret, pinned public keys or a key-set URL) and how strict it is about time. */
export interface VerifierOptions {
  /** `whsec_` secret(s) of the destination: `v1` (HMAC-SHA256) signatures are checked with them. */
  secret?: string | string[]
  /** Pinned Ed25519 public keys: `v1a` signatures are checked with them. */
  publicKeys?: PublicKeyInput[]
  /**
   * The service's key set (a JWK Set, e.g. `https://…/api/v1/signing-keys`): fetched on first use, kept for
   * `cacheMs`, and fetched again once when a `v1a` signature matches none of its keys (a rotation).
   */
  keySetUrl?: string
  /** Accepted distance between `webhook-timestamp` and this clock, both ways. Default 300 (5 minutes). */
  toleranceSeconds?: number
  /** How long a fetched key set is used. Default 300 000 (5 minutes). */
  cacheMs?: number
  /** At most one fetch for an unknown signature per this many ms, so forged signatures cannot make it fetch without end. Default 10 000. */
  minRefreshIntervalMs?: number
  /** The fetch to use for the key set (default: the global one). */
  fetch?: typeof fetch
  /** The clock (tests). */
  now?: () => number
}

/** What a verified delivery carried. */
export interface VerifiedWebhook {
  /** The `webhook-id`: the event id, the same on every retry (de-duplicate on it). */
  id: string
  /** The `webhook-timestamp` of the attempt, in unix seconds. */
  timestamp: number
  /** The raw body, parsed as JSON. */
  payload: unknown
  /** Which signature verified: `v1` (HMAC) or `v1a` (Ed25519). */
  scheme: 'v1' | 'v1a'
  /** The `kid` of the key a `v1a` signature verified with, when the key had one. */
  kid?: string
}

/** Request headers as Node (`req.headers`), the Fetch API (`Headers`) or a plain record give them. */
export type HeadersInput = Headers | Record<string, string | string[] | undefined>

interface EdKey {
  key: KeyObject
  kid?: string
}

const defaultTolerance = 300
const defaultCacheMs = 300_000
const defaultRefreshMs = 10_000

function header(headers: HeadersInput, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  const record = headers as Record<string, string | string[] | undefined>
  const value = record[name] ?? Object.entries(record).find(([k]) => k.toLowerCase() === name)?.[1]
  return Array.isArray(value) ? value.join(' ') : value
}

function hmacKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64')
}

/** An Ed25519 public key object from one of the accepted forms; throws on anything else. */
export function importPublicKey(input: PublicKeyInput): EdKey {
  let x: string
  let kid: string | undefined
  if (typeof input === 'string') {
    if (!/^whpk_[A-Za-z0-9+/]+={0,2}$/.test(input)) throw new WebhookVerificationError('a public key must be "whpk_" followed by base64')
    x = Buffer.from(input.slice(5), 'base64').toString('base64url')
  } else if (input instanceof Uint8Array) {
    x = Buffer.from(input).toString('base64url')
  } else {
    if (input.kty !== 'OKP' || input.crv !== 'Ed25519' || typeof input.x !== 'string') throw new WebhookVerificationError('a JWK must be an OKP Ed25519 key')
    x = input.x
    kid = typeof input.kid === 'string' ? input.kid : undefined
  }
  if (Buffer.from(x, 'base64url').length !== 32) throw new WebhookVerificationError('an Ed25519 public key is 32 bytes')
  return { key: createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x }, format: 'jwk' }), kid }
}

/** The Ed25519 keys of a JWK Set document; other keys (another curve, a symmetric key) are left out. */
function keysOfSet(document: unknown): EdKey[] {
  const keys = (document as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys)) throw new WebhookVerificationError('the key set is not a JWK Set')
  const out: EdKey[] = []
  for (const jwk of keys) {
    try {
      out.push(importPublicKey(jwk as PublicKeyInput))
    } catch {
      // not an Ed25519 key: not ours to use
    }
  }
  return out
}

/**
 * A verifier of Outflow (Standard Webhooks) deliveries: `v1` HMAC signatures with the destination's secret,
 * `v1a` Ed25519 signatures with pinned public keys or the service's key set. Signatures are compared in
 * constant time; keys come only from the options, never from the request.
 *
 * @example
 * import { createVerifier } from 'outflow/verify'
 * const verifier = createVerifier({ keySetUrl: 'https://api.example.com/api/v1/signing-keys' })
 * app.post('/webhooks', express.raw({ type: 'application/json' }), async (req, res) => {
 *   const { id, payload } = await verifier.verify(req.body, req.headers) // throws WebhookVerificationError
 *   res.sendStatus(204)
 * })
 */
export function createVerifier(options: VerifierOptions) {
  const secrets = (Array.isArray(options.secret) ? options.secret : options.secret ? [options.secret] : []).map(hmacKey)
  const pinned = (options.publicKeys ?? []).map(importPublicKey)
  const tolerance = options.toleranceSeconds ?? defaultTolerance
  const now = options.now ?? Date.now
  if (secrets.length === 0 && pinned.length === 0 && !options.keySetUrl) throw new WebhookVerificationError('give a secret, public keys or a keySetUrl to verify with')
  const keySet = options.keySetUrl ? keySetCache(options.keySetUrl, options, now) : undefined

  return {
    /**
     * Check a delivery: `body` exactly as received (a string or the raw bytes, before any JSON parsing)
     * and its headers. Resolves to what it carried; rejects with `WebhookVerificationError`.
     */
    async verify(body: string | Uint8Array, headers: HeadersInput): Promise<VerifiedWebhook> {
      const signed = signedMessage(body, headers, now(), tolerance)
      const { id, timestamp, message } = signed
      const { v1, v1a } = signaturesOf(signed.signatures)
      for (const key of secrets) {
        const expected = createHmac('sha256', key).update(message).digest()
        if (v1.some((given) => given.length === expected.length && timingSafeEqual(given, expected))) return { id, timestamp, payload: payloadOf(signed.raw), scheme: 'v1' }
      }
      if (v1a.length > 0 && (pinned.length > 0 || keySet)) {
        let match = matchV1a(v1a, message, [...pinned, ...((await keySet?.keys()) ?? [])])
        // A key the cached set lacks: the service may have rotated. Fetch once (not more often than minRefreshIntervalMs).
        if (!match && keySet) {
          const fresh = await keySet.refresh()
          if (fresh) match = matchV1a(v1a, message, fresh)
        }
        if (match) return { id, timestamp, payload: payloadOf(signed.raw), scheme: 'v1a', ...(match.kid ? { kid: match.kid } : {}) }
      }
      throw new WebhookVerificationError('no signature matches')
    },
  }
}

/**
 * The service's key set at `url`: `keys()` the cached set (fetched on first use and once `cacheMs` passed),
 * `refresh()` the set fetched again, or undefined when the last refresh was less than `minRefreshIntervalMs` ago.
 * Concurrent calls share one fetch.
 */
function keySetCache(url: string, options: Pick<VerifierOptions, 'cacheMs' | 'minRefreshIntervalMs' | 'fetch'>, now: () => number) {
  const cacheMs = options.cacheMs ?? defaultCacheMs
  const refreshMs = options.minRefreshIntervalMs ?? defaultRefreshMs
  const fetchSet = options.fetch ?? globalThis.fetch
  let cached: { keys: EdKey[]; at: number } | undefined
  let inFlight: Promise<EdKey[]> | undefined
  let lastRefresh = Number.NEGATIVE_INFINITY

  function load(): Promise<EdKey[]> {
    inFlight ??= (async () => {
      try {
        const response = await fetchSet(url, { headers: { accept: 'application/json' }, redirect: 'error' })
        if (!response.ok) throw new WebhookVerificationError(`the key set answered ${response.status}`)
        const keys = keysOfSet(await response.json())
        cached = { keys, at: now() }
        return keys
      } finally {
        inFlight = undefined
      }
    })()
    return inFlight
  }

  return {
    keys: async (): Promise<EdKey[]> => (cached && now() - cached.at < cacheMs ? cached.keys : load()),
    async refresh(): Promise<EdKey[] | undefined> {
      if (now() - lastRefresh < refreshMs) return undefined
      lastRefresh = now()
      return load()
    },
  }
}

/** The delivery's id, timestamp (checked against `nowMs` within `tolerance` seconds) and signed bytes; its signature header as given. */
function signedMessage(body: string | Uint8Array, headers: HeadersInput, nowMs: number, tolerance: number) {
  const id = header(headers, 'webhook-id')
  const timestampText = header(headers, 'webhook-timestamp')
  const signatures = header(headers, 'webhook-signature')
  if (!id || !timestampText || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature')
  if (!/^\d{1,12}$/.test(timestampText)) throw new WebhookVerificationError('webhook-timestamp is not unix seconds')
  const timestamp = Number(timestampText)
  const nowSeconds = Math.floor(nowMs / 1000)
  if (timestamp < nowSeconds - tolerance) throw new WebhookVerificationError('webhook-timestamp is too old')
  if (timestamp > nowSeconds + tolerance) throw new WebhookVerificationError('webhook-timestamp is in the future')
  const raw = typeof body === 'string' ? Buffer.from(body, 'utf8') : Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  const message = Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), raw])
  return { id, timestamp, raw, message, signatures }
}

/** The `v1` (HMAC) and `v1a` (Ed25519, 64 bytes) signatures of a `webhook-signature` header. */
function signaturesOf(signatureHeader: string): { v1: Buffer[]; v1a: Buffer[] } {
  const entries = signatureHeader.split(' ').filter(Boolean)
  const v1 = entries.filter((e) => e.startsWith('v1,')).map((e) => Buffer.from(e.slice(3), 'base64'))
  const v1a = entries.filter((e) => e.startsWith('v1a,')).map((e) => Buffer.from(e.slice(4), 'base64')).filter((s) => s.length === 64)
  return { v1, v1a }
}

function matchV1a(signatures: Buffer[], message: Buffer, keys: EdKey[]): EdKey | undefined {
  for (const signature of signatures) for (const candidate of keys) if (verifySignature(null, message, candidate.key, signature)) return candidate
  return undefined
}

/** The verified body, parsed. */
function payloadOf(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8')) as unknown
  } catch {
    throw new WebhookVerificationError('the body is not JSON')
  }
}

/**
 * Verify one delivery without keeping a verifier (pinned keys or a secret; with a `keySetUrl`, keep a
 * `createVerifier` so its cache is reused).
 *
 * @example
 * const { payload } = await verifyWebhook(rawBody, req.headers, { publicKeys: ['whpk_…'] })
 */
export function verifyWebhook(body: string | Uint8Array, headers: HeadersInput, options: VerifierOptions): Promise<VerifiedWebhook> {
  return createVerifier(options).verify(body, headers)
}
