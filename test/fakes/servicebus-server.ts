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
  tokens: RecordedPutToken[]
  connections: { opened: number; closed: number }
  /** Reject the next delivered message with this AMQP error (e.g. `com.microsoft:server-busy`). */
  rejectNext(error: AmqpError): void
  close(): Promise<void>
}

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
    const rejection = rejections.shift()
    if (rejection) {
      context.delivery!.reject(rejection)
      return
    }
    messages.push({
      entity: address,
      body: decodeBody(message.body),
      messageId: message.message_id === undefined ? undefined : String(message.message_id),
      subject: message.subject,
      contentType: message.content_type,
      applicationProperties: { ...(message.application_properties ?? {}) },
      connection: connectionIndex.get(context.connection) ?? -1,
    })
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

  const server = container.listen({ port: 0, host: '127.0.0.1' }) as Server
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
