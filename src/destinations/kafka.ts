import net from 'node:net'
import tls from 'node:tls'
import type * as KafkaJs from 'kafkajs'
import * as v from 'valibot'
import { OutflowError } from '../errors.js'
import { guardedLookup, ipLiteral, isPrivateAddress, ssrfError } from '../net/ssrf.js'
import { privateHostError } from '../net/endpoint-guard.js'
import { transportErrorKind } from '../net/transport-error.js'
import { untilAborted } from '../net/deadline.js'
import { loadPeer } from '../load-peer.js'
import type { AttemptResult, ErrorKind } from '../model/attempt-result.js'
import type { FailureDescription } from './failure.js'
import { sendCalls, sendPrepared, splitCalls, type CallLimits } from './batch-calls.js'
import { lazyConnection, sendBatchOver, type LazyConnection } from './lazy-connection.js'
import { renderForAttempt, renderTemplate, TemplateSchema, templateSubject } from './templates.js'
import { jsonBody, type DeliveryMessage, type DestinationTypeDefinition, type Publisher, type PublisherContext } from './types.js'
import type { FieldSpec } from '../model/destination-type.js'
import { parsedBy, parseStored } from './settings.js'
import { hostPort, unbracketed } from '../net/host-port.js'

// Client: kafkajs. Its `socketFactory` lets every socket it opens (seed brokers and the brokers the cluster
// advertises) go through the SSRF guard after DNS, as the other types do; it is pure JS with no dependencies and
// runs on Node 20. @platformatic/kafka has no socket hook and its current line needs Node 22;
// @confluentinc/kafka-javascript needs a native binary.

const brokerPattern = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/
const topicPattern = '^[A-Za-z0-9._-]{1,249}$'
const saslMechanisms = ['plain', 'scram-sha-256', 'scram-sha-512'] as const
const maxBrokers = 20

interface BrokerAddress {
  host: string
  port: number
}

/** Parse `brokers` ("host:port, host:port"); returns an error message instead of throwing so the schema can report it. */
function parseBrokers(text: string): BrokerAddress[] | string {
  const parts = text.split(',').map((part) => part.trim()).filter((part) => part !== '')
  if (parts.length === 0) return 'must list at least one broker as host:port'
  if (parts.length > maxBrokers) return `must list at most ${maxBrokers} brokers`
  const brokers: BrokerAddress[] = []
  for (const part of parts) {
    const match = brokerPattern.exec(part)
    if (!match) return `"${part}" is not host:port (a comma-separated list of host:port, no scheme or credentials)`
    const port = Number(match[2])
    if (port < 1 || port > 65535) return `"${part}": the port must be between 1 and 65535`
    brokers.push({ host: unbracketed(match[1]!), port })
  }
  return brokers
}

const ConfigSchema = v.strictObject(
  {
    brokers: v.pipe(v.string('must be a string'), parsedBy(parseBrokers)),
    topic: v.pipe(v.string('must be a string'), v.regex(new RegExp(topicPattern), 'must be 1–249 letters, digits, ".", "_" or "-"'), v.check((t) => t !== '.' && t !== '..', 'must not be "." or ".."')),
    key_template: v.optional(TemplateSchema),
    tls: v.optional(v.boolean('must be a boolean')),
    sasl_mechanism: v.optional(v.picklist(saslMechanisms, `must be one of ${saslMechanisms.join(', ')}`)),
  },
  'unexpected field',
)

const CredentialsSchema = v.strictObject(
  {
    username: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(1024, 'must be at most 1024 characters'))),
    password: v.optional(v.pipe(v.string('must be a string'), v.minLength(1, 'must not be empty'), v.maxLength(1024, 'must be at most 1024 characters'))),
  },
  'unexpected field',
)

type KafkaConfig = v.InferOutput<typeof ConfigSchema>
type KafkaCredentials = v.InferOutput<typeof CredentialsSchema>

