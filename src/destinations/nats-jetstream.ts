import type * as JetStream from '@nats-io/jetstream'
import type * as Nats from '@nats-io/transport-node'
import { isIP } from 'node:net'
import * as v from 'valibot'
import { loadPeer } from '../load-peer.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import type { FieldSpec } from '../model/destination-type.js'
import { untilAborted } from '../net/deadline.js'
import { privateHostError, resolvePublicHost } from '../net/endpoint-guard.js'
import { SSRF_ERROR_CODE } from '../net/ssrf.js'
import { errorCodes, transportErrorKind } from '../net/transport-error.js'
import type { FailureDescription } from './failure.js'
import { natsAuthOptions, natsCredentialFields, NatsCredentialsSchema } from './nats-credentials.js'
import { sendCalls } from './batch-calls.js'
import { lazyConnection, sendOver } from './lazy-connection.js'
import { renderForAttempt, renderTemplate, TemplateSchema, templateSubject } from './templates.js'
import type { DeliveryMessage, DestinationTypeDefinition, PublishOptions, Publisher, PublisherContext } from './types.js'
import { parsedBy } from './settings.js'
import { hostPort, readServerAddress } from '../net/host-port.js'

/** One server of `servers`: credentials are kept apart so they never reach a URL. */
interface NatsServer {
  hostname: string
  port: number
  tls: boolean
}

const maxServers = 16
/** A subject to publish to: dot-separated tokens of printable characters, no wildcards. */
const subjectPattern = /^[^\s.*>]+(\.[^\s.*>]+)*$/
/** JetStream stream names: no spaces, dots, wildcards or path separators. */
const streamPattern = /^[^\s.*>/\\]{1,255}$/
/** Header names NATS carries (printable ASCII but ':'); values with a line break would end the header block. */
const headerNamePattern = /^[!-9;-~]+$/
/** Longer than any attempt deadline: the attempt's signal decides when to stop waiting for the acknowledgement. */
const requestTimeoutMs = 120_000
/** How long one server may take to connect; an attempt's deadline may end the wait sooner. */
const connectTimeoutMs = 10_000

/** Parse `servers` (comma-separated); returns an error message instead of throwing so the schema can report it. */
function parseServers(text: string, tls = false): NatsServer[] | string {
  const entries = text.split(',').map((s) => s.trim()).filter((s) => s !== '')
  if (entries.length === 0) return 'must name at least one server'
  if (entries.length > maxServers) return `must name at most ${maxServers} servers`
  const servers: NatsServer[] = []
  for (const entry of entries) {
    const server = parseServer(entry, tls)
    if (typeof server === 'string') return `${entry}: ${server}`
    servers.push(server)
  }
  return servers
}

function parseServer(entry: string, tls: boolean): NatsServer | string {
  const read = readServerAddress(entry, ['nats', 'tls'], 'must be "host:port" or a nats:// or tls:// URL')
  if (typeof read === 'string') return read
  const { hostname, port, url } = read
  if (!url) return withPort(hostname, port, tls)
  // config is returned unmasked; credentials belong in the masked `credentials` object.
  if (url.username || url.password) return 'must not contain a user name, password or token: put them in credentials'
  if ((url.pathname !== '' && url.pathname !== '/') || url.search || url.hash) return 'must not contain a path, query parameters or a fragment'
  return withPort(hostname, port, tls || url.protocol === 'tls:')
}

function withPort(hostname: string, port: string | undefined, tls: boolean): NatsServer | string {
  const number = port === undefined ? 4222 : Number(port)
  if (number < 1 || number > 65535) return 'port must be between 1 and 65535'
  return { hostname, port: number, tls }
}

const ConfigSchema = v.strictObject(
  {
    servers: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), parsedBy(parseServers)),
    subject: v.pipe(
      v.string('must be a string'),
      v.minLength(1, 'required'),
      v.maxLength(255, 'must be at most 255 characters'),
      v.regex(subjectPattern, 'must be a subject such as events.orders: dot-separated tokens, no spaces or wildcards'),
    ),
    subject_template: v.optional(TemplateSchema),
    stream: v.optional(v.pipe(v.string('must be a string'), v.regex(streamPattern, 'must be a stream name: no spaces, ".", "*", ">", "/" or "\\"'))),
    tls: v.optional(v.boolean('must be a boolean')),
  },
  'unexpected field',
)

type NatsConfig = v.InferOutput<typeof ConfigSchema>

