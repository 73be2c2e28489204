import { randomUUID } from 'node:crypto'
import { jetstream, jetstreamManager, DiscardPolicy, type JetStreamManager, type JsMsg } from '@nats-io/jetstream'
import { connect, credsAuthenticator, nkeys, type NatsConnection } from '@nats-io/transport-node'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { natsJetstream } from '../../src/destinations/nats-jetstream.js'
import { startNatsServer, type OwnNatsServer } from '../support/nats-server.js'
import { closedPort, messageBuilder, publishersFor } from '../support/publishers.js'
import { natsAvailable, natsUrl } from '../support/services.js'
import { startSilentServer, startTcpProxy } from '../support/tcp-proxy.js'
import { deliverTrusting, selfSignedCertificate } from '../support/tls.js'

const server = new URL(natsUrl)
const servers = `${server.hostname}:${server.port || 4222}`
const message = messageBuilder({ metadata: { region: 'eu' } })

/** Connect with `servers` and create a stream capturing `<prefix>.>`, named and prefixed uniquely. */
async function freshStream(jsm: JetStreamManager, options: { max_msgs?: number; discard?: DiscardPolicy } = {}): Promise<{ stream: string; prefix: string }> {
  const id = randomUUID().replaceAll('-', '')
  const stream = `OUTFLOW_T_${id}`
  const prefix = `outflow-t-${id}`
  await jsm.streams.add({ name: stream, subjects: [`${prefix}.>`], ...options })
  return { stream, prefix }
}

/** Every message stored in `stream`, read with an ordered consumer from its first message. */
async function readStream(nc: NatsConnection, stream: string): Promise<JsMsg[]> {
  const consumer = await jetstream(nc).consumers.get(stream)
  const info = await consumer.info()
  const count = info.num_pending
  const out: JsMsg[] = []
  if (count === 0) return out
  const batch = await consumer.fetch({ max_messages: count, expires: 2000 })
  for await (const m of batch) {
    out.push(m)
    if (out.length === count) break
  }
  return out
}

const base64url = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64url')

/** A NATS JWT (header, claims, ed25519 signature of the issuer), as nsc writes them. */
function natsJwt(claims: Record<string, unknown>, issuer: ReturnType<typeof nkeys.createOperator>): string {
  const header = base64url(JSON.stringify({ typ: 'JWT', alg: 'ed25519-nkey' }))
  const body = { jti: randomUUID().replaceAll('-', '').toUpperCase(), iat: Math.floor(Date.now() / 1000), iss: issuer.getPublicKey(), ...claims }
  const payload = base64url(JSON.stringify(body))
  return `${header}.${payload}.${base64url(issuer.sign(new TextEncoder().encode(`${header}.${payload}`)))}`
}

function credsFile(jwt: string, seed: string): string {
  return `-----BEGIN NATS USER JWT-----\n${jwt}\n------END NATS USER JWT------\n\n-----BEGIN USER NKEY SEED-----\n${seed}\n------END USER NKEY SEED------\n`
}

