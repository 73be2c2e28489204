import http from 'node:http'
import type { AddressInfo } from 'node:net'

/** One Kinesis call that went through the front. */
export interface RecordedKinesisCall {
  /** `PutRecord`, `PutRecords`, … (the `X-Amz-Target` operation). */
  action: string
  /** Records in a PutRecords call (1 for PutRecord). */
  records: number
}

/** A running front: Kinesis calls pass through it to the emulator behind it. */
export interface KinesisFront {
  /** `http://127.0.0.1:<port>`: use as the destination's `endpoint`. */
  endpoint: string
  calls: RecordedKinesisCall[]
  /**
   * Refuse the next PutRecords record whose data contains `match` as Kinesis does, with this `ErrorCode` in its
   * result entry (e.g. `ProvisionedThroughputExceededException`): the record is not written, the others are.
   */
  failRecord(match: string, code: string, message: string): void
  /** Answer the next call with this error (e.g. 400 `ProvisionedThroughputExceededException`, 500 `InternalFailure`). */
  failNext(status: number, type: string, message: string): void
  close(): Promise<void>
}

interface PutRecordsInput {
  StreamName: string
  Records: { Data: string; PartitionKey: string }[]
}

interface PutRecordsOutput {
  FailedRecordCount: number
  Records: Record<string, string>[]
}

const amzJson = 'application/x-amz-json-1.1'

function sendJson(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(status, { 'content-type': amzJson, 'content-length': Buffer.byteLength(text) })
  res.end(text)
}

/** Pass a request on to the emulator as it came (the body possibly changed); resolves with its status and body. */
function forward(upstream: URL, req: http.IncomingMessage, body: Buffer): Promise<{ status: number; body: Buffer }> {
  const headers = { ...req.headers, 'content-length': String(body.length) }
  return new Promise((resolve, reject) => {
    const out = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers }, (answer) => {
      const chunks: Buffer[] = []
      answer.on('data', (c: Buffer) => chunks.push(c))
      answer.on('end', () => resolve({ status: answer.statusCode ?? 500, body: Buffer.concat(chunks) }))
    })
    out.on('error', reject)
    out.end(body)
  })
}

/**
 * Start an HTTP front on 127.0.0.1 before a Kinesis emulator (kinesalite does not fail single records), to count the
 * calls the SDK makes and to answer a PutRecords with per-record failures as the service does: the refused records
 * are kept from the emulator and their result entries carry `ErrorCode` and `ErrorMessage`.
 *
 * @example
 * const front = await startKinesisFront(kinesis.endpoint)
 * front.failRecord('"i":1', 'ProvisionedThroughputExceededException', 'Rate exceeded for shard shardId-000000000000')
 */
export async function startKinesisFront(upstreamEndpoint: string): Promise<KinesisFront> {
  const upstream = new URL(upstreamEndpoint)
  const calls: RecordedKinesisCall[] = []
  const recordFailures: { match: string; code: string; message: string }[] = []
  const callFailures: { status: number; type: string; message: string }[] = []

  async function handle(req: http.IncomingMessage, res: http.ServerResponse, raw: Buffer): Promise<void> {
    const action = String(req.headers['x-amz-target'] ?? '').split('.').at(-1) ?? ''
    const input = JSON.parse(raw.toString('utf8') || '{}') as PutRecordsInput
    calls.push({ action, records: action === 'PutRecords' ? input.Records.length : 1 })
    const failure = callFailures.shift()
    if (failure) return sendJson(res, failure.status, { __type: failure.type, message: failure.message })
    if (action !== 'PutRecords') return relay(res, await forward(upstream, req, raw))
    // Which records fail: the first pending failure each matches, each failure used once.
    const refused = input.Records.map((record) => {
      const data = Buffer.from(record.Data, 'base64').toString('utf8')
      const index = recordFailures.findIndex((f) => data.includes(f.match))
      return index >= 0 ? recordFailures.splice(index, 1)[0] : undefined
    })
    const kept = input.Records.filter((_, i) => !refused[i])
    let written: PutRecordsOutput = { FailedRecordCount: 0, Records: [] }
    if (kept.length > 0) {
      const answer = await forward(upstream, req, Buffer.from(JSON.stringify({ ...input, Records: kept })))
      if (answer.status !== 200) return relay(res, answer)
      written = JSON.parse(answer.body.toString('utf8')) as PutRecordsOutput
    }
    const results = refused.map((failure) => (failure ? { ErrorCode: failure.code, ErrorMessage: failure.message } : written.Records.shift()!))
    sendJson(res, 200, { FailedRecordCount: written.FailedRecordCount + refused.filter(Boolean).length, Records: results })
  }

  function relay(res: http.ServerResponse, answer: { status: number; body: Buffer }): void {
    res.writeHead(answer.status, { 'content-type': amzJson, 'content-length': answer.body.length })
    res.end(answer.body)
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => void handle(req, res, Buffer.concat(chunks)).catch(() => sendJson(res, 500, { __type: 'InternalFailure', message: 'front failed' })))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    calls,
    failRecord: (match, code, message) => void recordFailures.push({ match, code, message }),
    failNext: (status, type, message) => void callFailures.push({ status, type, message }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
