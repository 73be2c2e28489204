import type * as IoRedis from 'ioredis'
import * as v from 'valibot'
import { loadPeer } from '../load-peer.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import type { FieldSpec } from '../model/destination-type.js'
import { untilAborted } from '../net/deadline.js'
import { privateHostError, resolvePublicHost } from '../net/endpoint-guard.js'
import { SSRF_ERROR_CODE } from '../net/ssrf.js'
import { errorCodes, transportErrorKind } from '../net/transport-error.js'
import { failureOf, type DescribeError, type FailureDescription, type FailureOptions } from './failure.js'
import { sendPrepared, type PreparedBatch } from './batch-calls.js'
import { lazyConnection, sendBatchOver, sendOver } from './lazy-connection.js'
import { renderForAttempt, renderTemplate, TemplateSchema, templateSubject } from './templates.js'
import type { DeliveryMessage, DestinationTypeDefinition, Publisher, PublisherContext } from './types.js'
import { parsedBy } from './settings.js'
import { hostPort, unbracketed } from '../net/host-port.js'

/** Where to connect, parsed from `url` (credentials are kept apart so they never reach a URL). */
interface RedisAddress {
  hostname: string
  port: number
  db: number
  tls: boolean
}

const defaultDedupeWindowSeconds = 86_400
const maxKeyBytes = 1024
/** How long connecting may take; an attempt's deadline may end the wait sooner. */
const connectTimeoutMs = 10_000

/** Parse `url`; returns an error message instead of throwing so the schema can report it. */
function parseRedisUrl(text: string): RedisAddress | string {
  let url: URL
  try {
    url = new URL(text.trim())
  } catch {
    return 'must be a redis:// or rediss:// URL such as redis://redis.example.com:6379/0'
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return 'must be a redis:// or rediss:// URL'
  if (!url.hostname) return 'must name a host'
  // config is returned unmasked; the password belongs in the masked `credentials` object.
  if (url.username || url.password) return 'must not contain a user name or password: put them in credentials'
  if (url.search || url.hash) return 'must not contain query parameters or a fragment'
  const path = url.pathname.replace(/^\//, '')
  if (path !== '' && !/^\d{1,4}$/.test(path)) return 'the path can only be a database number, e.g. /0'
  return { hostname: unbracketed(url.hostname), port: url.port ? Number(url.port) : 6379, db: path === '' ? 0 : Number(path), tls: url.protocol === 'rediss:' }
}

const keyCheck = v.pipe(v.string('must be a string'), v.minLength(1, 'required'), v.maxLength(maxKeyBytes, `must be at most ${maxKeyBytes} characters`))

const ConfigSchema = v.strictObject(
  {
    url: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), parsedBy(parseRedisUrl)),
    stream_key: keyCheck,
    stream_key_template: v.optional(TemplateSchema),
    max_length: v.optional(v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'))),
    dedupe_window_seconds: v.optional(v.pipe(v.number('must be a number'), v.integer('must be an integer'), v.minValue(1, 'must be at least 1'), v.maxValue(2_592_000, 'must be at most 2592000 (30 days)'))),
  },
  'unexpected field',
)

const CredentialsSchema = v.pipe(
  v.strictObject(
    {
      username: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
      password: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'))),
    },
    'unexpected field',
  ),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return
    if (dataset.value.username !== undefined && dataset.value.password === undefined) {
      addIssue({ message: 'required with a username', path: [{ type: 'object', origin: 'value', input: dataset.value, key: 'password', value: undefined }] as never })
    }
  }),
)

type RedisConfig = v.InferOutput<typeof ConfigSchema>
type RedisCredentials = v.InferOutput<typeof CredentialsSchema>

const configFields: FieldSpec[] = [
  {
    key: 'url',
    type: 'text',
    label: 'URL',
    description: 'The Redis server: redis://host:port/db, or rediss:// for TLS. No credentials here.',
    required: true,
    sensitive: false,
    pattern: '^rediss?://[^\\s@?#]+$',
  },
  { key: 'stream_key', type: 'text', label: 'Stream key', description: 'The key of the stream entries are added to, e.g. events:orders.', required: true, sensitive: false, minlength: 1, maxlength: maxKeyBytes },
  {
    key: 'stream_key_template',
    type: 'text',
    label: 'Stream key template',
    description: 'A JMESPath expression over { id, topic, time, metadata, data } whose value is appended to the stream key after a colon, e.g. topic: events:orders:order.created. Default: none.',
    required: false,
    sensitive: false,
  },
  { key: 'max_length', type: 'number', label: 'Maximum length', description: 'Trim the stream to about this many entries (XADD MAXLEN ~). Empty: never trimmed.', required: false, sensitive: false },
  {
    key: 'dedupe_window_seconds',
    type: 'number',
    label: 'Duplicate window (seconds)',
    description: `How long an event id is remembered, so that re-sending the event adds no second entry. Default ${defaultDedupeWindowSeconds} (a day).`,
    required: false,
    sensitive: false,
    default: defaultDedupeWindowSeconds,
  },
]

