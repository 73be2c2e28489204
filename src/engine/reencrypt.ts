import { errorFields } from '../logger.js'
import { CredentialsError, sealCredentials, sealedWithCurrentKey, unsealCredentials } from '../credentials.js'
import { OutflowError } from '../errors.js'
import type { CredentialsReplacement, DestinationKey } from '../storage/storage.js'
import type { EngineContext } from './context.js'

/** What `reencryptCredentials` did: rows looked at, rows rewritten, rows that could not be read. */
export interface ReencryptResult {
  /** Destinations read. */
  scanned: number
  /** Destinations rewritten under the newest key. */
  reencrypted: number
  /** Destinations whose credentials no configured key could read (each is logged). */
  failed: number
  /** The engine's stored Ed25519 signing keys, sealed with the same keys (counted apart from destinations). */
  signing_keys: {
    /** Keys read. */
    scanned: number
    /** Keys rewritten under the newest key. */
    reencrypted: number
    /** Keys no configured key could read. */
    failed: number
  }
}

/**
 * Move every destination's stored credentials to the newest key (also `enc:v1:` and plain JSON rows),
 * `batchSize` rows per read and per write transaction. Rows that do not decrypt are logged and counted,
 * never rewritten. A row changed meanwhile is left to that change, which sealed it with the newest key.
 */
export async function reencryptCredentials(ctx: EngineContext, batchSize: number): Promise<ReencryptResult> {
  const keyring = ctx.credentialKeys
  if (!keyring) throw new OutflowError('validation', 'no encryption key is configured (insecurePlaintextCredentials): nothing to re-encrypt with')
  if (!Number.isInteger(batchSize) || batchSize < 1) throw new OutflowError('validation', 'batchSize must be a positive integer', { data: { batchSize: 'must be a positive integer' } })
  const result: ReencryptResult = { scanned: 0, reencrypted: 0, failed: 0, signing_keys: await ctx.signingKeys.reencrypt() }
  let after: DestinationKey | undefined
  for (;;) {
    const rows = await ctx.storage.scanCredentials(after, batchSize)
    if (rows.length === 0) break
    result.scanned += rows.length
    after = rows[rows.length - 1]
    const replacements: CredentialsReplacement[] = []
    for (const row of rows) {
      if (sealedWithCurrentKey(row.credentials, keyring)) continue
      const owner = { tenantId: row.tenant_id, destinationId: row.id }
      try {
        const to = sealCredentials(unsealCredentials(row.credentials, keyring, owner), keyring, owner)
        replacements.push({ tenant_id: row.tenant_id, id: row.id, from: row.credentials, to })
      } catch (err) {
        if (!(err instanceof CredentialsError)) throw err
        result.failed++
        ctx.options.logger.error({ tenant_id: row.tenant_id, destination_id: row.id, error: errorFields(err) }, 're-encrypt: stored credentials cannot be read')
      }
    }
    result.reencrypted += await ctx.storage.replaceCredentials(replacements)
    if (rows.length < batchSize) break
  }
  return result
}
