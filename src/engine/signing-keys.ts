import type * as v from 'valibot'
import { RotateSigningKeySchema, type SigningJwkSchema, type SigningKeySet } from '../model/signing-keys.js'
import { parseInput } from '../model/common.js'
import { CredentialsError, sealCredentials, sealedWithCurrentKey, unsealCredentials, type CredentialsOwner, type Keyring } from '../credentials.js'
import { OutflowError } from '../errors.js'
import { errorFields } from '../logger.js'
import { generateSigningSecret, parseSigningSecret, whpk, type Ed25519Key } from '../net/ed25519.js'
import type { ResolvedOptions } from '../options.js'
import type { SigningKeyRecord, Storage } from '../storage/storage.js'

export type SigningJwk = v.InferOutput<typeof SigningJwkSchema>
export type { SigningKeySet }

interface LoadedKey {
  key: Ed25519Key
  active: boolean
  created_at: Date | null
  retires_at: Date | null
}

/** How often an instance re-reads the stored keyring, so a rotation made by another instance reaches it. */
const refreshMs = 30_000

// Signing keys are sealed with the credentials keyring, bound to their kid; '' is no tenant's id.
const ownerOf = (kid: string): CredentialsOwner => ({ tenantId: '', destinationId: `signing-key:${kid}` })

/**
 * The engine's Ed25519 keyring: the configured `signing.keys`, or the stored keyring (generated at the first
 * start, rotated by `rotate`), re-read every 30 s. `signers()` is what publishers sign with, synchronously.
 */
export class SigningKeyring {
  readonly #storage: Storage
  readonly #options: ResolvedOptions
  readonly #credentialKeys: Keyring | undefined
  readonly #now: () => Date
  #keys: LoadedKey[] = []
  #loadedAt = 0
  #timer?: NodeJS.Timeout

  constructor(storage: Storage, options: ResolvedOptions, credentialKeys: Keyring | undefined, now: () => Date) {
    this.#storage = storage
    this.#options = options
    this.#credentialKeys = credentialKeys
    this.#now = now
    const configured = options.signing.keys
    if (configured) this.#keys = configured.map((secret, i) => ({ key: parseSigningSecret(secret), active: i === 0, created_at: null, retires_at: null }))
  }

  /** Whether the host configured the keys (then they are rotated in the configuration, not by the engine). */
  get configured(): boolean {
    return this.#options.signing.keys !== undefined
  }

  /**
   * Load the stored keyring, generating its first key when there is none; then keep re-reading it. A storage
   * that does not answer yet does not stop the engine from starting: it is logged and tried again with each re-read.
   */
  async start(): Promise<void> {
    if (this.configured) return
    await this.#ensure().catch((err) => this.#options.logger.warn({ error: errorFields(err) }, 'could not read the signing keys: trying again in 30 s'))
    this.#timer ??= setInterval(() => void this.#ensure().catch((err) => this.#options.logger.warn({ error: errorFields(err) }, 'could not re-read the signing keys')), refreshMs)
    this.#timer.unref()
  }