const configFields: FieldSpec[] = [
  {
    key: 'brokers',
    type: 'text',
    label: 'Bootstrap brokers',
    description: 'One or more brokers as host:port, separated by commas, e.g. kafka-1.example.com:9092,kafka-2.example.com:9092.',
    required: true,
    sensitive: false,
    pattern: '^\\s*[^\\s,:]+:\\d{1,5}(\\s*,\\s*[^\\s,:]+:\\d{1,5})*\\s*$',
  },
  { key: 'topic', type: 'text', label: 'Topic', description: 'The topic to produce to. It must exist: Outflow does not create topics.', required: true, sensitive: false, pattern: topicPattern, minlength: 1, maxlength: 249 },
  {
    key: 'key_template',
    type: 'text',
    label: 'Message key template',
    description:
      'A JMESPath expression over { id, topic, time, metadata, data } giving the key of each message, e.g. data.customer_id (messages with one key go to one partition, in order). Default: the FIFO ordering key when the destination is ordered, else the event id.',
    required: false,
    sensitive: false,
  },
  { key: 'tls', type: 'checkbox', label: 'Use TLS', description: 'Connect to the brokers with TLS.', required: false, sensitive: false, default: false },
  {
    key: 'sasl_mechanism',
    type: 'text',
    label: 'SASL mechanism',
    description: 'plain, scram-sha-256 or scram-sha-512, with the username and password below. Empty: no SASL authentication.',
    required: false,
    sensitive: false,
    pattern: '^(plain|scram-sha-256|scram-sha-512)$',
  },
]

const credentialFields: FieldSpec[] = [
  { key: 'username', type: 'text', label: 'SASL username', description: 'The user Outflow authenticates as (with a SASL mechanism). It needs Write on the topic and IdempotentWrite on the cluster.', required: false, sensitive: false, minlength: 1, maxlength: 1024 },
  { key: 'password', type: 'text', label: 'SASL password', description: 'The password of that user.', required: false, sensitive: true, minlength: 1, maxlength: 1024 },
]

const instructions = `## Deliver events to an Apache Kafka topic

1. Create the **topic** (Outflow never creates topics) and note the **bootstrap brokers** (\`host:port\`, comma-separated).
2. If the cluster uses SASL, create a user allowed to **Write** on the topic and **IdempotentWrite** on the
   cluster, and choose its mechanism (\`plain\`, \`scram-sha-256\` or \`scram-sha-512\`). Tick **TLS** when the
   listener uses TLS (\`SASL_SSL\`/\`SSL\`).
3. Optionally set a **message key template**: a JMESPath expression over \`{ id, topic, time, metadata, data }\`
   such as \`data.customer_id\`. Messages with the same key go to the same partition, in order.

Each event is produced as one message by an idempotent producer with \`acks=all\`: the value is the event
\`data\` as JSON, the headers are the event metadata (\`event-id\`, \`topic\`, \`timestamp\`, …), the timestamp is
the event time. The key is the template's value; without one, the FIFO ordering key of an ordered destination
(\`delivery.ordering: "fifo"\`; the destination id when it has no \`ordering_key\`), so each ordered sequence
stays in one partition; otherwise the event id. An attempt succeeds once the partition leader acknowledges the
write to all in-sync replicas; a leader election in between is retried within the attempt.`

const icon =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="1.5" stroke-linecap="round" stroke-linejoin="round"><circle cx="8" cy="12" r="2.5"/><circle cx="8" cy="4.5" r="2"/><circle cx="8" cy="19.5" r="2"/><circle cx="17" cy="7.5" r="2"/><circle cx="17" cy="16.5" r="2"/><path d="M8 6.5v3M8 14.5v3M10.2 10.8l4.9-2.4M10.2 13.2l4.9 2.4"/></svg>'

/** Kafka error codes (as kafkajs names them) by what they mean for an attempt. */
const protocolKinds: Record<string, ErrorKind> = {
  SASL_AUTHENTICATION_FAILED: 'authentication',
  ILLEGAL_SASL_STATE: 'authentication',
  TOPIC_AUTHORIZATION_FAILED: 'authentication',
  CLUSTER_AUTHORIZATION_FAILED: 'authentication',
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED: 'authentication',
  UNSUPPORTED_SASL_MECHANISM: 'configuration',
  UNKNOWN_TOPIC_OR_PARTITION: 'not_found',
  UNKNOWN_TOPIC_ID: 'not_found',
  LEADER_NOT_AVAILABLE: 'unavailable',
  NOT_LEADER_FOR_PARTITION: 'unavailable',
  BROKER_NOT_AVAILABLE: 'unavailable',
  REPLICA_NOT_AVAILABLE: 'unavailable',
  NOT_ENOUGH_REPLICAS: 'unavailable',
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: 'unavailable',
  KAFKA_STORAGE_ERROR: 'unavailable',
  NOT_CONTROLLER: 'unavailable',
  COORDINATOR_NOT_AVAILABLE: 'unavailable',
  COORDINATOR_LOAD_IN_PROGRESS: 'unavailable',
  REQUEST_TIMED_OUT: 'timeout',
  THROTTLING_QUOTA_EXCEEDED: 'throttled',
  MESSAGE_TOO_LARGE: 'rejected',
  RECORD_LIST_TOO_LARGE: 'rejected',
  INVALID_RECORD: 'rejected',
  CORRUPT_MESSAGE: 'rejected',
  INVALID_TOPIC_EXCEPTION: 'rejected',
  INVALID_REQUIRED_ACKS: 'rejected',
  POLICY_VIOLATION: 'rejected',
  UNSUPPORTED_FOR_MESSAGE_FORMAT: 'rejected',
  UNSUPPORTED_VERSION: 'rejected',
  OUT_OF_ORDER_SEQUENCE_NUMBER: 'rejected',
  INVALID_PRODUCER_EPOCH: 'rejected',
  UNKNOWN_PRODUCER_ID: 'rejected',
}

