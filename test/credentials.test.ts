import { createDecipheriv, hkdfSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CredentialsError, createKeyring, generateEncryptionKey, sealCredentials, sealedWithCurrentKey, unsealCredentials } from '../src/credentials.js'
import { sealV1 } from './support/legacy-credentials.js'

const oldKey = 'old-encryption-key-0123456789'
const newKey = 'new-encryption-key-0123456789'
const acme = { tenantId: 'acme', destinationId: 'des_1' }
const credentials = { secret: 'whsec_abc', password: 'p@ss' }

describe('credentials at rest', () => {
  it('seals as enc:v2:<key id>: and reads back as the same destination', () => {
    const keyring = createKeyring([newKey])
    const stored = sealCredentials(credentials, keyring, acme)
    expect(stored).toMatch(/^enc:v2:[A-Za-z0-9_-]{8}:/)
    expect(stored).not.toContain('p@ss')
    expect(unsealCredentials(stored, keyring, acme)).toEqual(credentials)
    expect(sealedWithCurrentKey(stored, keyring)).toBe(true)
  })

  it('derives the AES key with HKDF-SHA256 and binds the ciphertext to its tenant and destination (AAD)', () => {
    const keyring = createKeyring([newKey])
    const stored = sealCredentials(credentials, keyring, acme)
    const [, , keyId, payload] = stored.split(':') as [string, string, string, string]
    const [iv, tag, data] = payload.split('.').map((p) => Buffer.from(p, 'base64url')) as [Buffer, Buffer, Buffer]
    expect(keyId).toBe(Buffer.from(hkdfSync('sha256', newKey, 'outflow/credentials', 'key id', 6)).toString('base64url'))
    const key = Buffer.from(hkdfSync('sha256', newKey, 'outflow/credentials', 'aes-256-gcm v2', 32))
    const decipher = createDecipheriv('aes-256-gcm', key, iv)
    decipher.setAuthTag(tag)
    decipher.setAAD(Buffer.from(JSON.stringify(['outflow.credentials', keyId, 'acme', 'des_1'])))
    expect(JSON.parse(Buffer.concat([decipher.update(data), decipher.final()]).toString('utf8'))).toEqual(credentials)
  })

  it.each([
    ['another destination of the tenant', { tenantId: 'acme', destinationId: 'des_2' }],
    ['the same destination id in another tenant', { tenantId: 'globex', destinationId: 'des_1' }],
  ])('refuses a ciphertext read as %s', (_, owner) => {
    const keyring = createKeyring([newKey])
    const stored = sealCredentials(credentials, keyring, acme)
    expect(() => unsealCredentials(stored, keyring, owner)).toThrow(CredentialsError)
  })

  it('encrypts with the newest key and still decrypts with older ones (rotation)', () => {
    const before = sealCredentials(credentials, createKeyring([oldKey]), acme)
    const rotated = createKeyring([newKey, oldKey])
    expect(unsealCredentials(before, rotated, acme)).toEqual(credentials)
    expect(sealedWithCurrentKey(before, rotated)).toBe(false)
    const after = sealCredentials(credentials, rotated, acme)
    expect(after.split(':')[2]).not.toBe(before.split(':')[2])
    expect(unsealCredentials(after, createKeyring([newKey]), acme)).toEqual(credentials)
  })

  it('names the missing key when a ciphertext was written with a key no longer configured', () => {
    const stored = sealCredentials(credentials, createKeyring([oldKey]), acme)
    const keyId = stored.split(':')[2]
    expect(() => unsealCredentials(stored, createKeyring([newKey]), acme)).toThrow(new RegExp(`key ${keyId}`))
  })

  it('reads enc:v1 rows with any configured key, and plain JSON rows (the migration path)', () => {
    const rotated = createKeyring([newKey, oldKey])
    expect(unsealCredentials(sealV1(credentials, oldKey), rotated, acme)).toEqual(credentials)
    expect(unsealCredentials(JSON.stringify(credentials), rotated, acme)).toEqual(credentials)
    expect(() => unsealCredentials(sealV1(credentials, 'unknown-key-0123456789'), rotated, acme)).toThrow(CredentialsError)
  })

  it('without a keyring writes plain JSON and refuses encrypted rows', () => {
    expect(sealCredentials(credentials, undefined, acme)).toBe(JSON.stringify(credentials))
    expect(() => unsealCredentials(sealCredentials(credentials, createKeyring([newKey]), acme), undefined, acme)).toThrow(CredentialsError)
  })

  it('seals with a fresh random IV of 12 bytes each time', () => {
    const keyring = createKeyring([newKey])
    const [a, b] = [sealCredentials(credentials, keyring, acme), sealCredentials(credentials, keyring, acme)]
    expect(a).not.toBe(b)
    const iv = (stored: string) => Buffer.from(stored.split(':')[3]!.split('.')[0]!, 'base64url')
    expect(iv(a)).toHaveLength(12)
    expect(iv(a).equals(iv(b))).toBe(false)
  })

  it('gives each key its own id, the same for the same key', () => {
    const id = (key: string) => sealCredentials(credentials, createKeyring([key]), acme).split(':')[2]
    expect(id(newKey)).toBe(id(newKey))
    expect(id(newKey)).not.toBe(id(oldKey))
  })

  it('refuses a keyring without keys', () => {
    expect(() => createKeyring([])).toThrow(new CredentialsError('a keyring needs at least one key'))
  })

  it('generates encryption keys of 32 random bytes, base64url', () => {
    const key = generateEncryptionKey()
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(Buffer.from(key, 'base64url')).toHaveLength(32)
    expect(generateEncryptionKey()).not.toBe(key)
  })

  it('says which destination a ciphertext does not authenticate as, keeping the cause', () => {
    const keyring = createKeyring([newKey])
    const stored = sealCredentials(credentials, keyring, acme)
    const err = thrown(() => unsealCredentials(stored, keyring, { tenantId: 'acme', destinationId: 'des_2' }))
    expect(err).toBeInstanceOf(CredentialsError)
    expect(err.name).toBe('CredentialsError')
    expect(err.message).toBe('stored credentials of destination des_2 do not authenticate: written for another destination, or altered')
    expect(err.cause).toBeInstanceOf(Error)
  })

  it('refuses an altered ciphertext, tag or IV', () => {
    const keyring = createKeyring([newKey])
    const stored = sealCredentials(credentials, keyring, acme)
    const [prefix, payload] = [stored.slice(0, stored.lastIndexOf(':') + 1), stored.slice(stored.lastIndexOf(':') + 1)]
    const parts = payload.split('.')
    for (let i = 0; i < 3; i++) {
      const altered = parts.map((p, j) => (j === i ? Buffer.from(Buffer.from(p, 'base64url').map((byte, k) => (k === 0 ? byte ^ 1 : byte))).toString('base64url') : p))
      expect(() => unsealCredentials(prefix + altered.join('.'), keyring, acme)).toThrow(/do not authenticate/)
    }
  })

  it.each([
    ['no separators', 'abc'],
    ['no data part', 'abc.def'],
    ['an empty IV', '.def.ghi'],
    ['an empty tag', 'abc..ghi'],
  ])('refuses a malformed v2 payload with %s', (_, payload) => {
    const keyring = createKeyring([newKey])
    const keyId = sealCredentials(credentials, keyring, acme).split(':')[2]
    const err = thrown(() => unsealCredentials(`enc:v2:${keyId}:${payload}`, keyring, acme))
    expect(err).toBeInstanceOf(CredentialsError)
    expect((err.cause as Error).message).toBe('stored credentials are malformed')
  })

  it('names the key a v2 row asks for, or "?" when it names none', () => {
    const keyring = createKeyring([newKey])
    const keyId = sealCredentials(credentials, keyring, acme).split(':')[2]!
    expect(() => unsealCredentials('enc:v2::abc.def.ghi', keyring, acme)).toThrow(
      new CredentialsError('stored credentials are encrypted with key ?, which is not configured (encryptionKey, previousEncryptionKeys)'),
    )
    // Without the colon after it, the key id is not read as a configured one.
    expect(() => unsealCredentials(`enc:v2:${keyId}x`, keyring, acme)).toThrow(/^stored credentials are encrypted with key /)
  })

  it('refuses an encrypted row of either version without a keyring, and a v1 row no key decrypts', () => {
    expect(() => unsealCredentials(sealV1(credentials, oldKey), undefined, acme)).toThrow(new CredentialsError('stored credentials are encrypted but the engine has no encryption key'))
    expect(() => unsealCredentials(sealV1(credentials, oldKey), createKeyring([newKey]), acme)).toThrow(new CredentialsError('stored enc:v1 credentials do not decrypt with any configured key'))
    expect(() => unsealCredentials('enc:v1:abc', createKeyring([oldKey]), acme)).toThrow(new CredentialsError('stored enc:v1 credentials do not decrypt with any configured key'))
  })

  it('reads a v1 row with a key after the first of the ring', () => {
    expect(unsealCredentials(sealV1(credentials, oldKey), createKeyring([newKey, 'third-key-0123456789', oldKey]), acme)).toEqual(credentials)
  })

  it('refuses a row that is neither encrypted nor JSON, keeping the parse error as its cause', () => {
    const err = thrown(() => unsealCredentials('enc:v3:abc', createKeyring([newKey]), acme))
    expect(err).toEqual(new CredentialsError('stored credentials are neither encrypted nor JSON'))
    expect(err.cause).toBeInstanceOf(SyntaxError)
  })

  it('tells only a v2 row under the newest key as current', () => {
    const keyring = createKeyring([newKey, oldKey])
    expect(sealedWithCurrentKey(JSON.stringify(credentials), keyring)).toBe(false)
    expect(sealedWithCurrentKey(sealV1(credentials, newKey), keyring)).toBe(false)
    expect(sealedWithCurrentKey(sealCredentials(credentials, createKeyring([oldKey]), acme), keyring)).toBe(false)
    expect(sealedWithCurrentKey(sealCredentials(credentials, keyring, acme), keyring)).toBe(true)
  })
})

/** The error `call` throws. */
function thrown(call: () => unknown): Error {
  try {
    call()
  } catch (err) {
    return err as Error
  }
  throw new Error('expected the call to throw')
}