const credentialFields: FieldSpec[] = [
  { key: 'username', type: 'text', label: 'Username', description: 'An ACL user (Redis 6 and later). Empty: the default user.', required: false, sensitive: false },
  { key: 'password', type: 'text', label: 'Password', description: 'The password of that user (AUTH). Empty for a server without authentication.', required: false, sensitive: true },
]

const instructions = `## Deliver events to a Redis stream

1. Pick the **stream key** (the stream is created by the first entry). Optionally a **stream key
   template** (JMESPath over \`{ id, topic, time, metadata, data }\`) gives each event its own stream:
   its value is appended after a colon, so key \`events\` and template \`topic\` put an \`order.created\`
   event in \`events:order.created\`.
2. If the server has authentication, create an ACL user for Outflow (or use the password), e.g.
   \`ACL SETUSER outflow on >password ~events* +xadd +get +set +eval +evalsha +info +client|setname +select\`:
   its keys are the stream keys and \`<stream key>:outflow-dedupe:*\`.
3. Enter the **URL** (\`redis://redis.example.com:6379/0\`, \`rediss://\` for TLS), the stream key, and
   optionally a **maximum length**: the stream is then trimmed to about that many entries.

Each event is added with \`XADD\` as one entry with the fields \`id\` (the event id), \`topic\`,
\`data\` (the event data as JSON) and \`metadata\` (a JSON object: \`event-id\`, \`topic\`,
\`timestamp\`, …). An attempt succeeds once Redis answers with the entry id.

**Duplicates.** The entry is added by a Lua script that also remembers the event id under
\`<stream key>:outflow-dedupe:<event id>\` for the **duplicate window** (a day by default), in one atomic
step: an event sent again within it (a retry after a lost answer, a replay) adds no second entry, and
the attempt records the first entry's id. Redis Cluster is not supported.

**Ordering.** A stream is one log in the order entries were added. With \`ordering: "fifo"\` on the
destination, Outflow adds the events of one ordering key one after the other, so they appear in
publish order; a stream key template can give each ordering key its own stream.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><path d="M3 8l9-4 9 4-9 4z"/><path d="M3 12l9 4 9-4"/><path d="M3 16l9 4 9-4"/></svg>'

/**
 * Add the entry unless the event id was seen within the window. KEYS: stream, dedupe key. ARGV: window (s), max
 * length ('' for none), then field/value pairs. Returns { entry id, 1 when it was already there }. A script runs
 * atomically, so two attempts of one event cannot both add it.
 */
const appendScript = `
local previous = redis.call('GET', KEYS[2])
if previous then return {previous, 1} end
local args = {KEYS[1]}
if ARGV[2] ~= '' then
  table.insert(args, 'MAXLEN') table.insert(args, '~') table.insert(args, ARGV[2])