interface KafkaJsError {
  name?: unknown
  type?: unknown
  code?: unknown
  message?: unknown
  cause?: unknown
  originalError?: unknown
  errors?: unknown
}

/** The error and the errors it wraps (retries exceeded, an aggregate of partitions), outermost first. */
function errorChain(err: unknown, depth = 0): KafkaJsError[] {
  if (typeof err !== 'object' || err === null || depth > 4) return []
  const e = err as KafkaJsError
  const nested = Array.isArray(e.errors) ? e.errors.flatMap((x) => errorChain(x, depth + 1)) : []
  const cause = e.cause !== err ? errorChain(e.cause, depth + 1) : []
  const original = e.originalError !== undefined && e.originalError !== e.cause ? errorChain(e.originalError, depth + 1) : []
  return [e, ...cause, ...original, ...nested]
}

/** What a kafkajs error means: the broker's error code first, then the client's own errors, then the socket's. */
function classifyKafkaError(err: unknown): { kind: ErrorKind; code?: string } {
  const chain = errorChain(err)
  for (const e of chain) {
    if (typeof e.type === 'string' && protocolKinds[e.type]) return { kind: protocolKinds[e.type]!, code: e.type }
  }
  const names = chain.map((e) => (typeof e.name === 'string' ? e.name : ''))
  const transport = transportErrorKind(err) ?? chain.map((e) => transportErrorKind(e)).find(Boolean)
  if (transport === 'ssrf') return { kind: 'ssrf' }
  if (names.includes('KafkaJSSASLAuthenticationError')) return { kind: 'authentication' }
  if (transport) return { kind: transport }
  if (names.some((n) => n === 'KafkaJSRequestTimeoutError' || n === 'KafkaJSTimeout' || n === 'KafkaJSLockTimeout')) return { kind: 'timeout' }
  if (chain.some((e) => e.name === 'KafkaJSConnectionError' && /timeout/i.test(String(e.message)))) return { kind: 'timeout' }
  if (names.some((n) => n === 'KafkaJSConnectionError' || n === 'KafkaJSConnectionClosedError' || n === 'KafkaJSBrokerNotFound' || n === 'KafkaJSNoBrokerAvailableError')) return { kind: 'network' }
  const type = chain.map((e) => e.type).find((t): t is string => typeof t === 'string')
  return { kind: 'unknown', code: type }
}

function describeKafkaError(err: unknown, message: string, topic: string): FailureDescription {
  const { kind, code } = classifyKafkaError(err)
  const prefix: Partial<Record<ErrorKind, string>> = {
    authentication: 'the cluster refused the credentials or the permission',
    not_found: `the topic ${topic} does not exist`,
    unavailable: 'the partition cannot take writes now',
    rejected: 'the broker rejected the message',
    timeout: 'the broker did not answer in time',
    network: 'lost the connection to the brokers',
    dns: 'could not reach the brokers',
    connection_refused: 'could not reach the brokers',
    tls: 'could not reach the brokers',
  }
  const head = prefix[kind]
  const detail = code && !message.includes(code) ? `${code}: ${message}` : message
  return { kind, error: head ? `${head}: ${detail}` : detail }
}

/**
 * Sockets for kafkajs that refuse private addresses: names are checked after DNS (on the address the socket uses),
 * literals here, for every broker the client connects to, including those the cluster's metadata names.
 */
