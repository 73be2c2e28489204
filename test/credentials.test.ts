import { createDecipheriv, hkdfSync } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { CredentialsError, createKeyring, sealCredentials, sealedWithCurrentKey, unsealCredentials } from '../src/credentials.js'
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
})
