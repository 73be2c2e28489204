import { createHmac, timingSafeEqual } from 'node:crypto'
import type { AddressInfo, Server, Socket } from 'node:net'
import rhea, { type AmqpError, type Connection, type EventContext, type Message } from 'rhea'

/** One message the SDK delivered to an entity. */
export interface RecordedServiceBusMessage {
  entity: string
  /** The AMQP data section decoded as JSON (the SDK encodes non-binary bodies as JSON). */
  body: unknown
  messageId?: string
  subject?: string
  contentType?: string
  applicationProperties: Record<string, unknown>
  /** Index of the AMQP connection it came on (0 = first). */
  connection: number
}

/** One `$cbs` put-token request and how the fake answered it. */
export interface RecordedPutToken {
  audience: string
  type: string
  status: number
}

/** The shared access key the fake accepts and the entities that exist. */
export interface FakeServiceBusOptions {
  keyName: string
  key: string
  /** Queue and topic names that exist. */
  entities: string[]
}

/** A running fake Service Bus namespace. */
export interface FakeServiceBus {
  port: number
  /** The emulator connection string the real SDK needs to reach this fake over plain AMQP. */
  connectionString(overrides?: { keyName?: string; key?: string }): string
  messages: RecordedServiceBusMessage[]
  /** The number of messages each accepted transfer to an entity carried, in order (1 for a single message, n for a batch). */
  batches: number[]
  tokens: RecordedPutToken[]
  connections: { opened: number; closed: number }
  /** Reject the next delivered message with this AMQP error (e.g. `com.microsoft:server-busy`). */
  rejectNext(error: AmqpError): void
  close(): Promise<void>
}

/** The AMQP message format of a Service Bus batch. */
const batchFormat = 0x80013700
/** What a Standard-tier entity link takes: 256 KiB. */
const maxMessageBytes = 256 * 1024

/** Check a `SharedAccessSignature sr=…&sig=…&se=…&skn=…` token against the expected key, as Service Bus does. */
function verifySasToken(token: unknown, keyName: string, key: string): { ok: true; audience: string } | { ok: false; reason: string } {
  if (typeof token !== 'string' || !token.startsWith('SharedAccessSignature ')) return { ok: false, reason: 'InvalidToken: not a shared access signature' }
  const fields = new Map(
    token
      .slice('SharedAccessSignature '.length)
      .split('&')
      .map((part) => [part.slice(0, part.indexOf('=')), part.slice(part.indexOf('=') + 1)] as const),
  )
  const sr = fields.get('sr') ?? ''
  const se = fields.get('se') ?? ''
  const skn = decodeURIComponent(fields.get('skn') ?? '')
  const sig = Buffer.from(decodeURIComponent(fields.get('sig') ?? ''), 'base64')
  if (skn !== keyName) return { ok: false, reason: `InvalidSignature: the shared access key name '${skn}' is unknown` }
  const expected = createHmac('sha256', key).update(`${sr}\n${se}`).digest()
  if (sig.length !== expected.length || !timingSafeEqual(sig, expected)) return { ok: false, reason: 'InvalidSignature: The token has an invalid signature.' }
  if (Number(se) * 1000 < Date.now()) return { ok: false, reason: 'ExpiredToken: the token has expired' }
  return { ok: true, audience: decodeURIComponent(sr) }
}

/** The JSON body the SDK put in the AMQP data section. */
function decodeBody(body: unknown): unknown {
  const section = body as { typecode?: number; content?: Buffer } | undefined
  const content = section && section.typecode === 0x75 ? section.content : undefined
  return content ? JSON.parse(content.toString('utf8')) : body
}

/**
 * Start a fake Service Bus namespace on 127.0.0.1: an AMQP 1.0 server (rhea) with SASL ANONYMOUS,
 * the `$cbs` put-token exchange (SAS tokens verified with the key) and sender links to queues/topics.
 *
 * @example
 * const sb = await startFakeServiceBus({ keyName: 'RootManageSharedAccessKey', key: 'k', entities: ['orders'] })
 * new ServiceBusClient(sb.connectionString())
 */
