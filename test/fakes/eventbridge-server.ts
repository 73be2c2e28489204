import { randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseAuthorization, signatureMatches } from './sigv4.js'

/** One PutEvents entry the fake accepted onto a bus. */
export interface RecordedEvent {
  eventId: string
  bus: string
  source: string
  detailType: string
  /** The Detail string as sent. */
  detail: string
  time?: number
  /** Region and service of the SigV4 credential scope. */
  region: string
  service: string
  accessKeyId: string
  userAgent: string
  /** Index of the TCP connection the request came on (0 = first). */
  connection: number
}

/** A per-entry failure for the next accepted request: a 200 with FailedEntryCount 1. */
export interface FailedEntry {
  code: string
  message: string
}

/** A request-level error for the next request, as EventBridge answers it. */
export interface InjectedEventBridgeError {
  status: number
  type: string
  message: string
}

export interface FakeEventBridgeOptions {
  accessKeyId: string
  secretAccessKey: string
  /** Buses that exist, by name (ARNs of them are accepted too). */
  buses: string[]
}

export interface FakeEventBridge {
  /** `http://127.0.0.1:<port>`: the destination's `endpoint`. */
  endpoint: string
  events: RecordedEvent[]
  /** The number of entries of each PutEvents call that passed authentication, in order. */
  calls: number[]
  connections: { opened: number; closed: number }
  /** Fail the entry of the next PutEvents (the call itself answers 200). */
  failNextEntry(failure: FailedEntry): void
  /** Answer the next request with this error. */
  failNext(error: InjectedEventBridgeError): void
  /** Never answer the next request (its connection stays open until close()). */
  stallNext(): void
  close(): Promise<void>
}

const amzJson = 'application/x-amz-json-1.1'
const busArn = /^arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/(.+)$/
/** EventBridge's limit on the entries of one request. */
const maxEntryBytes = 256 * 1024

interface PutEventsEntry {
  EventBusName?: string
  Source?: string
  DetailType?: string
  Detail?: string
  Time?: number
}

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': amzJson, 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': randomUUID() })
  res.end(text)
}

const sendError = (res: http.ServerResponse, { status, type, message }: InjectedEventBridgeError) => sendJson(res, status, { __type: type, message })

/** Why an entry is invalid (as EventBridge reports it per entry), or null. */
function entryProblem(entry: PutEventsEntry): FailedEntry | null {
  if (!entry.Source || !entry.DetailType || entry.Detail === undefined) return { code: 'InvalidArgument', message: 'Parameters Source, DetailType and Detail are required.' }
  try {
    const detail: unknown = JSON.parse(entry.Detail)
    if (detail === null || typeof detail !== 'object' || Array.isArray(detail)) return { code: 'MalformedDetail', message: 'Detail must be a JSON object.' }
  } catch {
    return { code: 'MalformedDetail', message: 'Detail is malformed.' }
  }
  return null
}

/**
 * Start a fake EventBridge endpoint on 127.0.0.1 speaking the AWS JSON 1.1 protocol (`X-Amz-Target:
 * AWSEvents.PutEvents`). It verifies the SigV4 signature with the expected keys, answers PutEvents with an
 * event id per entry, and reports entry failures the way EventBridge does: a 200 with FailedEntryCount.
 *
 * @example
 * const bus = await startFakeEventBridge({ accessKeyId: 'AKIDFAKE', secretAccessKey: 's3cr3t', buses: ['orders'] })
 */
export async function startFakeEventBridge(options: FakeEventBridgeOptions): Promise<FakeEventBridge> {
  const events: RecordedEvent[] = []
  const connections = { opened: 0, closed: 0 }
  const entryFailures: FailedEntry[] = []
  const calls: number[] = []
  const errors: InjectedEventBridgeError[] = []
  let stalls = 0
  const socketIndex = new WeakMap<object, number>()

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => handle(req, res, Buffer.concat(chunks)))
  })
  server.on('connection', (socket) => {
    socketIndex.set(socket, connections.opened++)
    socket.on('close', () => connections.closed++)
  })

  function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): void {
    const auth = parseAuthorization(req.headers.authorization)
    if (!auth) return sendError(res, { status: 400, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' })
    if (auth.accessKeyId !== options.accessKeyId) return sendError(res, { status: 400, type: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' })
    if (auth.service !== 'events' || !signatureMatches(req, raw, auth, options.secretAccessKey)) {
      return sendError(res, { status: 400, type: 'InvalidSignatureException', message: 'The request signature we calculated does not match the signature you provided.' })
    }
    if (stalls > 0) {
      stalls--
      return
    }
    const injected = errors.shift()
    if (injected) return sendError(res, injected)
    if (req.headers['x-amz-target'] !== 'AWSEvents.PutEvents' || !String(req.headers['content-type']).startsWith(amzJson)) {
      return sendError(res, { status: 400, type: 'UnknownOperationException', message: 'only PutEvents is faked' })
    }
    const { Entries = [] } = JSON.parse(raw.toString('utf8')) as { Entries?: PutEventsEntry[] }
    calls.push(Entries.length)
    if (Entries.length < 1 || Entries.length > 10) return sendError(res, { status: 400, type: 'ValidationException', message: 'Entries must have 1 to 10 members.' })
    // The limit is on the request: all its entries together.
    const total = Entries.reduce((n, e) => n + Buffer.byteLength(e.Detail ?? '') + Buffer.byteLength(e.DetailType ?? '') + Buffer.byteLength(e.Source ?? ''), 0)
    if (total > maxEntryBytes) return sendError(res, { status: 400, type: 'ValidationException', message: 'Total size of the entries in the request is over the limit.' })
    const results: Record<string, string>[] = []
    for (const entry of Entries) {
      const bus = entry.EventBusName ?? 'default'
      const name = busArn.exec(bus)?.[1] ?? bus
      // Each entry names its own bus, so a missing one fails that entry, not the call.
      const missing = options.buses.includes(name) ? null : { code: 'ResourceNotFoundException', message: `Event bus ${name} does not exist.` }
      const failure = entryFailures.shift() ?? missing ?? entryProblem(entry)
      if (failure) {
        results.push({ ErrorCode: failure.code, ErrorMessage: failure.message })
        continue
      }
      const eventId = randomUUID()
      events.push({
        eventId,
        bus: name,
        source: entry.Source!,
        detailType: entry.DetailType!,
        detail: entry.Detail!,
        time: entry.Time,
        region: auth.region,
        service: auth.service,
        accessKeyId: auth.accessKeyId,
        userAgent: String(req.headers['user-agent'] ?? ''),
        connection: socketIndex.get(req.socket) ?? -1,
      })
      results.push({ EventId: eventId })
    }
    sendJson(res, 200, { FailedEntryCount: results.filter((r) => r.ErrorCode).length, Entries: results })
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    endpoint: `http://127.0.0.1:${port}`,
    events,
    calls,
    connections,
    failNextEntry: (failure) => void entryFailures.push(failure),
    failNext: (error) => void errors.push(error),
    stallNext: () => void stalls++,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
