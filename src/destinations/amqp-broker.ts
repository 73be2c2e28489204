import type * as Amqp from 'amqplib'
import * as v from 'valibot'
import { guardedLookup, SSRF_ERROR_CODE } from '../net/ssrf.js'
import { transportErrorKind } from '../net/transport-error.js'
import { privateHostError } from '../net/endpoint-guard.js'
import { loadPeer } from '../load-peer.js'
import { untilAborted } from '../net/deadline.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import { failureOf, type FailureDescription } from './failure.js'
import { lazyConnection, type LazyConnection } from './lazy-connection.js'
import { jsonBody, type DeliveryMessage, type DestinationTypeDefinition, type Publisher, type PublisherContext } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { parsedBy } from './settings.js'
import { hostPort, readServerAddress } from '../net/host-port.js'

/** Where to connect, parsed from `server_url` + `tls` (credentials are kept apart so they never reach a URL). */
interface BrokerAddress {
  protocol: 'amqp' | 'amqps'
  hostname: string
  port: number
  vhost: string
}

/** Parse `server_url`; returns an error message instead of throwing so the schema can report it. */
function parseServerUrl(serverUrl: string, tls = false): BrokerAddress | string {
  const read = readServerAddress(serverUrl.trim(), ['amqp', 'amqps'], 'must be "host:port" or an amqp:// or amqps:// URL')
  if (typeof read === 'string') return read
  const { hostname, url } = read
  if (!url) {
    const protocol = tls ? 'amqps' : 'amqp'
    const port = read.port === undefined ? (tls ? 5671 : 5672) : Number(read.port)
    if (port < 1 || port > 65535) return 'port must be between 1 and 65535'
    return { protocol, hostname, port, vhost: '/' }
  }
  // config is returned unmasked; credentials belong in the masked `credentials` object.
  if (url.username || url.password) return 'must not contain a user name or password: put them in credentials'
  if (url.search || url.hash) return 'must not contain query parameters or a fragment'
  const path = url.pathname.replace(/^\//, '')
  if (path.includes('/')) return 'the virtual host must be one path segment (encode "/" as %2F)'
  const protocol = url.protocol === 'amqps:' || tls ? 'amqps' : 'amqp'
  const port = url.port ? Number(url.port) : protocol === 'amqps' ? 5671 : 5672
  return { protocol, hostname, port, vhost: path === '' ? '/' : decodeURIComponent(path) }
}

const ConfigSchema = v.strictObject(
  {
    server_url: v.pipe(v.string('must be a string'), v.minLength(1, 'required'), parsedBy(parseServerUrl)),
    exchange: v.optional(v.pipe(v.string('must be a string'), v.maxLength(255, 'must be at most 255 characters'))),
    routing_key: v.optional(v.pipe(v.string('must be a string'), v.maxLength(255, 'must be at most 255 characters'))),
    tls: v.optional(v.boolean('must be a boolean')),
  },
  'unexpected field',
)

const CredentialsSchema = v.strictObject(
  {
    username: v.pipe(v.string('must be a string'), v.minLength(1, 'required')),
    password: v.pipe(v.string('must be a string'), v.minLength(1, 'required')),
  },
  'unexpected field',
)

type AmqpConfig = v.InferOutput<typeof ConfigSchema>
type AmqpCredentials = v.InferOutput<typeof CredentialsSchema>

const configFields: FieldSpec[] = [
  {
    key: 'server_url',
    type: 'text',
    label: 'Server URL',
    description: 'The broker address: "host:port" or an amqp:// / amqps:// URL, optionally with a virtual host path (amqp://host:5672/vhost). No credentials here.',
    required: true,
    sensitive: false,
    pattern: '^((amqps?://)[^\\s@?#]+|(\\[[0-9A-Fa-f:.]+\\]|[A-Za-z0-9.-]+)(:\\d{1,5})?)$',
  },
  {
    key: 'exchange',
    type: 'text',
    label: 'Exchange',
    description: 'The exchange to publish to. It must already exist: Outflow does not declare it. Empty or absent means the default exchange, which routes to the queue named by the routing key.',
    required: false,
    sensitive: false,
    default: '',
    maxlength: 255,
  },
  {
    key: 'routing_key',
    type: 'text',
    label: 'Routing key',
    description: 'The routing key of every message. Empty or absent means the event topic.',
    required: false,
    sensitive: false,
    maxlength: 255,
  },
  {
    key: 'tls',
    type: 'checkbox',
    label: 'Use TLS',
    description: 'Connect with TLS (amqps). An amqps:// server URL uses TLS whatever this says.',
    required: false,
    sensitive: false,
    default: false,
  },
]

const credentialFields: FieldSpec[] = [
  { key: 'username', type: 'text', label: 'Username', description: 'The broker user Outflow logs in as. It needs write permission on the exchange.', required: true, sensitive: false, minlength: 1 },
  { key: 'password', type: 'text', label: 'Password', description: 'The password of that user.', required: true, sensitive: true, minlength: 1 },
]

const instructions = `## Deliver events to RabbitMQ (AMQP 0-9-1)

1. Pick or create the **exchange** that should receive the events (or leave it empty to use the
   default exchange, which routes straight to the queue named by the routing key). Outflow never
   declares exchanges or queues: create them, and their bindings, on the broker first.
2. Create a broker user for Outflow with *write* permission on that exchange in its virtual host.
3. Enter the **server URL** (\`rabbit.example.com:5672\`, or \`amqps://rabbit.example.com/my-vhost\`),
   the exchange, and optionally a fixed **routing key** (by default each message is routed by its
   event topic, e.g. \`order.created\`).
4. Enter the user name and password.

Each event is published as a persistent message with publisher confirms: the body is the event
\`data\` as JSON (\`content-type: application/json\`), \`message-id\` is the event id, \`type\` the topic,
and the event metadata (\`event-id\`, \`topic\`, \`timestamp\`, …) is sent as message headers.
An attempt succeeds once the broker confirms the message.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><rect x="3" y="3" width="7" height="18" rx="1"/><rect x="14" y="12" width="7" height="9" rx="1"/><path d="M10 12h4M14 3h7v6h-7z"/></svg>'

/** The AMQP close codes and socket errors we can name (DNS, TLS, refused, …); everything else is 'unknown'. */
function classifyAmqpError(err: unknown): { kind: ErrorKind; prefix: string } {
  const e = err as { code?: unknown; message?: unknown }
  const message = typeof e?.message === 'string' ? e.message : String(err)
  const code = e?.code
  if (code === SSRF_ERROR_CODE) return { kind: 'ssrf', prefix: 'blocked' }
  if (code === 403 || /ACCESS[_-]REFUSED/.test(message)) return { kind: 'authentication', prefix: 'authentication failed' }
  if (code === 404 || /NOT[_-]FOUND/.test(message)) return { kind: 'not_found', prefix: 'not found' }
  if (code === 530 || /NOT[_-]ALLOWED/.test(message)) {
    return /not found/i.test(message) ? { kind: 'not_found', prefix: 'virtual host not found' } : { kind: 'authentication', prefix: 'access to the virtual host refused' }
  }
  if (/message nacked/.test(message)) return { kind: 'rejected', prefix: 'the broker rejected the message (nack)' }
  if (code === 406 || /PRECONDITION[_-]FAILED/.test(message)) return { kind: 'rejected', prefix: 'the broker rejected the message' }
  const transport = transportErrorKind(err)
  if (transport === 'timeout') return { kind: 'timeout', prefix: 'the broker did not answer in time' }
  if (transport) return { kind: transport, prefix: 'could not reach the broker' }
  if (code === 320 || /Socket closed|closed abruptly|Unexpected close|channel closed|Connection closed|CONNECTION[_-]FORCED|Heartbeat timeout/i.test(message)) {
    return { kind: 'network', prefix: 'lost the connection to the broker' }
  }
  return { kind: 'unknown', prefix: 'publish failed' }
}

/** What went wrong, in words; failureOf removes the password, whatever the library put in the text. */
function describeAmqpError(err: unknown, message: string, vhost: string): FailureDescription {
  // amqplib loses the reply text when the broker refuses connection.open; RabbitMQ only does that for the vhost.
  if (/Expected ConnectionOpenOk; got <ConnectionClose/.test(message)) {
    return { kind: 'not_found', error: `the broker refused the virtual host "${vhost}": it does not exist or the user has no access to it` }
  }
  const { kind, prefix } = classifyAmqpError(err)
  return { kind, error: `${prefix}: ${message}` }
}

/** A confirm channel plus the server error that closed it, if any (the confirm callback only says "channel closed"). */
interface ChannelState {
  channel: Amqp.ConfirmChannel
  closedBy?: unknown
}

/** Where and as whom a publisher connects. */
interface BrokerLogin {
  address: BrokerAddress
  credentials: AmqpCredentials
  /** Shown in the broker's connection list. */
  connectionName: string
}

/** Connect to the broker; `signal` abandons a connect still under way (it destroys the socket). */
async function connectBroker(amqp: typeof Amqp, { address, credentials, connectionName }: BrokerLogin, context: PublisherContext, signal: AbortSignal): Promise<Amqp.ChannelModel> {
  const conn = await amqp.connect(
    { ...address, username: credentials.username, password: credentials.password },
    {
      signal,
      servername: address.hostname,
      clientProperties: { connection_name: connectionName },
      // server_url is tenant input: refuse private addresses like webhook URLs, checked after DNS.
      ...(context.allowPrivateNetworks ? {} : { lookup: guardedLookup }),
    },
  )
  // Without an 'error' listener a dropped connection would crash the host process.
  conn.on('error', () => {})
  return conn
}

/** A confirm channel that remembers why the broker closed it. */
async function openChannel(conn: Amqp.ChannelModel): Promise<ChannelState> {
  const state: ChannelState = { channel: await conn.createConfirmChannel() }
  state.channel.on('error', (err: unknown) => (state.closedBy = err))
  return state
}

/**
 * One connection per publisher and one confirm channel on it, each opened on first use and again after it is
 * lost: a server-closed channel (e.g. a missing exchange) is replaced on the next publish.
 */
function brokerLinks(amqp: typeof Amqp, login: BrokerLogin, context: PublisherContext) {
  const connection: LazyConnection<Amqp.ChannelModel> = lazyConnection({
    async open(signal) {
      const conn = await connectBroker(amqp, login, context, signal)
      conn.once('close', () => connection.drop(conn))
      return conn
    },
    close: (conn) => conn.close(),
  })
  const channel: LazyConnection<ChannelState> = lazyConnection({
    async open(signal) {
      const state = await openChannel(await connection.get(signal))
      state.channel.once('close', () => channel.drop(state))
      return state
    },
    close: (state) => state.channel.close(),
  })
  return { connection, channel }
}

/** Write one message on a channel; resolves once the broker confirms it. */
function sendMessage(state: ChannelState, exchange: string, routingKey: string, message: DeliveryMessage): Promise<void> {
  const body = Buffer.from(jsonBody(message))
  const options: Amqp.Options.Publish = {
    contentType: 'application/json',
    messageId: message.id,
    type: message.topic,
    timestamp: Math.floor(message.time.getTime() / 1000),
    headers: message.metadata,
    persistent: true,
  }
  return new Promise<void>((resolve, reject) => {
    state.channel.publish(exchange, routingKey, body, options, (err: unknown) => {
      // A channel closed by the broker reports only "channel closed" here; its 'error' said why.
      if (err) reject(state.closedBy ?? err)
      else resolve()
    })
  })
}

/** Send on the publisher's channel and wait for the confirm, within the attempt's deadline. */
async function sendConfirmed(channel: LazyConnection<ChannelState>, send: (state: ChannelState) => Promise<void>, signal: AbortSignal): Promise<void> {
  let state = await channel.get(signal)
  let confirmed: Promise<void>
  try {
    confirmed = send(state)
  } catch {
    // The channel died before we wrote anything (connection lost between deliveries): reconnect once.
    channel.drop(state)
    state = await channel.get(signal)
    confirmed = send(state)
  }
  await untilAborted(confirmed, signal)
}

/**
 * Write every message of a batch on the publisher's channel, then wait for their confirms within the attempt's
 * deadline: one result per message, as the broker acks or nacks each (a channel lost fails those not yet confirmed).
 */
async function sendAllConfirmed(channel: LazyConnection<ChannelState>, sends: ((state: ChannelState) => Promise<void>)[], signal: AbortSignal, fail: (err: unknown) => AttemptResult): Promise<AttemptResult[]> {
  let state = await channel.get(signal)
  const written: Promise<void>[] = []
  for (const send of sends) {
    try {
      written.push(send(state))
    } catch (err) {
      // The channel died before we wrote anything (connection lost between deliveries): reconnect once.
      if (written.length > 0) throw err
      channel.drop(state)
      state = await channel.get(signal)
      written.push(send(state))
    }
  }
  return Promise.all(written.map((confirmed) => untilAborted(confirmed, signal).then((): AttemptResult => ({ ok: true }), fail)))
}

/** The routing key of a message: the configured one, else the topic. */
function routingKeyFor(config: AmqpConfig, message: DeliveryMessage): string {
  return config.routing_key ? config.routing_key : message.topic
}

/** `amqp://host:port/vhost`, without credentials. */
function brokerUrl(address: BrokerAddress): string {
  return `${address.protocol}://${hostPort(address.hostname, address.port)}/${address.vhost === '/' ? '' : encodeURIComponent(address.vhost)}`
}

/** RabbitMQ (AMQP 0-9-1) destinations: publish with confirms to an existing exchange. */
export const amqpBroker: DestinationTypeDefinition = {
  type: 'amqp_broker',
  label: 'RabbitMQ',
  description: 'Publish events to an exchange of a RabbitMQ (AMQP 0-9-1) broker, with publisher confirms.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  configRequired: true,
  credentialsRequired: true,
  packages: ['amqplib'],

  target(config) {
    const { exchange, routing_key: routingKey } = config as AmqpConfig
    if (exchange && routingKey) return `${exchange}/${routingKey}`
    if (exchange) return exchange
    if (routingKey) return routingKey
    const address = parseServerUrl(String(config.server_url ?? ''), config.tls === true)
    return typeof address === 'string' ? undefined : `${address.hostname}:${address.port}`
  },

  targetUrl(config) {
    const address = parseServerUrl(String(config.server_url ?? ''), config.tls === true)
    return typeof address === 'string' ? undefined : brokerUrl(address)
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config = v.parse(ConfigSchema, destination.config)
    const credentials: AmqpCredentials = v.parse(CredentialsSchema, destination.credentials)
    const address = parseServerUrl(config.server_url, config.tls === true)
    if (typeof address === 'string') throw new Error(`server_url ${address}`)
    const amqp = await loadPeer<typeof Amqp>('amqplib', 'amqp_broker destinations')
    const exchange = config.exchange ?? ''
    // An IP literal skips DNS, so the connect-time guard would never see it.
    const refused = privateHostError(address.hostname, context)
    const { connection, channel } = brokerLinks(amqp, { address, credentials, connectionName: `outflow ${destination.id}` }, context)
    const describe = (err: unknown, message: string) => describeAmqpError(err, message, address.vhost)

    return {
      async publish(message, { signal }) {
        if (channel.closed) return { ok: false, error_kind: 'configuration', error: 'the publisher is closed' }
        if (refused) return { ok: false, error_kind: 'ssrf', error: refused }
        try {
          await sendConfirmed(channel, (state) => sendMessage(state, exchange, routingKeyFor(config, message), message), signal)
          return { ok: true }
        } catch (err) {
          return failureOf(err, describe, { signal, secrets: [credentials.password] })
        }
      },

      async publishBatch(messages, { signal }) {
        if (channel.closed) return messages.map(() => ({ ok: false, error_kind: 'configuration', error: 'the publisher is closed' }))
        if (refused) return messages.map(() => ({ ok: false, error_kind: 'ssrf', error: refused }))
        const fail = (err: unknown) => failureOf(err, describe, { signal, secrets: [credentials.password] })
        const sends = messages.map((message) => (state: ChannelState) => sendMessage(state, exchange, routingKeyFor(config, message), message))
        try {
          return await sendAllConfirmed(channel, sends, signal, fail)
        } catch (err) {
          const result = fail(err)
          return messages.map(() => result)
        }
      },

      async close() {
        await channel.close()
        await connection.close()
      },
    }
  },
}