const configFields: FieldSpec[] = [
  {
    key: 'servers',
    type: 'text',
    label: 'Servers',
    description: 'The NATS servers, comma-separated: "host:port" or nats:// / tls:// URLs, e.g. nats-1.example.com:4222, nats-2.example.com:4222. No credentials here.',
    required: true,
    sensitive: false,
  },
  {
    key: 'subject',
    type: 'text',
    label: 'Subject',
    description: 'The subject messages are published to, e.g. events.orders. A JetStream stream must capture it (with a template: capture events.orders.>).',
    required: true,
    sensitive: false,
    maxlength: 255,
    pattern: '^[^\\s.*>]+(\\.[^\\s.*>]+)*$',
  },
  {
    key: 'subject_template',
    type: 'text',
    label: 'Subject template',
    description: 'A JMESPath expression over { id, topic, time, metadata, data } whose value is appended to the subject after a dot, e.g. topic: events.orders.order.created. Default: none.',
    required: false,
    sensitive: false,
  },
  {
    key: 'stream',
    type: 'text',
    label: 'Stream',
    description: 'Optional: the stream that must store the messages. A message stored by another stream (or none) is a failed attempt.',
    required: false,
    sensitive: false,
  },
  { key: 'tls', type: 'checkbox', label: 'Use TLS', description: 'Connect with TLS. A tls:// server uses TLS whatever this says.', required: false, sensitive: false, default: false },
]

