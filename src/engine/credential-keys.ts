import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { createKeyring, generateEncryptionKey, type Keyring } from '../credentials.js'
import { OutflowError } from '../errors.js'
import type { ResolvedOptions } from '../options.js'
import type { Storage } from '../storage/storage.js'

/**
 * The keys credentials are sealed with: `encryptionKey` (then `previousEncryptionKeys`) when given;
 * for SQLite without one, a generated key kept in `<database>.key` (an in-process key for `:memory:`).
 * Postgres has no place beside the data to keep a key, so it needs `encryptionKey`. `undefined` only
 * when the host chose `insecurePlaintextCredentials`.
 *
 * @example
 * credentialKeys(options, await sqlite({ path: './outflow.db' })()) // reads or creates ./outflow.db.key
 */
export function credentialKeys(options: ResolvedOptions, storage: Storage): Keyring | undefined {
  if (options.insecurePlaintextCredentials) {
    options.logger.warn({}, 'insecurePlaintextCredentials: destination credentials are stored unencrypted (development only)')
    return undefined
  }
  const previous = options.previousEncryptionKeys
  if (options.encryptionKey) return createKeyring([options.encryptionKey, ...previous])
  if (storage.dialect === 'sqlite' && storage.path !== undefined) {
    const inMemory = storage.path === ':memory:' || storage.path === ''
    return createKeyring([inMemory ? generateEncryptionKey() : readOrCreateKeyFile(`${storage.path}.key`, options), ...previous])
  }
  throw new OutflowError(
    'validation',
    `invalid Outflow options: ${storage.dialect} storage needs an encryptionKey to encrypt destination credentials at rest (32 random bytes, e.g. \`openssl rand -base64 32\`); insecurePlaintextCredentials: true stores them unencrypted, for development only`,
    { data: { encryptionKey: `required with ${storage.dialect} storage` } },
  )
}

/**
 * The key in `path`, created (mode 0600) when missing. Creation writes a temporary file and links it
 * into place, so two processes starting at once agree on one key and neither reads a half-written file.
 */
function readOrCreateKeyFile(path: string, options: ResolvedOptions): string {
  try {
    return readKeyFile(path, options)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
  }
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`
  writeFileSync(temporary, `${generateEncryptionKey()}\n`, { mode: 0o600, flag: 'wx' })
  try {
    linkSync(temporary, path)
    options.logger.warn({ path }, 'generated the credentials encryption key: back it up with the database, which cannot be read without it')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err
  } finally {
    unlinkSync(temporary)
  }
  return readKeyFile(path, options)
}

function readKeyFile(path: string, options: ResolvedOptions): string {
  const key = readFileSync(path, 'utf8').trim()
  if (key.length < 16) throw new OutflowError('validation', `the credentials key file ${path} holds no key (expected at least 16 characters)`)
  if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0)
    options.logger.warn({ path }, 'the credentials key file is readable by other users: chmod 600 it')
  return key
}