  async #ensure(): Promise<void> {
    await this.#load()
    if (!this.#keys.some((k) => k.active)) {
      await this.#storage.insertSigningKey(this.#newKey(), undefined, this.#now())
      await this.#load()
    }
  }

  close(): void {
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** The keys that sign now: the active key first, then previous keys until they retire. */
  signers(): Ed25519Key[] {
    const now = this.#now().getTime()
    const live = this.#keys.filter((k) => k.active || k.retires_at === null || k.retires_at.getTime() > now)
    return live.sort((a, b) => Number(b.active) - Number(a.active)).map((k) => k.key)
  }

  /** The public keys as a JWK Set: the keys that sign now (the key set receivers verify with). */
  async keySet(): Promise<SigningKeySet> {
    // A public route: at most one read of the table per second, however often it is asked.
    if (!this.configured && performance.now() - this.#loadedAt > 1000) await this.#load()
    const now = this.#now().getTime()
    const keys = this.#keys
      .filter((k) => k.active || k.retires_at === null || k.retires_at.getTime() > now)
      .sort((a, b) => Number(b.active) - Number(a.active))
      .map(({ key, active, created_at, retires_at }): SigningJwk => ({
        kty: 'OKP',
        crv: 'Ed25519',
        alg: 'EdDSA',
        use: 'sig',
        kid: key.kid,
        x: key.x,
        whpk: whpk(key.x),
        status: active ? 'active' : 'previous',
        created_at: created_at?.toISOString() ?? null,
        retires_at: retires_at?.toISOString() ?? null,
      }))
    return { keys }
  }

  /**
   * A new active key; the current one keeps signing (a second `v1a` signature) and stays in the key set
   * for `overlapMs` (default `signing.overlap`).
   */
  async rotate(overlapMs = this.#options.signing.overlap): Promise<SigningKeySet> {
    if (this.configured) throw new OutflowError('conflict', 'the signing keys are configured (signing.keys): rotate them in the configuration, newest first')
    const now = this.#now()
    await this.#storage.insertSigningKey(this.#newKey(), new Date(now.getTime() + overlapMs), now)
    await this.#load()
    return this.keySet()
  }

  /** Move every stored key's secret to the newest credentials key; counts as `reencryptCredentials` does. */
  async reencrypt(): Promise<{ scanned: number; reencrypted: number; failed: number }> {
    const result = { scanned: 0, reencrypted: 0, failed: 0 }
    const keyring = this.#credentialKeys
    if (!keyring) return result
    for (const row of await this.#storage.listSigningKeys()) {
      result.scanned++
      if (sealedWithCurrentKey(row.secret, keyring)) continue
      try {
        const to = sealCredentials(unsealCredentials(row.secret, keyring, ownerOf(row.kid)), keyring, ownerOf(row.kid))
        if (await this.#storage.replaceSigningKeySecret(row.kid, row.secret, to)) result.reencrypted++
      } catch (err) {
        if (!(err instanceof CredentialsError)) throw err
        result.failed++
        this.#options.logger.error({ kid: row.kid, error: errorFields(err) }, 're-encrypt: a stored signing key cannot be read')
      }
    }
    return result
  }

  #newKey(): Omit<SigningKeyRecord, 'active' | 'retires_at'> {
    const secret = generateSigningSecret()
    const key = parseSigningSecret(secret)
    return { kid: key.kid, public_key: key.x, secret: sealCredentials({ secret }, this.#credentialKeys, ownerOf(key.kid)), created_at: this.#now() }
  }

  async #load(): Promise<void> {
    const rows = await this.#storage.listSigningKeys()
    const keys: LoadedKey[] = []
    for (const row of rows) {
      try {
        const { secret } = unsealCredentials(row.secret, this.#credentialKeys, ownerOf(row.kid))
        const key = parseSigningSecret(String(secret))
        // A row whose public key or kid does not match its secret was altered: never sign with it.
        if (key.kid !== row.kid || key.x !== row.public_key) throw new CredentialsError(`signing key ${row.kid} does not match its stored public key`)
        keys.push({ key, active: row.active, created_at: row.created_at, retires_at: row.retires_at })
      } catch (err) {
        this.#options.logger.error({ kid: row.kid, error: errorFields(err) }, 'a stored signing key cannot be read: it neither signs nor is published')
      }
    }
    this.#keys = keys
    this.#loadedAt = performance.now()
  }
}

/** `outflow.rotateSigningKey`: the body (`{ overlap? }`) checked, then a rotation with that overlap. */
export function rotateSigningKey(keyring: SigningKeyring, body: unknown): Promise<SigningKeySet> {
  const { overlap } = parseInput(RotateSigningKeySchema, body ?? {})
  return keyring.rotate(overlap)
}