function guardedSockets(context: PublisherContext): KafkaJs.ISocketFactory {
  return ({ host, port, ssl, onConnect }) => {
    const literal = ipLiteral(host)
    if (!context.allowPrivateNetworks && literal !== null && isPrivateAddress(literal)) {
      const refused = new net.Socket()
      process.nextTick(() => refused.destroy(ssrfError(host, literal)))
      return refused
    }
    const lookup = context.allowPrivateNetworks ? {} : { lookup: guardedLookup }
    const socket = ssl
      ? tls.connect({ host, port, ...(literal === null ? { servername: host } : {}), ...(typeof ssl === 'object' ? ssl : {}), ...lookup }, onConnect)
      : net.connect({ host, port, ...lookup }, onConnect)
    socket.setKeepAlive(true, 60_000)
    return socket
  }
}

/** The message key: the template's value, else the FIFO ordering key (the destination id for a destination-wide sequence), else the event id. */
function messageKey(config: KafkaConfig, message: DeliveryMessage): string {
  if (config.key_template) return renderTemplate(config.key_template, templateSubject(message))
  if (message.ordering_key !== undefined) return message.ordering_key === '' ? message.destination_id : message.ordering_key
  return message.id
}

/** The client settings of a destination. Retries inside an attempt only ride out leader elections; the engine owns the schedule. */
function clientConfig(config: KafkaConfig, credentials: KafkaCredentials, brokers: BrokerAddress[], context: PublisherContext, kafkajs: typeof KafkaJs, id: string): KafkaJs.KafkaConfig {
  const sasl =
    config.sasl_mechanism && credentials.username && credentials.password
      ? ({ mechanism: config.sasl_mechanism, username: credentials.username, password: credentials.password } as KafkaJs.SASLOptions)
      : undefined
  return {
    clientId: `outflow-${id}`,
    brokers: brokers.map(({ host, port }) => hostPort(host, port)),
    ssl: config.tls === true,
    ...(sasl ? { sasl } : {}),
    connectionTimeout: 5_000,
    requestTimeout: 10_000,
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 },
    socketFactory: guardedSockets(context),
    // kafkajs logs to the console by default; failures reach the delivery log instead.
    logLevel: kafkajs.logLevel.NOTHING,
  }
}

/** The idempotent producer of a publisher, connected by the first publish and again after it lost its connection. */
function lazyProducer(client: KafkaJs.Kafka): LazyConnection<KafkaJs.Producer> {
  const producers: LazyConnection<KafkaJs.Producer> = lazyConnection({
    async open(signal) {
      const producer = client.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1_000 } })
      producer.on(producer.events.DISCONNECT, () => producers.drop(producer))
      try {
        // Connecting fetches metadata and the producer id (InitProducerId) for idempotent writes.
        await untilAborted(producer.connect(), signal)
      } catch (err) {
        void producer.disconnect().catch(() => {})
        throw err
      }
      return producer
    },
    close: (producer) => producer.disconnect(),
  })
  return producers
}

/** One Produce of a batch: at most 1,000 messages and about 1 MB (the broker's default `message.max.bytes`). */
const batchLimits: CallLimits = { entries: 1000, bytes: 1_000_000 }

/** The bytes of a message that count against the broker's limit: key, value and headers. */
function recordSize(record: KafkaJs.Message): number {
  const headers = Object.entries(record.headers ?? {}).reduce((n, [k, value]) => n + Buffer.byteLength(k) + Buffer.byteLength(String(value)), 0)
  return Buffer.byteLength(String(record.key ?? '')) + Buffer.byteLength(String(record.value ?? '')) + headers
}

/**
 * Produce messages in one send (acks=all), acknowledged all or nothing: one receipt per message. The offset of each
 * is known when they all went to one partition (its base offset onwards); across partitions it is left out.
 */
async function produce(producer: KafkaJs.Producer, topic: string, messages: KafkaJs.Message[], signal: AbortSignal): Promise<AttemptResult[]> {
  // kafkajs takes no signal: the attempt stops waiting at its deadline (requestTimeout bounds the request).
  const written = await untilAborted(producer.send({ topic, acks: -1, timeout: 10_000, messages }), signal)
  const only = written.length === 1 ? written[0] : undefined
  const base = only?.baseOffset ?? only?.offset
  const offset = (i: number) => (base === undefined ? null : String(BigInt(base) + BigInt(i)))
  return messages.map((m, i) => ({ ok: true, response_body: JSON.stringify({ topic, partition: only?.partition ?? null, offset: offset(i), key: m.key }) }))
}