end
table.insert(args, '*')
for i = 3, #ARGV do table.insert(args, ARGV[i]) end
local id = redis.call('XADD', unpack(args))
redis.call('SET', KEYS[2], id, 'EX', ARGV[1])
return {id, 0}
`

type AppendingRedis = IoRedis.Redis & { outflowAppend(stream: string, dedupe: string, ...args: string[]): Promise<[string, number]> }

/** The key that remembers an event id for a stream, beside the stream's own key. */
export function dedupeKey(stream: string, eventId: string): string {
  return `${stream}:outflow-dedupe:${eventId}`
}

/** Server errors by their first word; everything else goes by its socket error, else 'unknown'. */
function classifyRedisError(err: unknown, message: string): { kind: ErrorKind; prefix: string } {
  if (errorCodes(err).includes(SSRF_ERROR_CODE)) return { kind: 'ssrf', prefix: 'blocked' }
  const word = /^[A-Z]+/.exec(message)?.[0] ?? ''
  if (word === 'NOAUTH' || word === 'WRONGPASS' || word === 'NOPERM' || /invalid password|AUTH failed/i.test(message)) return { kind: 'authentication', prefix: 'authentication failed' }
  if (word === 'WRONGTYPE') return { kind: 'rejected', prefix: 'the key holds another type than a stream' }
  if (word === 'OOM' || word === 'READONLY' || word === 'NOSCRIPT') return { kind: 'rejected', prefix: 'Redis refused the entry' }
  if (word === 'MOVED' || word === 'ASK' || word === 'CROSSSLOT') return { kind: 'configuration', prefix: 'the server is a Redis Cluster node, which is not supported' }
  if (/DB index is out of range|invalid DB index/i.test(message)) return { kind: 'not_found', prefix: 'no such database' }
  if (word === 'ERR') return { kind: 'rejected', prefix: 'Redis refused the command' }
  const transport = transportErrorKind(err)
  if (transport) return { kind: transport, prefix: transport === 'timeout' ? 'Redis did not answer in time' : 'could not reach Redis' }
  if (/Connection is closed|Stream isn't writeable|Reached the max retries|ended/i.test(message)) return { kind: 'network', prefix: 'lost the connection to Redis' }
  return { kind: 'unknown', prefix: 'XADD failed' }
}

function describeRedisError(err: unknown, message: string): FailureDescription {
  const { kind, prefix } = classifyRedisError(err, message)
  return { kind, error: kind === 'ssrf' ? message : `${prefix}: ${message}` }
}

interface ClientSettings {
  address: RedisAddress
  credentials: RedisCredentials
  connectionName: string
  context: PublisherContext
}

/**
 * Open one client. With the private-network guard on, the host name is resolved and checked here and the client is
 * pinned to the checked address (ioredis takes no lookup of ours); TLS still checks the certificate against the name.
 * The client does not reconnect or queue commands on its own: a lost connection is dropped, and the next publish
 * opens a new one, checked again.
 */
async function openClient(Redis: typeof IoRedis.Redis, { address, credentials, connectionName, context }: ClientSettings): Promise<AppendingRedis> {
  const checked = await resolvePublicHost(address.hostname, context)
  const client = new Redis({
    host: checked?.[0]?.address ?? address.hostname,
    port: address.port,
    ...(credentials.username !== undefined ? { username: credentials.username } : {}),
    ...(credentials.password !== undefined ? { password: credentials.password } : {}),
    ...(address.tls ? { tls: { servername: address.hostname } } : {}),
    connectionName,
    lazyConnect: true,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: connectTimeoutMs,
  })
  // Without an 'error' listener a dropped connection would crash the host process. connect() itself only says
  // "Connection is closed": the first error (refused, TLS, WRONGPASS, a bad SELECT) is the one that says why.
  let firstError: unknown
  client.on('error', (err: unknown) => (firstError ??= err))
  client.defineCommand('outflowAppend', { numberOfKeys: 2, lua: appendScript })
  try {
    // Resolves once AUTH, CLIENT SETNAME and the ready check (INFO) passed.
    await client.connect()
    // Selected here rather than with the `db` option: ioredis only emits an 'error' when that SELECT fails, and
    // goes on writing to database 0.
    if (address.db !== 0) await client.select(address.db)
  } catch (err) {
    client.disconnect()
    throw firstError ?? err
  }
  return client as AppendingRedis
}

/** The stream key of an entry: the configured one, then the template's value after a colon. */
function streamKeyFor(config: RedisConfig, message: DeliveryMessage): string {
  if (config.stream_key_template === undefined) return config.stream_key
  const key = `${config.stream_key}:${renderTemplate(config.stream_key_template, templateSubject(message))}`
  if (key.length > maxKeyBytes) throw new Error(`the stream key would be longer than ${maxKeyBytes} characters`)
  return key
}

/** The fields of a delivery's entry: `id`, `topic`, `data`, `metadata`. */
function entryFields(message: DeliveryMessage): string[] {
  return ['id', message.id, 'topic', message.topic, 'data', JSON.stringify(message.data ?? null), 'metadata', JSON.stringify(message.metadata)]
}

/** The attempt of an entry the script added (or found added within the window). */
function appended(stream: string, [entryId, duplicate]: [string, number]): AttemptResult {
  return { ok: true, response_body: JSON.stringify({ stream, entry_id: entryId, duplicate: duplicate === 1 }) }
}

/**
 * A batch as one pipeline of the append script on one connection: one round trip, the entries added in order, each
 * answered on its own (a refused one fails alone).
 */
async function appendAll(redis: AppendingRedis, batch: { stream: string; message: DeliveryMessage }[], [window, maxLength]: [string, string], failure: FailureOptions & { describe: DescribeError }): Promise<AttemptResult[]> {
  const pipeline = redis.pipeline() as unknown as { outflowAppend(...args: string[]): unknown; exec(): Promise<[Error | null, unknown][] | null> }
  for (const { stream, message } of batch) pipeline.outflowAppend(stream, dedupeKey(stream, message.id), window, maxLength, ...entryFields(message))
  const answers = await untilAborted(pipeline.exec(), failure.signal)
  return batch.map(({ stream }, i) => {
    const [err, answer] = answers?.[i] ?? [new Error('Redis answered nothing for this entry'), undefined]
    return err ? failureOf(err, failure.describe, failure) : appended(stream, answer as [string, number])
  })
}

/** The entries of a batch with their streams; a message whose stream key template fails has its result instead. */
function prepareEntries(config: RedisConfig, messages: DeliveryMessage[]): PreparedBatch<{ stream: string; message: DeliveryMessage }> {
  const early = new Map<number, AttemptResult>()
  const sent: number[] = []
  const entries: { stream: string; message: DeliveryMessage }[] = []
  messages.forEach((message, i) => {
    const stream = renderForAttempt('stream_key_template', () => streamKeyFor(config, message))
    if (typeof stream === 'string') (sent.push(i), entries.push({ stream, message }))
    else early.set(i, stream)
  })
  return { count: messages.length, early, sent, entries }
}

/** Redis Streams: XADD (MAXLEN ~) through a script that drops an event id seen within the duplicate window. */
export const redisStreams: DestinationTypeDefinition = {
  type: 'redis_streams',
  label: 'Redis Streams',
  description: 'Add each event as an entry of a Redis stream (XADD), at most once per event id within a duplicate window.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  configRequired: true,
  credentialsRequired: false,
  packages: ['ioredis'],

  target(config) {
    const { stream_key: key, stream_key_template: template } = config as Partial<RedisConfig>
    return key && template ? `${key}:{${template}}` : key
  },

  targetUrl(config) {
    const address = parseRedisUrl(String(config.url ?? ''))
    if (typeof address === 'string') return undefined
    return `${address.tls ? 'rediss' : 'redis'}://${hostPort(address.hostname, address.port)}/${address.db}`
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config = v.parse(ConfigSchema, destination.config)
    const credentials = v.parse(CredentialsSchema, destination.credentials)
    const address = parseRedisUrl(config.url)
    if (typeof address === 'string') throw new Error(`url ${address}`)
    const { Redis } = await loadPeer<typeof IoRedis>('ioredis', 'redis_streams destinations')
    // An IP literal skips DNS, so it is judged once here; a name is checked at each connect.
    const refused = privateHostError(address.hostname, context)
    const settings: ClientSettings = { address, credentials, connectionName: `outflow-${destination.id}`.replace(/\s/g, '_'), context }
    const client = lazyConnection<AppendingRedis>({
      async open() {
        const opened = await openClient(Redis, settings)
        opened.once('end', () => client.drop(opened))
        return opened
      },
      // disconnect() rather than QUIT: every command has had its answer (or been given up on) by now, and a QUIT waits on
      // the server, which a hung connection never answers.
      close: (opened) => opened.disconnect(),
    })
    const window = String(config.dedupe_window_seconds ?? defaultDedupeWindowSeconds)
    const maxLength = config.max_length === undefined ? '' : String(config.max_length)

    const failure = (signal: AbortSignal) => ({
      signal,
      secrets: [credentials.password],
      describe: describeRedisError,
      // A connection that let the answer time out may be hung (a dead peer, a half-open socket): the next attempt
      // opens a new one rather than waiting on it too.
      drop: () => signal.aborted,
    })

    return {
      async publish(message, { signal }) {
        if (client.closed) return { ok: false, error_kind: 'configuration', error: 'the publisher is closed' }
        if (refused) return { ok: false, error_kind: 'ssrf', error: refused }
        const stream = renderForAttempt('stream_key_template', () => streamKeyFor(config, message))
        if (typeof stream !== 'string') return stream
        const send = async (redis: AppendingRedis): Promise<AttemptResult> => {
          const answer = await untilAborted(redis.outflowAppend(stream, dedupeKey(stream, message.id), window, maxLength, ...entryFields(message)), signal)
          return appended(stream, answer)
        }
        return sendOver(client, undefined, send, failure(signal))
      },

      async publishBatch(messages, { signal }) {
        if (client.closed) return messages.map(() => ({ ok: false, error_kind: 'configuration', error: 'the publisher is closed' }))
        if (refused) return messages.map(() => ({ ok: false, error_kind: 'ssrf', error: refused }))
        const ordered = messages.some((m) => m.ordering_key !== undefined)
        return sendPrepared(prepareEntries(config, messages), ordered, (batch) =>
          sendBatchOver(client, undefined, batch.length, (redis) => appendAll(redis, batch, [window, maxLength], failure(signal)), failure(signal)),
        )
      },

      close: () => client.close(),
    }
  },
}