/** A nats-server in operator mode (JWT auth) with one account (JetStream on) and a stream ORDERS; creds of a user of it, and of a user no account signed. */
async function startOperatorServer() {
  const operator = nkeys.createOperator()
  const account = nkeys.createAccount()
  const user = nkeys.createUser()
  const opJwt = natsJwt({ sub: operator.getPublicKey(), name: 'outflow-test-operator', nats: { type: 'operator', version: 2 } }, operator)
  const limits = { subs: -1, data: -1, payload: -1, imports: -1, exports: -1, wildcards: true, conn: -1, leaf: -1, mem_storage: -1, disk_storage: -1, streams: -1, consumer: -1 }
  const accJwt = natsJwt({ sub: account.getPublicKey(), name: 'outflow-test', nats: { limits, type: 'account', version: 2 } }, operator)
  const userJwt = natsJwt({ sub: user.getPublicKey(), name: 'outflow', nats: { pub: {}, sub: {}, subs: -1, data: -1, payload: -1, type: 'user', version: 2 } }, account)
  const stranger = nkeys.createUser()
  const otherAccount = nkeys.createAccount()
  const strangerJwt = natsJwt({ sub: stranger.getPublicKey(), name: 'stranger', nats: { pub: {}, sub: {}, subs: -1, data: -1, payload: -1, type: 'user', version: 2 } }, otherAccount)
  // JetStream needs a system account in operator mode.
  const system = nkeys.createAccount()
  const sysJwt = natsJwt({ sub: system.getPublicKey(), name: 'SYS', nats: { type: 'account', version: 2 } }, operator)
  const preload = `${account.getPublicKey()}: "${accJwt}", ${system.getPublicKey()}: "${sysJwt}"`
  const server = await startNatsServer(`operator: "$DIR/op.jwt"\nsystem_account: ${system.getPublicKey()}\nresolver: MEMORY\nresolver_preload: { ${preload} }`, { 'op.jwt': opJwt })
  const creds = credsFile(userJwt, new TextDecoder().decode(user.getSeed()))
  const admin = await connect({ servers: server.hostPort, authenticator: credsAuthenticator(new TextEncoder().encode(creds)) })
  await (await jetstreamManager(admin)).streams.add({ name: 'ORDERS', subjects: ['orders.>'] })
  await admin.close()
  const strangerSeed = new TextDecoder().decode(stranger.getSeed())
  return { server, creds, strangerCreds: credsFile(strangerJwt, strangerSeed), strangerSeed }
}

