import type * as Nats from '@nats-io/transport-node'
import * as v from 'valibot'
import type { FieldSpec } from '../model/destination-type.js'

// How a nats_jetstream publisher authenticates: a user and password, a token, an NKey seed, or a .creds file
// (a user JWT and its seed), kept in the destination's encrypted credentials; none for a server without auth.

/**
 * The user JWT and seed of a .creds file. Read with whitespace anywhere (the client's own parser needs the file's
 * line breaks, which a one-line form field loses).
 */
function parseCreds(text: string): { jwt: string; seed: string } | undefined {
  const jwt = /-+BEGIN NATS USER JWT-+\s*([A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+\.[A-Za-z0-9_=-]+)\s*-+END NATS USER JWT-+/.exec(text)?.[1]
  const seed = /-+BEGIN USER NKEY SEED-+\s*(SU[A-Z2-7]{56})\s*-+END USER NKEY SEED-+/.exec(text)?.[1]
  return jwt && seed ? { jwt, seed } : undefined
}

/** User/password, a token, an NKey seed, or a .creds file (user JWT and seed): one of them, or none for a server without auth. */
export const NatsCredentialsSchema = v.pipe(
  v.strictObject(
    {
      username: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      password: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      token: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      nkey_seed: v.optional(v.pipe(v.string('must be a string'), v.regex(/^SU[A-Z2-7]{56}$/, 'must be a user NKey seed (58 characters starting with SU)'))),
      creds: v.optional(
        v.pipe(
          v.string('must be a string'),
          v.check((text) => parseCreds(text) !== undefined, 'must be the contents of a .creds file: the user JWT and its NKey seed'),
        ),
      ),
    },
    'unexpected field',
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    const c = dataset.value
    const path = (key: string) => [{ type: 'object', origin: 'value', input: c, key, value: undefined }] as never
    if ((c.username === undefined) !== (c.password === undefined)) addIssue({ message: 'username and password go together', path: path(c.username === undefined ? 'username' : 'password') })
    const methods = [c.username ?? c.password, c.token, c.nkey_seed, c.creds].filter((m) => m !== undefined).length
    if (methods > 1) addIssue({ message: 'give one of username/password, token, nkey_seed or creds', path: path('token') })
  }),
)

export type NatsCredentials = v.InferOutput<typeof NatsCredentialsSchema>

/** The form fields of `NatsCredentialsSchema`. */
export const natsCredentialFields: FieldSpec[] = [
  { key: 'username', type: 'text', label: 'Username', description: 'A user of the server (with password). Leave all credentials empty for a server without authentication.', required: false, sensitive: false },
  { key: 'password', type: 'text', label: 'Password', description: 'The password of that user.', required: false, sensitive: true },
  { key: 'token', type: 'text', label: 'Token', description: 'An authentication token, instead of a user.', required: false, sensitive: true },
  { key: 'nkey_seed', type: 'text', label: 'NKey seed', description: 'A user NKey seed (SU…), instead of a user or token.', required: false, sensitive: true },
  { key: 'creds', type: 'text', label: 'Credentials file', description: 'The contents of a .creds file (user JWT and NKey seed), for servers in operator mode.', required: false, sensitive: true },
]

/** The client options that authenticate with the stored credentials. */
export function natsAuthOptions(nats: typeof Nats, credentials: NatsCredentials): Partial<Nats.ConnectionOptions> {
  if (credentials.username !== undefined) return { user: credentials.username, pass: credentials.password }
  if (credentials.token !== undefined) return { token: credentials.token }
  if (credentials.nkey_seed !== undefined) return { authenticator: nats.nkeyAuthenticator(new TextEncoder().encode(credentials.nkey_seed)) }
  const creds = credentials.creds === undefined ? undefined : parseCreds(credentials.creds)
  if (creds) return { authenticator: nats.jwtAuthenticator(creds.jwt, new TextEncoder().encode(creds.seed)) }
  return {}
}
