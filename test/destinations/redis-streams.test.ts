import { spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dedupeKey, redisStreams } from '../../src/destinations/redis-streams.js'
import { listening } from '../support/nats-server.js'
import { closedPort, messageBuilder, publishersFor } from '../support/publishers.js'
import { waitFor } from '../support/receiver.js'
import { redisAvailable, redisUrl } from '../support/services.js'
import { startSilentServer, startTcpProxy } from '../support/tcp-proxy.js'
import { deliverTrusting, selfSignedCertificate, startUntrustedTlsServer } from '../support/tls.js'

const server = new URL(redisUrl)
const port = Number(server.port || 6379)
const message = messageBuilder({ metadata: { region: 'eu' } })

/** The entries of a stream as `{ id, fields }`, fields as an object. */
async function entries(redis: Redis, key: string): Promise<{ id: string; fields: Record<string, string> }[]> {
  const rows = await redis.xrange(key, '-', '+')
  return rows.map(([id, flat]) => ({ id, fields: Object.fromEntries(flat.flatMap((_, i) => (i % 2 === 0 ? [[flat[i]!, flat[i + 1]!]] : []))) }))
}

describe.runIf(redisAvailable)('redis_streams destination (the real Redis)', () => {
  let redis: Redis
  /** Every key of this file starts with it; all are deleted afterwards. */
  const prefix = `outflow-t:${randomUUID()}:`
  const users: string[] = []
  const publishers = publishersFor(redisStreams, { config: { url: redisUrl } })
  const key = (name: string) => `${prefix}${name}`

  beforeAll(() => {
    redis = new Redis(redisUrl)
  })

  afterAll(async () => {
    await publishers.closeAll()
    const keys = await redis.keys(`${prefix}*`)
    if (keys.length) await redis.del(...keys)
    for (const user of users) await redis.acl('DELUSER', user)
    redis?.disconnect()
  })

  it('adds one entry with the fields id, topic, data and metadata, and records the entry id Redis answered', async () => {
    const stream = key('orders')
    const m = message()
    const result = await publishers.deliver({ stream_key: stream }, m)
    expect(result).toMatchObject({ ok: true })
    const [entry, ...more] = await entries(redis, stream)
    expect(more).toEqual([])
    expect(JSON.parse(result.response_body!)).toEqual({ stream, entry_id: entry!.id, duplicate: false })
    expect(Object.keys(entry!.fields)).toEqual(['id', 'topic', 'data', 'metadata'])
    expect(entry!.fields).toMatchObject({ id: m.id, topic: m.topic })
    expect(JSON.parse(entry!.fields.data!)).toEqual(m.data)
    expect(JSON.parse(entry!.fields.metadata!)).toEqual(m.metadata)
  })

  it('adds an event sent twice once: the second attempt answers the first entry id, and the event id is kept for the window', async () => {
    const stream = key('dedupe')
    const publisher = await publishers.open({ stream_key: stream, dedupe_window_seconds: 600 })
    const m = message()
    const first = await publisher.publish(m)
    const again = await publisher.publish({ ...m, attempt: 2 })
    expect(again).toMatchObject({ ok: true })
    const [entry, ...more] = await entries(redis, stream)
    expect(more).toEqual([])
    expect(JSON.parse(first.response_body!)).toMatchObject({ entry_id: entry!.id, duplicate: false })
    expect(JSON.parse(again.response_body!)).toMatchObject({ entry_id: entry!.id, duplicate: true })
    expect(await redis.get(dedupeKey(stream, m.id))).toBe(entry!.id)
    const ttl = await redis.ttl(dedupeKey(stream, m.id))
    expect(ttl).toBeGreaterThan(590)
    expect(ttl).toBeLessThanOrEqual(600)
  })

  it('adds an event once when two publishers send it at the same time (the script is atomic)', async () => {
    const stream = key('race')
    const a = await publishers.open({ stream_key: stream })
    const b = await publishers.open({ stream_key: stream })
    const m = message()
    const results = await Promise.all([...Array(10)].map((_, i) => (i % 2 ? a : b).publish(m)))
    expect(results.every((r) => r.ok)).toBe(true)
    expect(results.filter((r) => JSON.parse(r.response_body!).duplicate === false)).toHaveLength(1)
    expect(await redis.xlen(stream)).toBe(1)
  })

  it('adds an event again once its duplicate window has passed', async () => {
    const stream = key('window')
    const m = message()
    expect(await publishers.deliver({ stream_key: stream, dedupe_window_seconds: 1 }, m)).toMatchObject({ ok: true })
    await redis.del(dedupeKey(stream, m.id)) // what expiry does after the window
    expect(await publishers.deliver({ stream_key: stream, dedupe_window_seconds: 1 }, m)).toMatchObject({ ok: true })
    expect(await redis.xlen(stream)).toBe(2)
  })

  it('trims the stream to about max_length entries (XADD MAXLEN ~)', async () => {
    const stream = key('capped')
    const publisher = await publishers.open({ stream_key: stream, max_length: 10 })
    for (let i = 0; i < 250; i++) expect((await publisher.publish(message())).ok).toBe(true)
    const length = await redis.xlen(stream)
    expect(length).toBeGreaterThanOrEqual(10)
    // Approximate trimming removes whole stream nodes (100 entries each by default): far fewer than 250 remain.
    expect(length).toBeLessThan(150)
    const uncapped = key('uncapped')
    const all = await publishers.open({ stream_key: uncapped })
    for (let i = 0; i < 250; i++) await all.publish(message())
    expect(await redis.xlen(uncapped)).toBe(250)
  })

  it('appends the value of stream_key_template to the stream key', async () => {
    const publisher = await publishers.open({ stream_key: key('events'), stream_key_template: 'topic' })
    expect(await publisher.publish(message({ topic: 'order.created' }))).toMatchObject({ ok: true })
    expect(await publisher.publish(message({ topic: 'order.paid' }))).toMatchObject({ ok: true })
    expect(await redis.xlen(key('events:order.created'))).toBe(1)
    expect(await redis.xlen(key('events:order.paid'))).toBe(1)
  })

  it('reports a key that holds another type as rejected', async () => {
    const stream = key('a-string')
    await redis.set(stream, 'not a stream')
    const result = await publishers.deliver({ stream_key: stream }, message())
    expect(result).toMatchObject({ ok: false, error_kind: 'rejected' })
    expect(result.error).toContain('WRONGTYPE')
  })

  describe('batches (one pipeline of the append script)', () => {
    const batch = (count: number, extra: Record<string, unknown> = {}) => Array.from({ length: count }, (_, i) => message({ data: { i, ...extra } }))

    it('adds every entry once, in order, as single publishes would; an event twice in a batch is added once', async () => {
      const stream = key('batch')
      const publisher = await publishers.open({ stream_key: stream })
      const messages = batch(4)
      const results = await publisher.publishBatch([...messages, messages[1]!])
      expect(results.every((r) => r.ok)).toBe(true)
      const added = await entries(redis, stream)
      expect(added.map((e) => e.fields.id)).toEqual(messages.map((m) => m.id))
      expect(JSON.parse(results[2]!.response_body!)).toEqual({ stream, entry_id: added[2]!.id, duplicate: false })
      expect(JSON.parse(results[4]!.response_body!)).toEqual({ stream, entry_id: added[1]!.id, duplicate: true })
      expect(added[3]!.fields).toEqual({ id: messages[3]!.id, topic: messages[3]!.topic, data: JSON.stringify(messages[3]!.data), metadata: JSON.stringify(messages[3]!.metadata) })
    })

    it('fails only the entry Redis refuses, or whose stream key template fails; times out an aborted batch', async () => {
      await redis.set(key('mixed:taken'), 'a string')
      const publisher = await publishers.open({ stream_key: key('mixed'), stream_key_template: 'data.to' })
      const messages = [message({ data: { to: 'free' } }), message({ data: { to: 'taken' } }), message({ data: {} }), message({ data: { to: 'free' } })]
      const results = await publisher.publishBatch(messages)
      expect(results.map((r) => [r.ok, r.error_kind])).toEqual([
        [true, undefined],
        [false, 'rejected'],
        [false, 'configuration'],
        [true, undefined],
      ])
      expect((await entries(redis, key('mixed:free'))).map((e) => e.fields.id)).toEqual([messages[0]!.id, messages[3]!.id])
      const aborted = await publisher.publishBatch(batch(2, { to: 'free' }), { signal: AbortSignal.abort(new Error('deadline passed')) })
      expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
    })
  })

  it('reports a database number the server does not have as not_found', async () => {
    const result = await publishers.deliver({ url: `${redisUrl}/9999`, stream_key: key('x') }, message())
    expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
  })

  it('logs in as an ACL user; a wrong password, and a user without access to the key, are authentication without the password', async () => {
    const user = `outflow-t-${randomUUID()}`
    const password = 'outflow-acl-password-1'
    users.push(user)
    // The permissions the instructions name, and no more.
    await redis.acl('SETUSER', user, 'on', `>${password}`, `~${prefix}*`, '+xadd', '+get', '+set', '+eval', '+evalsha', '+info', '+client|setname', '+select')
    const stream = key('acl')
    expect(await publishers.deliver({ stream_key: stream }, message(), { credentials: { username: user, password } })).toMatchObject({ ok: true })
    const wrong = 'not-the-redis-password-7'
    const refused = await publishers.deliver({ stream_key: stream }, message(), { credentials: { username: user, password: wrong } })
    expect(refused).toMatchObject({ ok: false, error_kind: 'authentication' })
    expect(refused.error).toMatch(/WRONGPASS/)
    expect(refused.error).not.toContain(wrong)
    const denied = await publishers.deliver({ stream_key: 'outside-the-prefix' }, message(), { credentials: { username: user, password } })
    expect(denied).toMatchObject({ ok: false, error_kind: 'authentication' })
    expect(denied.error).toMatch(/NOPERM/)
    expect(await redis.exists('outside-the-prefix')).toBe(0)
  })

  it('reuses one connection across publishes, reconnects after it is cut, and closes it on close()', async () => {
    const proxy = await startTcpProxy(server.hostname, port)
    const stream = key('proxied')
    try {
      const publisher = await publishers.open({ url: `redis://127.0.0.1:${proxy.port}`, stream_key: stream })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(proxy.connections()).toBe(1)
      proxy.cutAll()
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
      expect(await redis.xlen(stream)).toBe(3)
    } finally {
      await proxy.close()
    }
  })

  it('drops a connection that let an attempt time out (a hung peer): the next attempt opens a new one', async () => {
    const proxy = await startTcpProxy(server.hostname, port)
    const stream = key('hung')
    try {
      const publisher = await publishers.open({ url: `redis://127.0.0.1:${proxy.port}`, stream_key: stream })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      proxy.freezeAll()
      expect(await publisher.publish(message(), { signal: AbortSignal.timeout(300) })).toMatchObject({ ok: false, error_kind: 'timeout' })
      expect(await publisher.publish(message())).toMatchObject({ ok: true })
      expect(proxy.connections()).toBe(2)
    } finally {
      await proxy.close()
    }
  })

  it('reports a port nothing listens on as connection_refused, an unresolvable host as dns, an untrusted certificate as tls', async () => {
    const refused = await closedPort()
    expect(await publishers.deliver({ url: `redis://127.0.0.1:${refused}`, stream_key: key('x') }, message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
    expect(await publishers.deliver({ url: 'redis://nowhere.invalid:6379', stream_key: key('x') }, message())).toMatchObject({ ok: false, error_kind: 'dns' })
    const tls = await startUntrustedTlsServer()
    try {
      expect(await publishers.deliver({ url: `rediss://127.0.0.1:${tls.port}`, stream_key: key('x') }, message())).toMatchObject({ ok: false, error_kind: 'tls' })
    } finally {
      await tls.close()
    }
  })

  it('delivers over rediss:// to a server whose certificate the delivering process trusts', async () => {
    // A redis-server of the test's own, TLS only, with a self-signed certificate.
    const { key: tlsKey, cert } = selfSignedCertificate()
    const dir = mkdtempSync(join(tmpdir(), 'outflow-redis-tls-'))
    writeFileSync(join(dir, 'key.pem'), tlsKey)
    writeFileSync(join(dir, 'cert.pem'), cert)
    const tlsPort = await closedPort()
    const child = spawn('redis-server', ['--port', '0', '--tls-port', String(tlsPort), '--tls-cert-file', join(dir, 'cert.pem'), '--tls-key-file', join(dir, 'key.pem'),
      '--tls-auth-clients', 'no', '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' })
    const reader = new Redis({ host: '127.0.0.1', port: tlsPort, tls: { ca: cert }, lazyConnect: true, maxRetriesPerRequest: 1 })
    try {
      await waitFor(() => listening(tlsPort), 10_000, 'the TLS redis-server')
      await reader.connect()
      const result = await deliverTrusting(cert, 'redis_streams', { url: `rediss://127.0.0.1:${tlsPort}`, stream_key: 'secure' })
      expect(result).toMatchObject({ ok: true })
      expect((await entries(reader, 'secure')).map((e) => e.fields.id)).toEqual(['evt_tls'])
    } finally {
      reader.disconnect()
      child.kill()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 90_000)

  it('gives up at the attempt deadline (a server that never answers) as timeout', async () => {
    const silent = await startSilentServer()
    try {
      const publisher = await publishers.open({ url: `redis://127.0.0.1:${silent.port}`, stream_key: key('x') })
      expect(await publisher.publish(message(), { signal: AbortSignal.timeout(300) })).toMatchObject({ ok: false, error_kind: 'timeout' })
    } finally {
      await silent.close()
    }
  })

  it('refuses private addresses unless allowPrivateNetworks: a loopback literal, and a name resolving to loopback', async () => {
    const guarded = { context: { allowPrivateNetworks: false } }
    expect(await publishers.deliver({ stream_key: key('ssrf') }, message(), guarded)).toMatchObject({ ok: false, error_kind: 'ssrf' })
    const proxy = await startTcpProxy(server.hostname, port)
    try {
      const named = await publishers.deliver({ url: `redis://localhost:${proxy.port}`, stream_key: key('ssrf') }, message(), guarded)
      expect(named).toMatchObject({ ok: false, error_kind: 'ssrf' })
      expect(named.error).toMatch(/localhost resolves to/)
      expect(proxy.connections()).toBe(0)
    } finally {
      await proxy.close()
    }
    expect(await redis.exists(key('ssrf'))).toBe(0)
  })
})

describe('redis_streams settings', () => {
  const config = (value: unknown) => v.safeParse(redisStreams.configSchema, value)

  it('takes redis:// and rediss:// URLs with a database number, and refuses credentials in them', () => {
    expect(config({ url: 'rediss://cache.example.com:6380/2', stream_key: 'events' }).success).toBe(true)
    expect(config({ url: 'redis://:secret@cache.example.com', stream_key: 'events' }).issues?.[0]?.message).toMatch(/put them in credentials/)
    expect(config({ url: 'http://cache.example.com', stream_key: 'events' }).success).toBe(false)
  })

  it('needs a stream_key, and takes a stream_key_template that compiles and a positive max_length', () => {
    expect(config({ url: 'redis://a' }).success).toBe(false)
    expect(config({ url: 'redis://a', stream_key: 'a', stream_key_template: 'data.[' }).success).toBe(false)
    expect(config({ url: 'redis://a', stream_key: 'a', stream_key_template: 'topic', max_length: 1000 }).success).toBe(true)
    expect(config({ url: 'redis://a', stream_key: 'a', max_length: 0 }).success).toBe(false)
  })

  it('needs a password with a username', () => {
    expect(v.safeParse(redisStreams.credentialsSchema, { username: 'u' }).success).toBe(false)
    expect(v.safeParse(redisStreams.credentialsSchema, { password: 'p' }).success).toBe(true)
  })
})