/** Apache Kafka: one message per delivery (one send of several for a batch), produced idempotently with acks=all. */
export const kafka: DestinationTypeDefinition = {
  type: 'kafka',
  label: 'Apache Kafka',
  description: 'Produce events as messages to a Kafka topic, with an idempotent producer and acks=all.',
  icon,
  instructions,
  config_fields: configFields,
  credential_fields: credentialFields,
  configSchema: ConfigSchema,
  credentialsSchema: CredentialsSchema,
  configRequired: true,
  credentialsRequired: false,
  packages: ['kafkajs'],

  validate(config, credentials) {
    const { sasl_mechanism: mechanism } = config as KafkaConfig
    const { username, password } = credentials as KafkaCredentials
    const data: Record<string, string> = {}
    if (mechanism) {
      if (!username) data['credentials.username'] = `required with sasl_mechanism ${mechanism}`
      if (!password) data['credentials.password'] = `required with sasl_mechanism ${mechanism}`
    } else if (username || password) {
      data['config.sasl_mechanism'] = 'required when a username or password is given'
    }
    return Object.keys(data).length ? data : undefined
  },

  target(config) {
    return typeof config.topic === 'string' ? config.topic : undefined
  },

  targetUrl(config) {
    const brokers = typeof config.brokers === 'string' ? parseBrokers(config.brokers) : 'none'
    if (typeof brokers === 'string' || typeof config.topic !== 'string') return undefined
    const first = brokers[0]!
    return `kafka://${hostPort(first.host, first.port)}/${encodeURIComponent(config.topic)}`
  },

  async createPublisher(destination, context): Promise<Publisher> {
    const config = parseStored('kafka', ConfigSchema, destination.config, 'config')
    const credentials = parseStored('kafka', CredentialsSchema, destination.credentials ?? {}, 'credentials')
    const brokers = parseBrokers(config.brokers)
    if (typeof brokers === 'string') throw new OutflowError('validation', 'invalid kafka config', { data: { 'config.brokers': brokers } })
    const kafkajs = await loadPeer<typeof KafkaJs>('kafkajs', 'kafka destinations')
    // A literal skips DNS: judged once here (the socket factory also refuses advertised literals).
    const refused = brokers.map(({ host }) => privateHostError(host, context)).find(Boolean)
    const client = new kafkajs.Kafka(clientConfig(config, credentials, brokers, context, kafkajs, destination.id))
    const producers = lazyProducer(client)
    const describe = (err: unknown, message: string) => describeKafkaError(err, message, config.topic)

    // A producer that lost its connection or its login starts over on the next attempt; broker answers keep it.
    const drop = (result: AttemptResult) => !['not_found', 'rejected', 'unavailable', 'throttled'].includes(result.error_kind ?? '')
    const publisher: Publisher = {
      async publish(message, { signal }) {
        const [result] = await publisher.publishBatch!([message], { signal })
        return result!
      },

      async publishBatch(messages, { signal }) {
        if (producers.closed) return messages.map(() => ({ ok: false, error_kind: 'configuration', error: 'the publisher is closed' }))
        if (refused) return messages.map(() => ({ ok: false, error_kind: 'ssrf', error: refused }))
        const early = new Map<number, AttemptResult>()
        const sent: number[] = []
        const records: KafkaJs.Message[] = []
        messages.forEach((message, i) => {
          const key = renderForAttempt('key_template', () => messageKey(config, message))
          if (typeof key !== 'string') return early.set(i, key)
          sent.push(i)
          records.push({ key, value: jsonBody(message), headers: message.metadata, timestamp: String(message.time.getTime()) })
        })
        const ordered = messages.some((m) => m.ordering_key !== undefined)
        const failure = { signal, secrets: [credentials.password], describe, drop }
        const send = (part: KafkaJs.Message[]) => sendBatchOver(producers, undefined, part.length, (producer) => produce(producer, config.topic, part, signal), failure)
        return sendPrepared({ count: messages.length, early, sent, entries: records }, ordered, (part) => sendCalls(part, splitCalls(part.map(recordSize), batchLimits), send, ordered))
      },

      async close() {
        await producers.close()
      },
    }
    return publisher
  },
}
