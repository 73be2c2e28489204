import * as v from 'valibot'

const units = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 7 * 86_400_000 } as const

/** `POST /signing-keys/rotate`: how long the rotated-out key keeps signing and stays published. */
export const RotateSigningKeySchema = v.strictObject(
  {
    overlap: v.optional(
      v.pipe(
        v.string('must be a duration like 30m, 24h, 7d or 2w'),
        v.regex(/^[1-9]\d{0,4}[mhdw]$/, 'must be a duration like 30m, 24h, 7d or 2w'),
        v.transform((text) => Number(text.slice(0, -1)) * units[text.at(-1) as keyof typeof units]),
        v.maxValue(365 * 86_400_000, 'must be at most a year'),
      ),
    ),
  },
  'unexpected field',
)

/** One public key of the key set (RFC 8037 JWK) and where it stands in a rotation. */
export const SigningJwkSchema = v.object({
  kty: v.pipe(v.literal('OKP'), v.description('Key type: an octet key pair (RFC 8037)')),
  crv: v.pipe(v.literal('Ed25519'), v.description('The curve')),
  alg: v.pipe(v.literal('EdDSA'), v.description('The signature algorithm')),
  use: v.pipe(v.literal('sig'), v.description('Signatures only')),
  kid: v.pipe(v.string(), v.description('Key id: the RFC 7638 thumbprint of the key')),
  x: v.pipe(v.string(), v.description('The public key, base64url (32 bytes)')),
  whpk: v.pipe(v.string(), v.description('The same public key in Standard Webhooks form: "whpk_" + base64')),
  status: v.pipe(v.picklist(['active', 'previous']), v.description('active signs every delivery; a previous key signs beside it until retires_at')),
  created_at: v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('When the engine generated the key (null for configured keys)')),
  retires_at: v.pipe(v.nullable(v.pipe(v.string(), v.isoTimestamp())), v.description('When a previous key stops signing and leaves the set (null: the active key)')),
})

/** The public keys of `v1a` (Ed25519) webhook signatures: a JWK Set (RFC 7517). */
export const SigningKeySetSchema = v.object({ keys: v.array(SigningJwkSchema) })
/** The public key set (`GET /signing-keys`): a JWK Set. */
export type SigningKeySet = v.InferOutput<typeof SigningKeySetSchema>
/** Body of `POST /signing-keys/rotate`. */
export type RotateSigningKeyInput = v.InferInput<typeof RotateSigningKeySchema>
