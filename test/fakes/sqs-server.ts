import { createHash, randomUUID } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { parseAuthorization, signatureMatches } from './sigv4.js'

/** One SendMessage as the SDK put it on the wire. */
export interface RecordedSendMessage {
  queueUrl: string
  queueName: string
  body: string
  attributes: Record<string, { DataType: string; StringValue?: string }>
  groupId?: string
  deduplicationId?: string
  /** Region of the SigV4 credential scope. */
  region: string
  accessKeyId: string
  sessionToken?: string
  userAgent: string
  /** Index of the TCP connection the request came on (0 = first). */
  connection: number
}

/** An error the next request will get instead of being handled. */
export interface InjectedSqsError {
  status: number
  type: string
  queryError: string
  message: string
}

/** The keys the fake accepts and the queues that exist. */
export interface FakeSqsOptions {
  accessKeyId: string
  secretAccessKey: string
  /** Queue names that exist. */
  queues: string[]
  /** When set, requests must carry this X-Amz-Security-Token. */
  sessionToken?: string
}

/** A running fake SQS endpoint. */
export interface FakeSqs {
  /** `http://127.0.0.1:<port>`: use as the destination's `endpoint`. */
  endpoint: string
  queueUrl(name: string): string
  messages: RecordedSendMessage[]
  connections: { opened: number; closed: number }
  /** Answer the next request with this error (as real SQS would). */
  failNext(error: InjectedSqsError): void
  close(): Promise<void>
}

const amzJson = 'application/x-amz-json-1.0'
/** The largest message SQS takes: 256 KiB, body and attributes together. */
const maxMessageBytes = 262_144

/** MD5 of the message attributes, computed the way SQS documents it (sorted names, length-prefixed fields). */
export function md5OfMessageAttributes(attributes: Record<string, { DataType: string; StringValue?: string }>): string {
  const hash = createHash('md5')
  const field = (value: string) => {
    const bytes = Buffer.from(value, 'utf8')
    const length = Buffer.alloc(4)
    length.writeUInt32BE(bytes.length)
    hash.update(length).update(bytes)
  }
  for (const name of Object.keys(attributes).sort()) {
    const attribute = attributes[name]!
    field(name)
    field(attribute.DataType)
    hash.update(Buffer.from([1])) // transport type 1 = String / Number
    field(attribute.StringValue ?? '')
  }
  return hash.digest('hex')
}

function sendJson(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': amzJson, 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': randomUUID(), ...headers })
  res.end(text)
}

/** An SQS error in the AWS JSON 1.0 shape, with the query-compatible code header the real service adds. */
function sendError(res: http.ServerResponse, error: InjectedSqsError): void {
  sendJson(res, error.status, { __type: error.type, message: error.message }, { 'x-amzn-query-error': error.queryError })
}

const attributeName = /^(?!(aws|amazon)\.)(?!.*\.\.)[A-Za-z0-9_-]([A-Za-z0-9_.-]{0,254}[A-Za-z0-9_-])?$/i

/**
 * Start a fake SQS endpoint on 127.0.0.1 speaking the AWS JSON 1.0 protocol of the current SDK.
 * It verifies the SigV4 signature with the expected keys and answers SendMessage like SQS does.
 *
 * @example
 * const sqs = await startFakeSqs({ accessKeyId: 'AKIDFAKE', secretAccessKey: 's3cr3t', queues: ['orders'] })
 */
export async function startFakeSqs(options: FakeSqsOptions): Promise<FakeSqs> {
  const messages: RecordedSendMessage[] = []
  const connections = { opened: 0, closed: 0 }
  const pending: InjectedSqsError[] = []
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
    if (!auth) return sendError(res, { status: 400, type: 'com.amazon.coral.service#MissingAuthenticationTokenException', queryError: 'MissingAuthenticationToken;Sender', message: 'Request is missing Authentication Token' })
    if (auth.accessKeyId !== options.accessKeyId || (options.sessionToken !== undefined && req.headers['x-amz-security-token'] !== options.sessionToken)) {
      return sendError(res, { status: 403, type: 'com.amazon.coral.service#UnrecognizedClientException', queryError: 'InvalidClientTokenId;Sender', message: 'The security token included in the request is invalid.' })
    }
    if (!signatureMatches(req, raw, auth, options.secretAccessKey)) {
      return sendError(res, {
        status: 403,
        type: 'com.amazon.coral.service#InvalidSignatureException',
        queryError: 'SignatureDoesNotMatch;Sender',
        message: 'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method.',
      })
    }
    const injected = pending.shift()
    if (injected) return sendError(res, injected)
    if (req.headers['x-amz-target'] !== 'AmazonSQS.SendMessage' || !String(req.headers['content-type']).startsWith(amzJson)) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#UnsupportedOperation', queryError: 'AWS.SimpleQueueService.UnsupportedOperation;Sender', message: 'only SendMessage is faked' })
    }
    const input = JSON.parse(raw.toString('utf8')) as {
      QueueUrl: string
      MessageBody: string
      MessageAttributes?: Record<string, { DataType: string; StringValue?: string }>
      MessageGroupId?: string
      MessageDeduplicationId?: string
    }
    const name = new URL(input.QueueUrl).pathname.split('/').at(-1) ?? ''
    if (!options.queues.includes(name)) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#QueueDoesNotExist', queryError: 'AWS.SimpleQueueService.NonExistentQueue;Sender', message: 'The specified queue does not exist.' })
    }
    const attributes = input.MessageAttributes ?? {}
    const names = Object.keys(attributes)
    // SQS counts the body and every attribute's name, type and value against its 256 KiB limit.
    const size = Buffer.byteLength(input.MessageBody) + Object.entries(attributes).reduce((n, [k, a]) => n + Buffer.byteLength(k) + Buffer.byteLength(a.DataType) + Buffer.byteLength(a.StringValue ?? ''), 0)
    if (size > maxMessageBytes) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#InvalidParameterValue', queryError: 'InvalidParameterValue;Sender', message: `One or more parameters are invalid. Reason: Message must be shorter than ${maxMessageBytes} bytes.` })
    }
    // The real service rejects the whole message for these; the publisher must never send them.
    if (names.length > 10 || names.some((n) => !attributeName.test(n)) || Object.values(attributes).some((a) => !a.StringValue)) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#InvalidParameterValue', queryError: 'InvalidParameterValue;Sender', message: 'invalid message attributes' })
    }
    if (name.endsWith('.fifo') && !input.MessageGroupId) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#MissingParameter', queryError: 'MissingParameter;Sender', message: 'The request must contain the parameter MessageGroupId.' })
    }
    const token = req.headers['x-amz-security-token']
    messages.push({
      queueUrl: input.QueueUrl,
      queueName: name,
      body: input.MessageBody,
      attributes,
      groupId: input.MessageGroupId,
      deduplicationId: input.MessageDeduplicationId,
      region: auth.region,
      accessKeyId: auth.accessKeyId,
      sessionToken: typeof token === 'string' ? token : undefined,
      userAgent: String(req.headers['user-agent'] ?? ''),
      connection: socketIndex.get(req.socket) ?? -1,
    })
    const out: Record<string, string> = { MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(input.MessageBody, 'utf8').digest('hex') }
    if (names.length > 0) out.MD5OfMessageAttributes = md5OfMessageAttributes(attributes)
    if (name.endsWith('.fifo')) out.SequenceNumber = String(messages.length).padStart(20, '0')
    sendJson(res, 200, out)
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    queueUrl: (name) => `${endpoint}/000000000000/${name}`,
    messages,
    connections,
    failNext: (error) => void pending.push(error),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
