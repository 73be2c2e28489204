import { createRequire } from 'node:module'
import net from 'node:net'
import path from 'node:path'
import * as grpc from '@grpc/grpc-js'
import * as protoLoader from '@grpc/proto-loader'

/** One message as the SDK published it. */
export interface RecordedPubsubMessage {
  /** `projects/<project>/topics/<topic>` */
  topic: string
  data: string
  attributes: Record<string, string>
  orderingKey: string
  /** Number of messages in the Publish call that carried it (1 when batching is off). */
  batchSize: number
  userAgent: string
  /** Index of the TCP connection the call came on (0 = first). */
  connection: number
}

/** The topics that exist, and those the caller may not publish to. */
export interface FakePubsubOptions {
  /** Full topic names that exist: `projects/<project>/topics/<topic>`. */
  topics: string[]
  /** Topics that exist but the caller may not publish to (PERMISSION_DENIED, as for a missing IAM role). */
  forbidden?: string[]
}

/** A running fake Pub/Sub publisher service. */
export interface FakePubsub {
  /** `127.0.0.1:<port>`: use as the destination's `endpoint` (emulator form). */
  endpoint: string
  messages: RecordedPubsubMessage[]
  connections: { opened: number; closed: number }
  /** Fail the next Publish call with this gRPC status. */
  failNext(code: grpc.status, details: string): void
  close(): Promise<void>
}

interface PublishRequest {
  topic: string
  messages: { data: Buffer; attributes: Record<string, string>; orderingKey: string }[]
}

/** The root folder of an installed package, found from its main file (its package.json may not be exported). */
function packageRoot(from: string, name: string): string {
  let dir = path.dirname(createRequire(from).resolve(name))
  while (!dir.endsWith(path.join('node_modules', name))) {
    const parent = path.dirname(dir)
    if (parent === dir) throw new Error(`cannot find the folder of ${name}`)
    dir = parent
  }
  return dir
}

/** The Publisher service definition, from the pubsub.proto that ships with the SDK (and the google-gax common protos). */
function publisherService(): grpc.ServiceDefinition {
  const pubsubRoot = packageRoot(import.meta.url, '@google-cloud/pubsub')
  // google-gax is the SDK's own dependency: resolve it from there.
  const gaxRoot = packageRoot(path.join(pubsubRoot, 'package.json'), 'google-gax')
  const definition = protoLoader.loadSync('google/pubsub/v1/pubsub.proto', {
    includeDirs: [path.join(pubsubRoot, 'build/protos'), path.join(gaxRoot, 'build/protos')],
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
  })
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { google: { pubsub: { v1: { Publisher: { service: grpc.ServiceDefinition } } } } }
  return loaded.google.pubsub.v1.Publisher.service
}

function statusError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() })
}

/**
 * Start a fake Pub/Sub on 127.0.0.1 speaking gRPC (google.pubsub.v1.Publisher) like the emulator does:
 * plaintext HTTP/2, no auth. The SDK reaches it through `apiEndpoint`; connections are counted at TCP level.
 *
 * @example
 * const pubsub = await startFakePubsub({ topics: ['projects/p/topics/orders'] })
 */
export async function startFakePubsub(options: FakePubsubOptions): Promise<FakePubsub> {
  const messages: RecordedPubsubMessage[] = []
  const connections = { opened: 0, closed: 0 }
  const failures: { code: grpc.status; details: string }[] = []
  const connectionByPort = new Map<number, number>()
  const forbidden = new Set(options.forbidden ?? [])
  let nextId = 1

  const server = new grpc.Server()
  server.addService(publisherService(), {
    publish(call: grpc.ServerUnaryCall<PublishRequest, unknown>, callback: grpc.sendUnaryData<{ messageIds: string[] }>) {
      const { topic } = call.request
      const failure = failures.shift()
      if (failure) return callback(statusError(failure.code, failure.details))
      if (forbidden.has(topic)) return callback(statusError(grpc.status.PERMISSION_DENIED, `User not authorized to perform this action. (resource=${topic})`))
      if (!options.topics.includes(topic)) return callback(statusError(grpc.status.NOT_FOUND, `Topic not found (resource=${topic}).`))
      const port = Number(/:(\d+)$/.exec(call.getPeer())?.[1])
      const ids: string[] = []
      for (const m of call.request.messages) {
        messages.push({
          topic,
          data: m.data.toString('utf8'),
          attributes: { ...m.attributes },
          orderingKey: m.orderingKey,
          batchSize: call.request.messages.length,
          userAgent: String(call.metadata.get('user-agent')[0] ?? ''),
          connection: connectionByPort.get(port) ?? -1,
        })
        ids.push(String(nextId++))
      }
      callback(null, { messageIds: ids })
    },
    getTopic(call: grpc.ServerUnaryCall<{ topic: string }, unknown>, callback: grpc.sendUnaryData<{ name: string }>) {
      const { topic } = call.request
      if (!options.topics.includes(topic) && !forbidden.has(topic)) return callback(statusError(grpc.status.NOT_FOUND, `Resource not found (resource=${topic}).`))
      callback(null, { name: topic })
    },
  })

  // Our own listener feeds sockets to the gRPC server so the test can see every TCP connection open and close.
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure())
  const sockets = new Set<net.Socket>()
  const listener = net.createServer((socket) => {
    connectionByPort.set(socket.remotePort ?? -1, connections.opened++)
    sockets.add(socket)
    socket.on('close', () => {
      connections.closed++
      sockets.delete(socket)
    })
    injector.injectConnection(socket)
  })
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve))
  const { port } = listener.address() as net.AddressInfo

  return {
    endpoint: `127.0.0.1:${port}`,
    messages,
    connections,
    failNext: (code, details) => void failures.push({ code, details }),
    close: () =>
      new Promise<void>((resolve) => {
        injector.destroy()
        for (const socket of sockets) socket.destroy()
        listener.close(() => resolve())
        server.forceShutdown()
      }),
  }
}