export async function startFakeServiceBus(options: FakeServiceBusOptions): Promise<FakeServiceBus> {
  const messages: RecordedServiceBusMessage[] = []
  const tokens: RecordedPutToken[] = []
  const connections = { opened: 0, closed: 0 }
  const rejections: AmqpError[] = []
  const batches: number[] = []
  const connectionIndex = new WeakMap<Connection, number>()
  let amqpConnections = 0
  const open = new Set<Connection>()
  /** Audiences authorized per connection by a successful put-token. */
  const claims = new WeakMap<Connection, Set<string>>()
  const container = rhea.create_container({ id: 'fake-servicebus' })
  // The SDK authenticates the connection with SASL ANONYMOUS and each link with a $cbs token.
  container.sasl_server_mechanisms.enable_anonymous()
  let endpoint = ''

  container.on('connection_open', (context: EventContext) => {
    connectionIndex.set(context.connection, amqpConnections++)
    claims.set(context.connection, new Set())
    open.add(context.connection)
  })
  container.on('disconnected', (context: EventContext) => void open.delete(context.connection))

  container.on('receiver_open', (context: EventContext) => {
    const receiver = context.receiver!
    const address = receiver.target?.address ?? ''
    if (address === '$cbs') return
    if (!options.entities.includes(address)) {
      receiver.close({ condition: 'amqp:not-found', description: `The messaging entity '${endpoint}${address}' could not be found.` })
      return
    }
    if (!claims.get(context.connection)?.has(`${endpoint}${address}`)) {
      receiver.close({ condition: 'amqp:unauthorized-access', description: `Unauthorized access. No claim for '${endpoint}${address}'.` })
    }
  })

  container.on('message', (context: EventContext) => {
    const receiver = context.receiver!
    const message = context.message!
    const address = receiver.target?.address ?? ''
    if (address === '$cbs') return answerPutToken(context, message)
    const size = Buffer.isBuffer(context.message) ? context.message.length : rhea.message.encode(message).length
    const rejection =
      size > maxMessageBytes
        ? { condition: 'amqp:link:message-size-exceeded', description: `The received message (size: ${size} bytes) exceeds the limit (${maxMessageBytes} bytes) currently allowed on the link.` }
        : rejections.shift()
    if (rejection) {
      context.delivery!.reject(rejection)
      return
    }
    // A batch (message format 0x80013700) reaches rhea undecoded: an envelope whose data sections are the messages.
    const batch = (context as { format?: number }).format === batchFormat
    const body = batch ? (rhea.message.decode(context.message as unknown as Buffer).body as { content: Buffer | Buffer[] }) : undefined
    const carried = body ? (Array.isArray(body.content) ? body.content : [body.content]).map((section) => rhea.message.decode(section)) : [message]
    batches.push(carried.length)
    for (const one of carried) {
      messages.push({
        entity: address,
        body: decodeBody(one.body),
        messageId: one.message_id === undefined ? undefined : String(one.message_id),
        subject: one.subject,
        contentType: one.content_type,
        applicationProperties: { ...(one.application_properties ?? {}) },
        connection: connectionIndex.get(context.connection) ?? -1,
      })
    }
    context.delivery!.accept()
  })

  function answerPutToken(context: EventContext, request: Message): void {
    const props = (request.application_properties ?? {}) as Record<string, unknown>
    const verdict = props.operation === 'put-token' ? verifySasToken(request.body, options.keyName, options.key) : ({ ok: false, reason: 'unsupported operation' } as const)
    const audience = String(props.name ?? '')
    const status = verdict.ok ? (verdict.audience === audience ? 202 : 401) : 401
    tokens.push({ audience, type: String(props.type ?? ''), status })
    if (status === 202) claims.get(context.connection)?.add(audience)
    context.delivery!.accept()
    // The reply goes to the $cbs receiver the client attached under the reply_to name.
    const replyLink = context.connection.find_sender((s: { name: string }) => s.name === request.reply_to)
    replyLink?.send({
      // The SDK matches the response to its request by this id (a uuid string it generated).
      correlation_id: request.message_id as string,
      body: undefined,
      application_properties: { 'status-code': status, 'status-description': status === 202 ? 'Accepted' : verdict.ok ? 'InvalidAudience' : verdict.reason },
    })
  }

  // Entity links take what a Standard-tier namespace takes: the SDK sizes its message batches by it.
  const server = container.listen({ port: 0, host: '127.0.0.1', receiver_options: { max_message_size: maxMessageBytes } }) as Server
  await new Promise<void>((resolve, reject) => {
    server.once('listening', resolve)
    server.once('error', reject)
  })
  const { port } = server.address() as AddressInfo
  // The SDK builds token audiences as `<Endpoint>/<entity>` with the endpoint it was given.
  endpoint = `sb://127.0.0.1:${port}/`
  const sockets = new Set<Socket>()
  server.on('connection', (socket) => {
    connections.opened++
    sockets.add(socket)
    socket.on('close', () => {
      connections.closed++
      sockets.delete(socket)
    })
  })

  return {
    port,
    connectionString: (overrides = {}) =>
      `Endpoint=sb://127.0.0.1:${port};SharedAccessKeyName=${overrides.keyName ?? options.keyName};SharedAccessKey=${overrides.key ?? options.key};UseDevelopmentEmulator=true`,
    messages,
    batches,
    tokens,
    connections,
    rejectNext: (error) => void rejections.push(error),
    close: () =>
      new Promise<void>((resolve) => {
        // A polite AMQP close lets both sides release their heartbeat timers; sockets that linger are cut.
        for (const connection of open) if (connection.is_open()) connection.close()
        server.close(() => resolve())
        setTimeout(() => {
          for (const socket of sockets) {
            socket.destroy()
            // rhea clears its timers on 'end', which a local destroy does not emit.
            socket.emit('end')
          }
        }, 1000).unref()
      }),
  }
}
