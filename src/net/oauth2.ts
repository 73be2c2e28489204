import { DeliveryError, sendHttp } from './http-client.js'
import type { EgressProxy } from './proxy.js'

/** OAuth2 client credentials (RFC 6749 §4.4) of one destination. */
export interface ClientCredentialsGrant {
  tokenUrl: string
  clientId: string
  clientSecret: string
  scope?: string
  /** Sent as `audience` (Auth0, Okta and others name the API the token is for so). */
  audience?: string
}

/** Without `expires_in`, a token is used this long. */
const defaultLifetimeMs = 60_000
/** A token is replaced this long before it expires (at most a tenth of its lifetime), so none expires on the way. */
const marginMs = 30_000
/** A token is a header value: visible ASCII, bounded. */
const tokenPattern = /^[\x21-\x7e]{1,8192}$/

/**
 * Access tokens of one client, fetched from its token endpoint (through the same SSRF guard as deliveries)
 * and kept until shortly before they expire; concurrent attempts share one fetch. A token the receiver
 * refused (401) is dropped with `invalidate`, so the next `token()` fetches a new one.
 *
 * @example
 * const tokens = new TokenSource(grant, { allowPrivateNetworks: false })
 * headers.authorization = `Bearer ${await tokens.token(signal)}`
 */
export class TokenSource {
  readonly #grant: ClientCredentialsGrant
  readonly #allowPrivateNetworks: boolean
  readonly #proxy: EgressProxy | undefined
  #current?: { token: string; refreshAt: number }
  #fetching?: Promise<string>

  constructor(grant: ClientCredentialsGrant, { allowPrivateNetworks, proxy }: { allowPrivateNetworks: boolean; proxy?: EgressProxy }) {
    this.#grant = grant
    this.#allowPrivateNetworks = allowPrivateNetworks
    this.#proxy = proxy
  }

  /** A valid token: the cached one, or a new one. Throws `DeliveryError` (`authentication`, or `ssrf`/`timeout`) when none can be had. */
  token(signal: AbortSignal): Promise<string> {
    if (this.#current && Date.now() < this.#current.refreshAt) return Promise.resolve(this.#current.token)
    this.#fetching ??= this.#fetch(signal).finally(() => (this.#fetching = undefined))
    return this.#fetching
  }

  /** Forget `token` (the receiver refused it); a newer one fetched meanwhile is kept. */
  invalidate(token: string): void {
    if (this.#current?.token === token) this.#current = undefined
  }

  async #fetch(signal: AbortSignal): Promise<string> {
    const { tokenUrl, clientId, clientSecret, scope, audience } = this.#grant
    const form = new URLSearchParams({ grant_type: 'client_credentials' })
    if (scope) form.set('scope', scope)
    if (audience) form.set('audience', audience)
    // client_secret_basic, which every token endpoint must accept (RFC 6749 §2.3.1): both parts form-encoded.
    const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')
    const headers = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json', authorization: `Basic ${basic}` }
    let response
    try {
      response = await sendHttp(tokenUrl, { method: 'POST', headers, body: form.toString() }, { allowPrivateNetworks: this.#allowPrivateNetworks, signal, ...(this.#proxy ? { proxy: this.#proxy } : {}) })
    } catch (err) {
      const failure = err as DeliveryError
      // An address the guard refuses, or the deadline, stay what they are; anything else is the token endpoint failing.
      if (failure.kind === 'ssrf' || failure.kind === 'timeout') throw new DeliveryError(failure.kind, `OAuth2 token endpoint: ${failure.message}`, { cause: err })
      throw new DeliveryError('authentication', `OAuth2 token endpoint: ${failure.kind ?? 'network'}: ${failure.message}`, { cause: err })
    }
    if (response.status < 200 || response.status >= 300) {
      const reason = /"error"\s*:\s*"([\w.-]{1,64})"/.exec(response.body)?.[1]
      throw new DeliveryError('authentication', `OAuth2 token endpoint answered HTTP ${response.status}${reason ? ` (${reason})` : ''}`)
    }
    let answer: { access_token?: unknown; expires_in?: unknown; token_type?: unknown }
    try {
      answer = JSON.parse(response.body) as typeof answer
    } catch {
      throw new DeliveryError('authentication', 'OAuth2 token endpoint: the answer is not JSON')
    }
    const token = answer?.access_token
    if (typeof token !== 'string' || !tokenPattern.test(token)) throw new DeliveryError('authentication', 'OAuth2 token endpoint: no usable access_token in the answer')
    if (typeof answer.token_type === 'string' && answer.token_type.toLowerCase() !== 'bearer') throw new DeliveryError('authentication', `OAuth2 token endpoint: token_type ${answer.token_type.slice(0, 32)} is not Bearer`)
    const lifetime = typeof answer.expires_in === 'number' && answer.expires_in > 0 ? answer.expires_in * 1000 : defaultLifetimeMs
    this.#current = { token, refreshAt: Date.now() + lifetime - Math.min(marginMs, lifetime / 10) }
    return token
  }
}
