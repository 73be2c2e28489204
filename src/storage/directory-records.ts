// The records of tenants, destinations, portal sign-in codes and signing keys (see Storage's methods for them).
import type { JsonObject } from '../model/common.js'
import type { DeliverySettings } from '../model/delivery-settings.js'
import type { PayloadPolicy } from '../model/payload-policy.js'
import type { BatchPolicy } from '../model/batch-policy.js'
import type { DestinationTypeName } from '../model/destination-type.js'
import type { KeysetRequest } from '../model/pagination.js'

export interface TenantRecord {
  id: string
  metadata: JsonObject
  created_at: Date
  updated_at: Date
}

export interface TenantSummary {
  destinations_count: number
  topics: string[]
}

export interface TenantListRequest extends KeysetRequest {
  createdGte?: Date
  createdLte?: Date
}

export interface DestinationRecord {
  tenant_id: string
  id: string
  type: DestinationTypeName
  topics: string[]
  filter: JsonObject | null
  config: JsonObject
  /** Sealed credentials (src/credentials.ts): `enc:v2:` AES-256-GCM ciphertext; older rows `enc:v1:` or plain JSON. */
  credentials: string
  delivery_metadata: Record<string, string> | null
  metadata: JsonObject | null
  disabled_at: Date | null
  created_at: Date
  updated_at: Date
  /** Consecutive failed attempts (reset by a success or enable). */
  consecutive_failures: number
  /** The destination's own delivery policy (retries, timeout); null or absent follows the engine's options. */
  delivery?: DeliverySettings | null
  /** Full or thin deliveries; null or absent follows the type's default. */
  payload?: PayloadPolicy | null
  /** Batched delivery; null or absent: one event per request. */
  batch?: BatchPolicy | null
}

export interface DestinationKey {
  tenant_id: string
  id: string
}

export interface StoredCredentials extends DestinationKey {
  credentials: string
}

export interface CredentialsReplacement extends DestinationKey {
  from: string
  to: string
}

/** What matching needs of a destination. */
export type PublishTarget = Pick<DestinationRecord, 'id' | 'topics' | 'filter' | 'disabled_at' | 'delivery'>

/** A portal sign-in code: the SHA-256 (hex) of the code, for one tenant (by creation time, like tokens), until `expires_at`. */
export interface PortalCodeRecord {
  code_hash: string
  tenant_id: string
  tenant_created_at: Date
  expires_at: Date
}

/** A stored Ed25519 signing key: `secret` is the sealed `whsk_` key, `public_key` the raw key (base64url). */
export interface SigningKeyRecord {
  kid: string
  public_key: string
  secret: string
  /** The key that signs; previous keys sign too until `retires_at`. */
  active: boolean
  created_at: Date
  retires_at: Date | null
}
