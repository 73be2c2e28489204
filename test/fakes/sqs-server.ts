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

/** One call of the SendMessage family. */
export interface RecordedSqsCall {
  action: 'SendMessage' | 'SendMessageBatch'
  entries: number
}

/** The message fields of SendMessage and of each SendMessageBatch entry. */
interface SendInput {
  QueueUrl: string
  MessageBody: string
  MessageAttributes?: Record<string, { DataType: string; StringValue?: string }>
  MessageGroupId?: string
  MessageDeduplicationId?: string
}

/** Who sent a request, recorded with each of its messages. */
type Caller = Pick<RecordedSendMessage, 'region' | 'accessKeyId' | 'sessionToken' | 'userAgent' | 'connection'>

/** SQS counts the body and every attribute's name, type and value against its 256 KiB limit. */
function messageSize(input: SendInput): number {
  return Buffer.byteLength(input.MessageBody) + Object.entries(input.MessageAttributes ?? {}).reduce((n, [k, a]) => n + Buffer.byteLength(k) + Buffer.byteLength(a.DataType) + Buffer.byteLength(a.StringValue ?? ''), 0)
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
  /** Every SendMessage or SendMessageBatch call that passed authentication, in order. */
  calls: RecordedSqsCall[]
  connections: { opened: number; closed: number }
  /** Answer the next request with this error (as real SQS would). */
  failNext(error: InjectedSqsError): void
  /** Refuse the next batch entry whose body contains `match` with this error, as a `Failed` entry (5xx: not the sender's fault). */
  failEntry(match: string, failure: InjectedSqsError): void
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
  const calls: RecordedSqsCall[] = []
  const entryFailures: { match: string; failure: InjectedSqsError }[] = []
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
    const target = String(req.headers['x-amz-target'] ?? '')
    if ((target !== 'AmazonSQS.SendMessage' && target !== 'AmazonSQS.SendMessageBatch') || !String(req.headers['content-type']).startsWith(amzJson)) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#UnsupportedOperation', queryError: 'AWS.SimpleQueueService.UnsupportedOperation;Sender', message: 'only SendMessage and SendMessageBatch are faked' })
    }
    const input = JSON.parse(raw.toString('utf8')) as SendInput & { Entries?: (SendInput & { Id: string })[] }
    const name = new URL(input.QueueUrl).pathname.split('/').at(-1) ?? ''
    if (!options.queues.includes(name)) {
      return sendError(res, { status: 400, type: 'com.amazonaws.sqs#QueueDoesNotExist', queryError: 'AWS.SimpleQueueService.NonExistentQueue;Sender', message: 'The specified queue does not exist.' })
    }
    const token = req.headers['x-amz-security-token']
    const caller = {
      region: auth.region,
      accessKeyId: auth.accessKeyId,
      sessionToken: typeof token === 'string' ? token : undefined,
      userAgent: String(req.headers['user-agent'] ?? ''),
      connection: socketIndex.get(req.socket) ?? -1,
    }
    if (target === 'AmazonSQS.SendMessageBatch') return sendBatch(res, name, input.QueueUrl, input.Entries ?? [], caller)
    calls.push({ action: 'SendMessage', entries: 1 })
    const refused = entryError(name, input)
    if (refused) return sendError(res, refused)
    sendJson(res, 200, accept(name, input, caller))
  }

  /** SendMessageBatch as SQS answers it: request-level limits refuse the whole call, the rest is judged per entry. */
  function sendBatch(res: http.ServerResponse, name: string, queueUrl: string, entries: (SendInput & { Id: string })[], caller: Caller): void {
    calls.push({ action: 'SendMessageBatch', entries: entries.length })
    const batchError = (type: string, message: string) => sendError(res, { status: 400, type: `com.amazonaws.sqs#${type}`, queryError: `AWS.SimpleQueueService.${type};Sender`, message })
    if (entries.length === 0) return batchError('EmptyBatchRequest', 'There should be at least one SendMessageBatchRequestEntry in the request.')
    if (entries.length > 10) return batchError('TooManyEntriesInBatchRequest', `Maximum number of entries per request are 10. You have sent ${entries.length}.`)
    if (new Set(entries.map((e) => e.Id)).size !== entries.length) return batchError('BatchEntryIdsNotDistinct', 'Two or more batch entries in the request have the same Id.')
    const total = entries.reduce((n, e) => n + messageSize(e), 0)
    if (total > maxMessageBytes) return batchError('BatchRequestTooLong', `Batch requests cannot be longer than ${maxMessageBytes} bytes. You have sent ${total} bytes.`)
    const Successful: Record<string, string>[] = []
    const Failed: { Id: string; SenderFault: boolean; Code: string; Message: string }[] = []
    for (const entry of entries) {
      const injected = entryFailures.findIndex((f) => entry.MessageBody.includes(f.match))
      const refused = injected >= 0 ? entryFailures.splice(injected, 1)[0]!.failure : entryError(name, { ...entry, QueueUrl: queueUrl })
      if (refused) Failed.push({ Id: entry.Id, SenderFault: refused.status < 500, Code: refused.queryError.split(';')[0]!, Message: refused.message })
      else Successful.push({ Id: entry.Id, ...accept(name, { ...entry, QueueUrl: queueUrl }, caller) })
    }
    sendJson(res, 200, { Successful, Failed })
  }

  /** Why SQS would refuse this message, or undefined. */
  function entryError(name: string, input: SendInput): InjectedSqsError | undefined {
    const attributes = input.MessageAttributes ?? {}
    const names = Object.keys(attributes)
    if (messageSize(input) > maxMessageBytes) {
      return { status: 400, type: 'com.amazonaws.sqs#InvalidParameterValue', queryError: 'InvalidParameterValue;Sender', message: `One or more parameters are invalid. Reason: Message must be shorter than ${maxMessageBytes} bytes.` }
    }
    // The real service rejects the whole message for these; the publisher must never send them.
    if (names.length > 10 || names.some((n) => !attributeName.test(n)) || Object.values(attributes).some((a) => !a.StringValue)) {
      return { status: 400, type: 'com.amazonaws.sqs#InvalidParameterValue', queryError: 'InvalidParameterValue;Sender', message: 'invalid message attributes' }
    }
    if (name.endsWith('.fifo') && !input.MessageGroupId) {
      return { status: 400, type: 'com.amazonaws.sqs#MissingParameter', queryError: 'MissingParameter;Sender', message: 'The request must contain the parameter MessageGroupId.' }
    }
    return undefined
  }

  /** Record an accepted message; its answer fields (MessageId, MD5s, SequenceNumber). */
  function accept(name: string, input: SendInput, caller: Caller): Record<string, string> {
    const attributes = input.MessageAttributes ?? {}
    messages.push({ queueUrl: input.QueueUrl, queueName: name, body: input.MessageBody, attributes, groupId: input.MessageGroupId, deduplicationId: input.MessageDeduplicationId, ...caller })
    const out: Record<string, string> = { MessageId: randomUUID(), MD5OfMessageBody: createHash('md5').update(input.MessageBody, 'utf8').digest('hex') }
    if (Object.keys(attributes).length > 0) out.MD5OfMessageAttributes = md5OfMessageAttributes(attributes)
    if (name.endsWith('.fifo')) out.SequenceNumber = String(messages.length).padStart(20, '0')
    return out
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const endpoint = `http://127.0.0.1:${port}`
  return {
    endpoint,
    queueUrl: (name) => `${endpoint}/000000000000/${name}`,
    messages,
    calls,
    connections,
    failNext: (error) => void pending.push(error),
    failEntry: (match, failure) => void entryFailures.push({ match, failure }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
