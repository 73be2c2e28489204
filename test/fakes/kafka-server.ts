import { createHash, createHmac, pbkdf2Sync, randomBytes, timingSafeEqual } from 'node:crypto'
import net, { type AddressInfo } from 'node:net'
import tls from 'node:tls'
import { apiKeys, decoder, encoder, errorCodes, readRecordBatch, type KafkaDecoder, type KafkaEncoder } from './kafka-codec.js'

/** One record as it sits in the fake's log, decoded from the batch the client sent (CRC32C checked). */
export interface LoggedRecord {
  topic: string
  partition: number
  offset: number
  key: string | null
  value: string | null
  headers: Record<string, string>
  timestamp: number
  producerId: bigint
  producerEpoch: number
  sequence: number
  /** The `acks` of the Produce request that carried it. */
  acks: number
  /** Index of the TCP connection it came on (0 = first). */
  connection: number
}

/** SASL as the fake requires it: one user, one mechanism. */
export interface FakeKafkaSasl {
  mechanism: 'PLAIN' | 'SCRAM-SHA-256' | 'SCRAM-SHA-512'
  username: string
  password: string
}

export interface FakeKafkaOptions {
  /** Topics that exist, with their partition counts (default 1). */
  topics: Record<string, number> | string[]
  sasl?: FakeKafkaSasl
  /** Listen with TLS, this key and certificate (a client trusts it only if told to: NODE_EXTRA_CA_CERTS). */
  tls?: { key: string; cert: string }
}

/** A running fake broker: a one-node cluster (node 1) on 127.0.0.1. */
export interface FakeKafka {
  /** `127.0.0.1:<port>`, the destination's `brokers`. */
  broker: string
  port: number
  /** Every record appended, in log order. */
  log: LoggedRecord[]
  /** Requests by API name, in the order they came. */
  requests: string[]
  connections: { opened: number; closed: number }
  /** Answer the next `times` Produce requests of `topic` with `code` (nothing is appended). */
  failProduce(topic: string, code: number, times?: number): void
  /** Append the next Produce batch of `topic`, then drop the connection instead of answering (a lost acknowledgement). */
  dropAfterAppend(topic: string): void
  /** Report the next `times` Metadata answers for `topic` with this partition error (e.g. LEADER_NOT_AVAILABLE). */
  failMetadata(topic: string, code: number, times?: number): void
  close(): Promise<void>
}

/** The versions the fake speaks: all of them without flexible (compact, tagged) fields. */
const supported: Record<number, [number, number]> = {
  [apiKeys.Produce]: [3, 7],
  [apiKeys.Metadata]: [1, 5],
  [apiKeys.SaslHandshake]: [0, 1],
  [apiKeys.ApiVersions]: [0, 2],
  [apiKeys.InitProducerId]: [0, 1],
  [apiKeys.SaslAuthenticate]: [0, 1],
}
const apiNames = Object.fromEntries(Object.entries(apiKeys).map(([name, key]) => [key, name])) as Record<number, string>

interface Request {
  apiKey: number
  version: number
  correlationId: number
  body: KafkaDecoder
}

/** Per connection: its index and where its SASL exchange stands. */
interface Session {
  index: number
  authenticated: boolean
  mechanism?: string
  scram?: { clientFirstBare: string; serverFirst: string; nonce: string; salt: Buffer; iterations: number }
}

const hashOf = (mechanism: string) => (mechanism === 'SCRAM-SHA-512' ? 'sha512' : 'sha256')

/**
 * Start a fake Kafka broker that speaks the protocol the kafkajs producer uses — ApiVersions, Metadata,
 * InitProducerId, Produce (record batch v2, CRC32C checked, idempotent sequence numbers enforced), SaslHandshake
 * and SaslAuthenticate (PLAIN and SCRAM-SHA-256/512, verified as a broker does) — over TCP on 127.0.0.1.
 *
 * @example
 * const kafka = await startFakeKafka({ topics: ['orders'] })
 */