const instructions = `## Deliver events to NATS JetStream

1. Create a **stream** whose subjects capture the subject Outflow publishes to (for example a
   stream \`ORDERS\` with subjects \`events.>\`). Outflow never creates streams. Its
   **duplicate window** (2 minutes by default) decides how long a re-sent event is recognised.
2. Create a user for Outflow allowed to publish to that subject (and to receive the
   acknowledgement on \`_INBOX.>\`), with a password, a token, an NKey or a \`.creds\` file.
3. Enter the **servers** (\`nats.example.com:4222\`, several separated by commas, or \`tls://\` URLs), the
   **subject**, and optionally a **subject template** (JMESPath over \`{ id, topic, time, metadata, data }\`)
   whose value is appended to the subject: with subject \`events\` and template \`topic\`, an
   \`order.created\` event goes to \`events.order.created\`. Optionally name the **stream** that must store them.

Each event is published as one message: the body is the event \`data\` as JSON, the event metadata
(\`event-id\`, \`topic\`, \`timestamp\`, …) is sent as message headers, and \`Nats-Msg-Id\` is the event
id, so the stream drops a re-sent event within its duplicate window. An attempt succeeds once the
stream acknowledges the message (the acknowledgement, with the stream and sequence, is recorded as the
response).

**Ordering.** A stream stores messages in the order it acknowledges them. With \`ordering: "fifo"\` on
the destination, Outflow publishes the events of one ordering key one after the other, so they are
stored in publish order; a subject template can give each ordering key its own subject.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><path d="M4 4h16v12h-5l-3 4v-4H4z"/><path d="M8 8v4l8-4v4"/></svg>'

/** Which NATS and JetStream errors mean what; anything else goes by its socket error, else 'unknown'. */
function classifyNatsError(err: unknown, message: string): { kind: ErrorKind; prefix: string } {
  const e = (err ?? {}) as { name?: unknown; code?: unknown; cause?: unknown }
  const name = typeof e.name === 'string' ? e.name : ''
  const causeName = (e.cause as { name?: unknown } | undefined)?.name
  if (errorCodes(err).includes(SSRF_ERROR_CODE)) return { kind: 'ssrf', prefix: 'blocked' }
  if (name === 'AuthorizationError' || name === 'UserAuthenticationExpiredError' || /Authorization Violation|authentication/i.test(message)) {
    return { kind: 'authentication', prefix: 'authentication failed' }
  }
  if (name === 'PermissionViolationError' || /Permissions Violation/i.test(message)) return { kind: 'authentication', prefix: 'not allowed' }
  // A publish nobody answers: no stream captures the subject (the client calls it "jetstream is not enabled").
  if (name === 'JetStreamNotEnabled' || name === 'NoResponders' || causeName === 'NoResponders') {
    return { kind: 'not_found', prefix: 'no JetStream stream captures the subject (or JetStream is not enabled)' }
  }
  if (name === 'JetStreamApiError' || name === 'StreamNotFoundError') {
    const code = (err as { code?: number }).code
    // 10060: the stream named in `stream` is not the one that captures the subject.
    return code === 10060 ? { kind: 'not_found', prefix: 'the stream does not store this subject' } : { kind: 'rejected', prefix: 'the stream refused the message' }
  }
  if (name === 'TimeoutError' || causeName === 'TimeoutError') return { kind: 'timeout', prefix: 'the server did not acknowledge in time' }
  if (/max_payload|maximum payload|exceeds/i.test(message)) return { kind: 'rejected', prefix: 'the server refused the message' }
  if (name === 'InvalidSubjectError') return { kind: 'configuration', prefix: 'invalid subject' }
  const transport = transportErrorKind(err)
  if (transport) return { kind: transport, prefix: transport === 'timeout' ? 'the server did not answer in time' : 'could not reach the server' }
  if (/tls/i.test(message)) return { kind: 'tls', prefix: 'TLS failed' }
  if (name === 'ConnectionError' || name === 'ClosedConnectionError' || name === 'ProtocolError' || name === 'RequestError') return { kind: 'network', prefix: 'lost the connection to the server' }
  return { kind: 'unknown', prefix: 'publish failed' }
}

function describeNatsError(err: unknown, message: string): FailureDescription {
  const { kind, prefix } = classifyNatsError(err, message)
  return { kind, error: kind === 'ssrf' ? message : `${prefix}: ${message}` }
}

interface Link {
  nc: Nats.NatsConnection
  js: JetStream.JetStreamClient
}

interface LinkSettings {
  servers: NatsServer[]
  options: Partial<Nats.ConnectionOptions>
  context: PublisherContext
}

/**
 * Connect to the first server that answers. With the private-network guard on, each name is resolved and checked
 * here and the client is given the checked addresses (it cannot be handed a lookup of ours), and the servers a
 * cluster announces are ignored, since they were never checked. The client does not reconnect on its own: a lost
 * connection is dropped and the next publish opens a new one, checked again.
 */
async function connectFirst(nats: typeof Nats, jetstream: typeof JetStream, { servers, options, context }: LinkSettings, signal: AbortSignal): Promise<Link> {
  let lastError: unknown
  for (const server of servers) {
    if (signal.aborted) throw signal.reason
    try {
      const checked = await resolvePublicHost(server.hostname, context)
      const addresses = checked ? checked.map((a) => a.address) : [server.hostname]
      const connecting = nats.connect({
        ...options,
        servers: addresses.map((address) => hostPort(address, server.port)),
        // An address in place of the name: TLS still checks the certificate against the name (the client hands
        // these options to tls.connect, though its type does not list them).
        tls: server.tls ? ((isIP(server.hostname) ? {} : { servername: server.hostname }) as Nats.ConnectionOptions['tls']) : null,
        ignoreClusterUpdates: !context.allowPrivateNetworks,
        reconnect: false,
        timeout: connectTimeoutMs,
      })
      // A connect given up on is closed once it completes.
      signal.addEventListener('abort', () => void connecting.then((late) => late.close(), () => {}), { once: true })
      const nc = await untilAborted(connecting, signal)
      return { nc, js: jetstream.jetstream(nc, { timeout: requestTimeoutMs }) }
    } catch (err) {
      if (signal.aborted) throw err
      lastError = err
    }
  }
  throw lastError
}

/**
 * Metadata as message headers, with Nats-Msg-Id set by the client from `msgID`. Names NATS cannot carry are skipped,
 * and so are `Nats-*` names: JetStream acts on them (Nats-Rollup purges the stream, Nats-Expected-* guards, Nats-TTL).
 */
function messageHeaders(nats: typeof Nats, metadata: Record<string, string>): Nats.MsgHdrs {
  const headers = nats.headers()
  for (const [name, value] of Object.entries(metadata)) {
    if (headerNamePattern.test(name) && !/^nats-/i.test(name) && !/[\r\n]/.test(value)) headers.set(name, value)
  }
  headers.set('Content-Type', 'application/json')
  return headers
}

/** The subject of a message: the configured one, then the template's value after a dot (an invalid one is a configuration failure). */
function subjectFor(config: NatsConfig, message: DeliveryMessage): string {
  if (config.subject_template === undefined) return config.subject
  const subject = `${config.subject}.${renderTemplate(config.subject_template, templateSubject(message))}`
  if (!subjectPattern.test(subject) || subject.length > 255) throw new Error(`the subject would be ${JSON.stringify(subject.slice(0, 300))}, which is not a subject`)
  return subject
}

/** A batch: all published at once on the connection, each acknowledged on its own; an ordered one one after the other. */
function publishEach(publisher: Publisher, messages: DeliveryMessage[], options: PublishOptions): Promise<AttemptResult[]> {
  if (messages.every((m) => m.ordering_key === undefined)) return Promise.all(messages.map((m) => publisher.publish(m, options)))
  return sendCalls(messages, messages.map((_, i): [number, number] => [i, i + 1]), async ([m]) => [await publisher.publish(m!, options)], true)
}

/** NATS JetStream: publish with the stream's acknowledgement; Nats-Msg-Id = event id. */
export const natsJetstream: DestinationTypeDefinition = {
  type: 'nats_jetstream',
  label: 'NATS JetStream',
  description: 'Publish events to a NATS JetStream stream, acknowledged by the stream and deduplicated by event id.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: natsCredentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: NatsCredentialsSchema,
  configRequired: true,
  credentialsRequired: false,
  packages: ['@nats-io/transport-node', '@nats-io/jetstream'],

  target(config) {
    const { subject, subject_template: template, stream } = config as Partial<NatsConfig>
    const where = template && subject ? `${subject}.{${template}}` : subject
    return stream && where ? `${stream}/${where}` : (where ?? stream)
  },

  targetUrl(config) {
    const servers = parseServers(String(config.servers ?? ''), config.tls === true)
    if (typeof servers === 'string') return undefined
    const first = servers[0]!
    return `${first.tls ? 'tls' : 'nats'}://${hostPort(first.hostname, first.port)}`
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config = v.parse(ConfigSchema, destination.config)
    const credentials = v.parse(NatsCredentialsSchema, destination.credentials)
    const servers = parseServers(config.servers, config.tls === true)
    if (typeof servers === 'string') throw new Error(`servers ${servers}`)
    const nats = await loadPeer<typeof Nats>('@nats-io/transport-node', 'nats_jetstream destinations')
    const jetstream = await loadPeer<typeof JetStream>('@nats-io/jetstream', 'nats_jetstream destinations')
    // IP literals skip DNS, so they are judged once here; names are checked at each connect.
    const refused = servers.map((s) => privateHostError(s.hostname, context)).find((why) => why !== undefined)
    const settings: LinkSettings = { servers, context, options: { name: `outflow ${destination.id}`, ...natsAuthOptions(nats, credentials) } }
    const link = lazyConnection<Link>({
      async open(signal) {
        const opened = await connectFirst(nats, jetstream, settings, signal)
        void opened.nc.closed().then(() => link.drop(opened))
        return opened
      },
      // close() rather than drain(): every publish has had its acknowledgement (or given up) by now, and a drain
      // waits on the server, which a hung connection never answers.
      close: (opened) => opened.nc.close(),
    })
    const secrets = [credentials.password, credentials.token, credentials.nkey_seed, credentials.creds]

    const publisher: Publisher = {
      async publish(message, { signal }) {
        if (link.closed) return { ok: false, error_kind: 'configuration', error: 'the publisher is closed' }
        if (refused) return { ok: false, error_kind: 'ssrf', error: refused }
        const subject = renderForAttempt('subject_template', () => subjectFor(config, message))
        if (typeof subject !== 'string') return subject
        const send = async ({ js }: Link): Promise<AttemptResult> => {
          const body = new TextEncoder().encode(JSON.stringify(message.data ?? null))
          const ack = await untilAborted(
            js.publish(subject, body, {
              msgID: message.id,
              headers: messageHeaders(nats, message.metadata),
              timeout: requestTimeoutMs,
              ...(config.stream ? { expect: { streamName: config.stream } } : {}),
            }),
            signal,
          )
          return { ok: true, response_body: JSON.stringify({ stream: ack.stream, seq: ack.seq, duplicate: ack.duplicate, subject }) }
        }
        return sendOver(link, undefined, send, {
          signal,
          secrets,
          describe: describeNatsError,
          // A connection that let the acknowledgement time out may be hung (a dead peer, a half-open socket): the next
          // attempt opens a new one rather than waiting on it too.
          drop: () => signal.aborted,
        })
      },

      publishBatch: (messages, options) => publishEach(publisher, messages, options),

      close: () => link.close(),
    }
    return publisher
  },
}