describe.runIf(natsAvailable)('nats_jetstream destination (the real nats-server with JetStream)', () => {
  let nc: NatsConnection
  let jsm: JetStreamManager
  const streams: string[] = []
  const publishers = publishersFor(natsJetstream, { config: { servers } })

  beforeAll(async () => {
    nc = await connect({ servers })
    jsm = await jetstreamManager(nc)
  })

  afterAll(async () => {
    await publishers.closeAll()
    for (const stream of streams) await jsm.streams.delete(stream).catch(() => {})
    await nc?.close()
  })

  async function stream(options: Parameters<typeof freshStream>[1] = {}) {
    const created = await freshStream(jsm, options)
    streams.push(created.stream)
    return created
  }

  it('publishes the data as JSON with the metadata as headers and Nats-Msg-Id = event id, acknowledged by the stream', async () => {
    const { stream: name, prefix } = await stream()
    const m = message()
    const result = await publishers.deliver({ subject: `${prefix}.orders` }, m)
    expect(result).toMatchObject({ ok: true })
    expect(JSON.parse(result.response_body!)).toEqual({ stream: name, seq: 1, duplicate: false, subject: `${prefix}.orders` })
    const [stored, ...more] = await readStream(nc, name)
    expect(more).toEqual([])
    expect(stored!.subject).toBe(`${prefix}.orders`)
    expect(stored!.json()).toEqual(m.data)
    expect(stored!.headers!.get('Nats-Msg-Id')).toBe(m.id)
    expect(stored!.headers!.get('Content-Type')).toBe('application/json')
    for (const [key, value] of Object.entries(m.metadata)) expect(stored!.headers!.get(key), key).toBe(value)
  })

  it('stores a re-sent event once: the second publish is acknowledged as a duplicate within the duplicate window', async () => {
    const { stream: name, prefix } = await stream()
    const publisher = await publishers.open({ subject: `${prefix}.orders` })
    const m = message()
    const first = await publisher.publish(m)
    const again = await publisher.publish({ ...m, attempt: 2 })
    expect(JSON.parse(first.response_body!)).toMatchObject({ seq: 1, duplicate: false })
    expect(again).toMatchObject({ ok: true })
    expect(JSON.parse(again.response_body!)).toMatchObject({ seq: 1, duplicate: true })
    expect(await readStream(nc, name)).toHaveLength(1)
  })

  it('never passes metadata named Nats-* on as headers: a Nats-Rollup from an event cannot purge the stream', async () => {
    const { stream: name, prefix } = await stream()
    await jsm.streams.update(name, { subjects: [`${prefix}.>`], allow_rollup_hdrs: true })
    const publisher = await publishers.open({ subject: `${prefix}.orders` })
    expect(await publisher.publish(message())).toMatchObject({ ok: true })
    const m = message()
    expect(await publisher.publish({ ...m, metadata: { ...m.metadata, 'Nats-Rollup': 'all', 'nats-msg-id': 'forged' } })).toMatchObject({ ok: true })
    const stored = await readStream(nc, name)
    expect(stored).toHaveLength(2)
    expect(stored[1]!.headers!.get('Nats-Msg-Id')).toBe(m.id)
    expect(stored[1]!.headers!.has('Nats-Rollup')).toBe(false)
  })

  it('appends the value of subject_template to the subject', async () => {
    const { stream: name, prefix } = await stream()
    const publisher = await publishers.open({ subject: prefix, subject_template: 'topic' })
    expect(await publisher.publish(message({ topic: 'order.created' }))).toMatchObject({ ok: true })
    expect(await publisher.publish(message({ topic: 'order.paid' }))).toMatchObject({ ok: true })
    expect((await readStream(nc, name)).map((m) => m.subject)).toEqual([`${prefix}.order.created`, `${prefix}.order.paid`])
  })

  it('reports a template value that is not a subject as configuration, before sending anything', async () => {
    const { stream: name, prefix } = await stream()
    const result = await publishers.deliver({ subject: prefix, subject_template: "'has space'" }, message())
    expect(result).toMatchObject({ ok: false, error_kind: 'configuration' })
    expect(result.error).toContain('not a subject')
    expect(await readStream(nc, name)).toHaveLength(0)
  })

  it('checks the stream when one is named: the right one succeeds, another one is not_found and stores nothing', async () => {
    const { stream: name, prefix } = await stream()
    const other = await stream()
    expect(await publishers.deliver({ subject: `${prefix}.orders`, stream: name }, message())).toMatchObject({ ok: true })
    const wrong = await publishers.deliver({ subject: `${prefix}.orders`, stream: other.stream }, message())
    expect(wrong).toMatchObject({ ok: false, error_kind: 'not_found' })
    expect(wrong.error).toMatch(/stream/i)
    expect(await readStream(nc, name)).toHaveLength(1)
    expect(await readStream(nc, other.stream)).toHaveLength(0)
  })

  it('reports a subject no stream captures as not_found', async () => {
    const result = await publishers.deliver({ subject: `outflow-t-nowhere-${randomUUID()}` }, message())
    expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
    expect(result.error).toMatch(/no JetStream stream captures the subject/)
  })

  it('reports a message the stream refuses (full, discard new) as rejected', async () => {
    const { prefix } = await stream({ max_msgs: 1, discard: DiscardPolicy.New })
    const publisher = await publishers.open({ subject: `${prefix}.orders` })
    expect(await publisher.publish(message())).toMatchObject({ ok: true })
    const full = await publisher.publish(message())
    expect(full).toMatchObject({ ok: false, error_kind: 'rejected' })
    expect(full.error).toMatch(/maximum messages/i)
  })

  it('reports a message over the server max_payload as rejected', async () => {
    const { prefix } = await stream()
    const result = await publishers.deliver({ subject: `${prefix}.orders` }, message({ data: { blob: 'x'.repeat(2 * 1024 * 1024) } }))
    expect(result).toMatchObject({ ok: false, error_kind: 'rejected' })
  })

  describe('batches (publish all, then each acknowledgement)', () => {
    const batch = (count: number) => Array.from({ length: count }, (_, i) => message({ data: { i } }))

    it('stores every message once, as single publishes would; an ordered batch in order', async () => {
      const { stream: name, prefix } = await stream()
      const publisher = await publishers.open({ subject: `${prefix}.orders` })
      const messages = batch(5)
      const results = await publisher.publishBatch(messages)
      expect(results.every((r) => r.ok)).toBe(true)
      const stored = await readStream(nc, name)
      expect(stored.map((m) => m.headers!.get('Nats-Msg-Id')).sort()).toEqual(messages.map((m) => m.id).sort())
      expect(results.map((r) => JSON.parse(r.response_body!).seq).sort()).toEqual([1, 2, 3, 4, 5])
      const ordered = batch(4).map((m) => ({ ...m, ordering_key: '' }))
      expect((await publisher.publishBatch(ordered)).every((r) => r.ok)).toBe(true)
      expect((await readStream(nc, name)).slice(5).map((m) => m.headers!.get('Nats-Msg-Id'))).toEqual(ordered.map((m) => m.id))
    })

    it('gives each message the stream refuses its own result; an ordered batch stops at it; an aborted batch times out', async () => {
      const { prefix } = await stream({ max_msgs: 2, discard: DiscardPolicy.New })
      const publisher = await publishers.open({ subject: `${prefix}.orders` })
      expect((await publisher.publishBatch(batch(3))).filter((r) => r.ok)).toHaveLength(2)
      const ordered = await publisher.publishBatch(batch(2).map((m) => ({ ...m, ordering_key: '' })))
      expect(ordered.map((r) => r.error_kind)).toEqual(['rejected', 'rejected'])
      expect(ordered[1]!.error).toContain('not sent')
      const aborted = await publisher.publishBatch(batch(2), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  it('reuses one connection across publishes, reconnects after it is cut, and closes it on close()', async () => {
    const { stream: name, prefix } = await stream()
    const proxy = await startTcpProxy(server.hostname, Number(server.port || 4222))
    try {
      const publisher = await publishers.open({ servers: `127.0.0.1:${proxy.port}`, subject: `${prefix}.orders` })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(proxy.connections()).toBe(1)
      proxy.cutAll()
      // The lost connection is dropped; at most the publish that finds it lost fails, the next opens a new one.
      let result = await publisher.publish(message())
      if (!result.ok) {
        expect(result.error_kind).toBe('network')
        result = await publisher.publish(message())
      }
      expect(result).toMatchObject({ ok: true })
      expect(proxy.connections()).toBe(2)
      await publisher.close()
      await expect.poll(() => proxy.open()).toBe(0)
      expect(await publisher.publish(message())).toMatchObject({ ok: false, error: 'the publisher is closed' })
      expect(await readStream(nc, name)).toHaveLength(3)
    } finally {
      await proxy.close()
    }
  })

  it('drops a connection that let an attempt time out (a hung peer): the next attempt opens a new one', async () => {
    const { stream: name, prefix } = await stream()
    const proxy = await startTcpProxy(server.hostname, Number(server.port || 4222))
    try {
      const publisher = await publishers.open({ servers: `127.0.0.1:${proxy.port}`, subject: `${prefix}.orders` })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      proxy.freezeAll()
      expect(await publisher.publish(message(), { signal: AbortSignal.timeout(300) })).toMatchObject({ ok: false, error_kind: 'timeout' })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(proxy.connections()).toBe(2)
      expect(await readStream(nc, name)).toHaveLength(2)
    } finally {
      await proxy.close()
    }
  })

  it('tries the next server when the first refuses the connection', async () => {
    const { stream: name, prefix } = await stream()
    const refused = await closedPort()
    expect(await publishers.deliver({ servers: `127.0.0.1:${refused}, ${servers}`, subject: `${prefix}.orders` }, message())).toMatchObject({ ok: true })
    expect(await readStream(nc, name)).toHaveLength(1)
  })

  it('reports a port nothing listens on as connection_refused, and an unresolvable host as dns', async () => {
    const refused = await closedPort()
    expect(await publishers.deliver({ servers: `127.0.0.1:${refused}`, subject: 'outflow.t' }, message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
    expect(await publishers.deliver({ servers: 'nowhere.invalid:4222', subject: 'outflow.t' }, message())).toMatchObject({ ok: false, error_kind: 'dns' })
  })

  it('gives up at the attempt deadline (a server that never answers) as timeout', async () => {
    const silent = await startSilentServer()
    try {
      const publisher = await publishers.open({ servers: `127.0.0.1:${silent.port}`, subject: 'outflow.t' })
      const result = await publisher.publish(message(), { signal: AbortSignal.timeout(300) })
      expect(result).toMatchObject({ ok: false, error_kind: 'timeout' })
    } finally {
      await silent.close()
    }
  })

  it('refuses private addresses unless allowPrivateNetworks: a loopback literal, and a name resolving to loopback', async () => {
    const guarded = { context: { allowPrivateNetworks: false } }
    const literal = await publishers.deliver({ subject: 'outflow.t' }, message(), guarded)
    expect(literal).toMatchObject({ ok: false, error_kind: 'ssrf' })
    const proxy = await startTcpProxy(server.hostname, Number(server.port || 4222))
    try {
      const named = await publishers.deliver({ servers: `localhost:${proxy.port}`, subject: 'outflow.t' }, message(), guarded)
      expect(named).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(named.error).toMatch(/localhost resolves to/)
      expect(proxy.connections()).toBe(0)
    } finally {
      await proxy.close()
    }
  })

  describe('authentication (a nats-server of the test with users, an NKey user and a token server)', () => {
    let users: OwnNatsServer
    let tokens: OwnNatsServer
    let tlsServer: OwnNatsServer
    const nkey = nkeys.createUser()
    const seed = new TextDecoder().decode(nkey.getSeed())
    const password = 'outflow-user-password-1'
    const token = 'outflow-token-value-0123'
    const { key, cert } = selfSignedCertificate()

    beforeAll(async () => {
      ;[users, tokens, tlsServer] = await Promise.all([
        startNatsServer(`authorization { users: [ { user: "outflow", password: "${password}" }, { nkey: "${nkey.getPublicKey()}" } ] }`),
        startNatsServer(`authorization { token: "${token}" }`),
        startNatsServer('tls { cert_file: "$DIR/cert.pem", key_file: "$DIR/key.pem" }', { 'cert.pem': cert, 'key.pem': key }),
      ])
      const admin = await connect({ servers: users.hostPort, user: 'outflow', pass: password })
      await (await jetstreamManager(admin)).streams.add({ name: 'ORDERS', subjects: ['orders.>'] })
      await admin.close()
      const tokenAdmin = await connect({ servers: tokens.hostPort, token })
      await (await jetstreamManager(tokenAdmin)).streams.add({ name: 'ORDERS', subjects: ['orders.>'] })
      await tokenAdmin.close()
    })

    afterAll(async () => {
      await publishers.closeAll()
      await Promise.all([users?.close(), tokens?.close(), tlsServer?.close()])
    })

    it('logs in with a user and password, and reports a wrong password as authentication without revealing it', async () => {
      const config = { servers: users.hostPort, subject: 'orders.created' }
      expect(await publishers.deliver(config, message(), { credentials: { username: 'outflow', password } })).toMatchObject({ ok: true })
      const wrong = 'not-the-nats-password-9'
      const result = await publishers.deliver(config, message(), { credentials: { username: 'outflow', password: wrong } })
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).toMatch(/authorization violation/i)
      expect(result.error).not.toContain(wrong)
    })

    it('logs in with an NKey seed, and without credentials is refused as authentication', async () => {
      const config = { servers: users.hostPort, subject: 'orders.created' }
      expect(await publishers.deliver(config, message(), { credentials: { nkey_seed: seed } })).toMatchObject({ ok: true })
      expect(await publishers.deliver(config, message(), { credentials: {} })).toMatchObject({ ok: false, error_kind: 'authentication' })
    })

    it('logs in with a token, and reports a wrong one as authentication', async () => {
      const config = { servers: tokens.hostPort, subject: 'orders.created' }
      expect(await publishers.deliver(config, message(), { credentials: { token } })).toMatchObject({ ok: true })
      const result = await publishers.deliver(config, message(), { credentials: { token: 'wrong-token-value-42' } })
      expect(result).toMatchObject({ ok: false, error_kind: 'authentication' })
      expect(result.error).not.toContain('wrong-token-value-42')
    })

    it('logs in with a .creds file (user JWT and seed) on a server in operator mode, even with its line breaks lost', async () => {
      const operator = await startOperatorServer()
      try {
        const config = { servers: operator.server.hostPort, subject: 'orders.created' }
        // A one-line form field turns the file's line breaks into spaces.
        expect(await publishers.deliver(config, message(), { credentials: { creds: operator.creds.replaceAll('\n', ' ') } })).toMatchObject({ ok: true })
        const stranger = await publishers.deliver(config, message(), { credentials: { creds: operator.strangerCreds } })
        expect(stranger).toMatchObject({ ok: false, error_kind: 'authentication' })
        expect(stranger.error).not.toContain(operator.strangerSeed)
      } finally {
        await operator.server.close()
      }
    })

    it('delivers to a TLS server whose certificate the delivering process trusts, acknowledged by its stream', async () => {
      const admin = await connect({ servers: `tls://${tlsServer.hostPort}`, tls: { ca: cert } })
      try {
        await (await jetstreamManager(admin)).streams.add({ name: 'SECURE', subjects: ['secure.>'] })
        const result = await deliverTrusting(cert, 'nats_jetstream', { servers: `tls://${tlsServer.hostPort}`, subject: 'secure.orders' })
        expect(result).toMatchObject({ ok: true })
        expect((await (await jetstreamManager(admin)).streams.info('SECURE')).state.messages).toBe(1)
      } finally {
        await admin.close()
      }
    }, 90_000)

    it('reports a TLS server whose certificate no CA trusts as tls', async () => {
      const result = await publishers.deliver({ servers: `tls://${tlsServer.hostPort}`, subject: 'orders.created' }, message())
      expect(result).toMatchObject({ ok: false, error_kind: 'tls' })
    })
  })
})

describe('nats_jetstream settings', () => {
  const config = (value: unknown) => v.safeParse(natsJetstream.configSchema, value)
  const credentials = (value: unknown) => v.safeParse(natsJetstream.credentialsSchema, value)

  it('takes host:port lists and nats:// or tls:// URLs, and refuses credentials in them', () => {
    expect(config({ servers: 'a.example.com:4222, nats://b.example.com, tls://[::1]:4443', subject: 'orders.created' }).success).toBe(true)
    expect(config({ servers: 'nats://user:pass@a.example.com', subject: 'x' }).issues?.[0]?.message).toMatch(/put them in credentials/)
    expect(config({ servers: 'http://a.example.com', subject: 'x' }).success).toBe(false)
  })

  it('needs a subject, refuses wildcard subjects, and takes a subject_template that compiles', () => {
    expect(config({ servers: 'a:4222' }).success).toBe(false)
    expect(config({ servers: 'a:4222', subject: 'orders.*' }).success).toBe(false)
    expect(config({ servers: 'a:4222', subject: 'events', subject_template: 'topic' }).success).toBe(true)
    expect(config({ servers: 'a:4222', subject: 'events', subject_template: 'data.[' }).success).toBe(false)
  })

  it('takes one authentication method at most', () => {
    expect(credentials({}).success).toBe(true)
    expect(credentials({ username: 'u', password: 'p' }).success).toBe(true)
    expect(credentials({ username: 'u' }).success).toBe(false)
    expect(credentials({ token: 't', username: 'u', password: 'p' }).success).toBe(false)
    expect(credentials({ nkey_seed: 'not-a-seed' }).success).toBe(false)
  })
})