export async function startFakeKafka(options: FakeKafkaOptions): Promise<FakeKafka> {
  const topics = new Map<string, number>(Array.isArray(options.topics) ? options.topics.map((t) => [t, 1]) : Object.entries(options.topics))
  const log: LoggedRecord[] = []
  const requests: string[] = []
  const connections = { opened: 0, closed: 0 }
  const produceFaults = new Map<string, { code: number; times: number }>()
  const metadataFaults = new Map<string, { code: number; times: number }>()
  const dropAfter = new Set<string>()
  /** Next offset per topic-partition; next expected sequence and last batch per producer and partition. */
  const nextOffset = new Map<string, number>()
  const sequences = new Map<string, { next: number; lastFirst: number; lastOffset: number }>()
  let nextProducerId = 1000n
  let port = 0

  const serve = (socket: net.Socket) => {
    const session: Session = { index: connections.opened++, authenticated: !options.sasl }
    socket.on('close', () => connections.closed++)
    socket.on('error', () => {})
    let pending = Buffer.alloc(0)
    let chain = Promise.resolve()
    socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0))
        pending = pending.subarray(4 + frame.length)
        // Answers go out in request order, as a broker's do on one connection.
        chain = chain.then(() => answer(socket, session, frame)).catch(() => void socket.destroy())
      }
    })
  }
  const server = options.tls ? tls.createServer(options.tls, serve) : net.createServer(serve)

  async function answer(socket: net.Socket, session: Session, frame: Buffer): Promise<void> {
    const d = decoder(frame)
    const request: Request = { apiKey: d.readInt16(), version: d.readInt16(), correlationId: d.readInt32(), body: d }
    d.readString() // client id
    requests.push(apiNames[request.apiKey] ?? `api ${request.apiKey}`)
    const range = supported[request.apiKey]
    if (!range || request.version < range[0] || request.version > range[1]) {
      // ApiVersions answers an unsupported version with its v0 body, so the client can pick another.
      if (request.apiKey === apiKeys.ApiVersions) return send(socket, request, apiVersions(request.version, errorCodes.UNSUPPORTED_VERSION))
      return void socket.destroy()
    }
    const open = request.apiKey === apiKeys.ApiVersions || request.apiKey === apiKeys.SaslHandshake || request.apiKey === apiKeys.SaslAuthenticate
    // A broker with a SASL listener drops a connection that sends anything else before authenticating.
    if (!session.authenticated && !open) return void socket.destroy()
    switch (request.apiKey) {
      case apiKeys.ApiVersions:
        return send(socket, request, apiVersions(request.version, errorCodes.NONE))
      case apiKeys.SaslHandshake:
        return send(socket, request, saslHandshake(session, d))
      case apiKeys.SaslAuthenticate: {
        const body = saslAuthenticate(session, request.version, d)
        send(socket, request, body.response)
        if (body.close) socket.end()
        return
      }
      case apiKeys.Metadata:
        return send(socket, request, metadata(request.version, d))
      case apiKeys.InitProducerId:
        return send(socket, request, encoder().writeInt32(0).writeInt16(errorCodes.NONE).writeInt64(nextProducerId++).writeInt16(0))
      case apiKeys.Produce: {
        const body = await produce(request.version, d, session.index)
        if (body) return send(socket, request, body)
        return void socket.destroy()
      }
    }
  }

  function send(socket: net.Socket, request: Request, body: KafkaEncoder): void {
    const payload = body.buffer
    const frame = Buffer.alloc(8)
    frame.writeInt32BE(payload.length + 4, 0)
    frame.writeInt32BE(request.correlationId, 4)
    socket.write(Buffer.concat([frame, payload]))
  }

  function apiVersions(version: number, error: number): KafkaEncoder {
    const entries = Object.entries(supported).map(([key, [min, max]]) => encoder().writeInt16(Number(key)).writeInt16(min).writeInt16(max))
    const body = encoder().writeInt16(error).writeArray(entries)
    return version >= 1 && error === errorCodes.NONE ? body.writeInt32(0) : body
  }

  function saslHandshake(session: Session, d: KafkaDecoder): KafkaEncoder {
    const mechanism = d.readString() ?? ''
    const offered: string[] = options.sasl ? [options.sasl.mechanism] : []
    const error = offered.includes(mechanism) ? errorCodes.NONE : errorCodes.UNSUPPORTED_SASL_MECHANISM
    if (error === errorCodes.NONE) session.mechanism = mechanism
    return encoder().writeInt16(error).writeArray(offered, 'string')
  }

  /** One SaslAuthenticate round: PLAIN in one, SCRAM in two (client-first, client-final). */
  function saslAuthenticate(session: Session, version: number, d: KafkaDecoder): { response: KafkaEncoder; close?: boolean } {
    const bytes = d.readBytes() ?? Buffer.alloc(0)
    const reply = (error: number, message: string | null, auth: Buffer | string = Buffer.alloc(0)) => {
      const body = encoder().writeInt16(error).writeString(message).writeBytes(Buffer.from(auth))
      return version >= 1 ? body.writeInt64(0) : body
    }
    const sasl = options.sasl
    if (!sasl || session.mechanism !== sasl.mechanism) return { response: reply(errorCodes.ILLEGAL_SASL_STATE, 'SaslAuthenticate before SaslHandshake'), close: true }
    const failed = { response: reply(errorCodes.SASL_AUTHENTICATION_FAILED, `Authentication failed during authentication due to invalid credentials with SASL mechanism ${sasl.mechanism}`), close: true }
    if (sasl.mechanism === 'PLAIN') {
      const [, user, password] = bytes.toString('utf8').split('\u0000')
      if (user !== sasl.username || password !== sasl.password) return failed
      session.authenticated = true
      return { response: reply(errorCodes.NONE, null) }
    }
    const hash = hashOf(sasl.mechanism)
    const text = bytes.toString('utf8')
    if (!session.scram) {
      // client-first: n,,n=<user>,r=<client nonce>
      const bare = text.replace(/^n,[^,]*,/, '')
      const fields = Object.fromEntries(bare.split(',').map((f) => [f[0], f.slice(2)]))
      if (fields.n !== sasl.username || !fields.r) return failed
      const salt = randomBytes(16)
      const nonce = fields.r + randomBytes(12).toString('base64')
      const serverFirst = `r=${nonce},s=${salt.toString('base64')},i=4096`
      session.scram = { clientFirstBare: bare, serverFirst, nonce, salt, iterations: 4096 }
      return { response: reply(errorCodes.NONE, null, serverFirst) }
    }
    // client-final: c=biws,r=<nonce>,p=<proof>
    const { clientFirstBare, serverFirst, nonce, salt, iterations } = session.scram
    const withoutProof = text.replace(/,p=[^,]*$/, '')
    const fields = Object.fromEntries(text.split(',').map((f) => [f[0], f.slice(2)]))
    if (fields.r !== nonce || !fields.p) return failed
    const salted = pbkdf2Sync(sasl.password, salt, iterations, hash === 'sha512' ? 64 : 32, hash)
    const clientKey = createHmac(hash, salted).update('Client Key').digest()
    const storedKey = createHash(hash).update(clientKey).digest()
    const authMessage = `${clientFirstBare},${serverFirst},${withoutProof}`
    const signature = createHmac(hash, storedKey).update(authMessage).digest()
    const proof = Buffer.from(fields.p, 'base64')
    const expected = Buffer.from(clientKey.map((b, i) => b ^ signature[i]!))
    if (proof.length !== expected.length || !timingSafeEqual(proof, expected)) return failed
    const serverKey = createHmac(hash, salted).update('Server Key').digest()
    session.authenticated = true
    return { response: reply(errorCodes.NONE, null, `v=${createHmac(hash, serverKey).update(authMessage).digest('base64')}`) }
  }

  function metadata(version: number, d: KafkaDecoder): KafkaEncoder {
    const countBefore = d.readInt32()
    const asked: string[] = []
    for (let i = 0; i < countBefore; i++) asked.push(d.readString() ?? '')
    // -1 (null) asks for every topic.
    const names = countBefore === -1 ? [...topics.keys()] : asked
    const topicEntries = names.map((name) => {
      const partitions = topics.get(name)
      if (partitions === undefined) return encoder().writeInt16(errorCodes.UNKNOWN_TOPIC_OR_PARTITION).writeString(name).writeBoolean(false).writeArray([])
      const fault = metadataFaults.get(name)
      let partitionError: number = errorCodes.NONE
      if (fault && fault.times > 0) {
        fault.times--
        partitionError = fault.code
      }
      const entries = Array.from({ length: partitions }, (_, index) => {
        const leader = partitionError === errorCodes.LEADER_NOT_AVAILABLE ? -1 : 1
        const entry = encoder().writeInt16(partitionError).writeInt32(index).writeInt32(leader).writeArray([1], 'int32').writeArray([1], 'int32')
        return version >= 5 ? entry.writeArray([], 'int32') : entry
      })
      return encoder().writeInt16(errorCodes.NONE).writeString(name).writeBoolean(false).writeArray(entries)
    })
    const body = encoder()
    if (version >= 3) body.writeInt32(0)
    body.writeArray([encoder().writeInt32(1).writeString('127.0.0.1').writeInt32(port).writeString(null)])
    if (version >= 2) body.writeString('outflow-fake-cluster')
    body.writeInt32(1)
    return body.writeArray(topicEntries)
  }

  /** The Produce answer, or null when the connection is to be dropped instead (see dropAfterAppend). */
  async function produce(version: number, d: KafkaDecoder, connection: number): Promise<KafkaEncoder | null> {
    d.readString() // transactional id
    const acks = d.readInt16()
    d.readInt32() // timeout
    const topicData = d.readArray((t) => ({ name: t.readString() ?? '', partitions: t.readArray((p) => ({ index: p.readInt32(), records: p.readBytes() })) }))
    const responses: KafkaEncoder[] = []
    let drop = false
    for (const topic of topicData) {
      if (dropAfter.delete(topic.name)) drop = true
      const partitionResponses: KafkaEncoder[] = []
      for (const partition of topic.partitions) {
        const { error, baseOffset } = await append(topic.name, partition.index, partition.records, acks, connection)
        const entry = encoder().writeInt32(partition.index).writeInt16(error).writeInt64(baseOffset)
        if (version >= 2) entry.writeInt64(-1)
        if (version >= 5) entry.writeInt64(0)
        partitionResponses.push(entry)
      }
      responses.push(encoder().writeString(topic.name).writeArray(partitionResponses))
    }
    if (drop) return null
    const body = encoder().writeArray(responses)
    return version >= 1 ? body.writeInt32(0) : body
  }

  /** Append one batch to a partition's log, as a leader with idempotence enabled does. */
  async function append(topic: string, partition: number, bytes: Buffer | null, acks: number, connection: number): Promise<{ error: number; baseOffset: number }> {
    const partitions = topics.get(topic)
    if (partitions === undefined || partition >= partitions) return { error: errorCodes.UNKNOWN_TOPIC_OR_PARTITION, baseOffset: -1 }
    const fault = produceFaults.get(topic)
    if (fault && fault.times > 0) {
      fault.times--
      return { error: fault.code, baseOffset: -1 }
    }
    if (acks !== -1 && acks !== 0 && acks !== 1) return { error: errorCodes.INVALID_REQUIRED_ACKS, baseOffset: -1 }
    let batch
    try {
      batch = await readRecordBatch(bytes ?? Buffer.alloc(0))
    } catch {
      return { error: errorCodes.CORRUPT_MESSAGE, baseOffset: -1 }
    }
    const partitionKey = `${topic}/${partition}`
    const producerId = BigInt(batch.producerId)
    if (producerId >= 0n) {
      const key = `${producerId}/${partitionKey}`
      const state = sequences.get(key) ?? { next: 0, lastFirst: -1, lastOffset: -1 }
      // A retried batch the log already holds is acknowledged again, not appended twice.
      if (batch.firstSequence === state.lastFirst) return { error: errorCodes.NONE, baseOffset: state.lastOffset }
      if (batch.firstSequence !== state.next) return { error: errorCodes.OUT_OF_ORDER_SEQUENCE_NUMBER, baseOffset: -1 }
      state.lastFirst = batch.firstSequence
      state.next = batch.firstSequence + batch.records.length
      state.lastOffset = nextOffset.get(partitionKey) ?? 0
      sequences.set(key, state)
    }
    const baseOffset = nextOffset.get(partitionKey) ?? 0
    batch.records.forEach((record, i) => {
      const headers: Record<string, string> = {}
      for (const [name, value] of Object.entries(record.headers)) headers[name] = (Array.isArray(value) ? value.at(-1)! : value).toString('utf8')
      log.push({
        topic,
        partition,
        offset: baseOffset + i,
        key: record.key ? record.key.toString('utf8') : null,
        value: record.value ? record.value.toString('utf8') : null,
        headers,
        timestamp: Number(record.timestamp),
        producerId,
        producerEpoch: batch.producerEpoch,
        sequence: batch.firstSequence + i,
        acks,
        connection,
      })
    })
    nextOffset.set(partitionKey, baseOffset + batch.records.length)
    return { error: errorCodes.NONE, baseOffset }
  }

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  port = (server.address() as AddressInfo).port
  const sockets = new Set<net.Socket>()
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })

  return {
    broker: `127.0.0.1:${port}`,
    port,
    log,
    requests,
    connections,
    failProduce: (topic, code, times = 1) => void produceFaults.set(topic, { code, times }),
    failMetadata: (topic, code, times = 1) => void metadataFaults.set(topic, { code, times }),
    dropAfterAppend: (topic) => void dropAfter.add(topic),
    async close() {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
