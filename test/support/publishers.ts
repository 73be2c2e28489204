import { randomUUID } from 'node:crypto'
import dns from 'node:dns'
import net from 'node:net'
import { expect, vi } from 'vitest'
import type { AttemptResult } from '../../src/model/attempt-result.js'
import type { DeliveryMessage, DestinationTypeDefinition, PublisherContext, PublisherDestination } from '../../src/destinations/types.js'

/** The engine settings a publisher gets in these tests: local fakes and peers live on loopback, so private networks are allowed. */
export const testContext: PublisherContext = { allowPrivateNetworks: true, userAgent: 'outflow/test' }

/** The attempt deadline of a test publish that passes none: long enough never to be what a test sees, unless it hangs. */
const testDeadlineMs = 10_000

/** The fields of a test message a file fixes; `metadata` here is added to `event-id`, `topic` and `timestamp`. */
export type MessageDefaults = Partial<Omit<DeliveryMessage, 'metadata'>> & { metadata?: Record<string, string> }

/**
 * A builder of the messages a test file publishes. Each message gets a fresh `evt_…` id unless `defaults` or the
 * call gives one; its metadata is `event-id`, `topic` and `timestamp` of that message plus `defaults.metadata`,
 * unless the call gives the metadata whole.
 *
 * @example
 * const message = messageBuilder({ topic: 'order.paid', metadata: { source: 'checkout' } })
 * const m = message({ data: { customer: 'cus_42' } })
 */
export function messageBuilder(defaults: MessageDefaults = {}): (overrides?: Partial<DeliveryMessage>) => DeliveryMessage {
  return (overrides = {}) => {
    const { metadata: extra = {}, ...fields } = defaults
    const base = {
      id: `evt_${randomUUID()}`,
      tenant_id: 'acme',
      destination_id: 'des_1',
      topic: 'order.created',
      time: new Date('2025-03-01T12:00:00.000Z'),
      data: { order: 42, items: ['a', 'b'] } as unknown,
      attempt: 1,
      ...fields,
      ...overrides,
    }
    const timestamp = String(Math.floor(base.time.getTime() / 1000))
    return { ...base, metadata: overrides.metadata ?? { 'event-id': base.id, topic: base.topic, timestamp, ...extra } }
  }
}

/** A publisher under test: `publish` gets a generous deadline unless the test gives its own signal. */
export interface TestPublisher {
  publish(message: DeliveryMessage, options?: { signal?: AbortSignal }): Promise<AttemptResult>
  /** The type's `publishBatch` (a test of a type without one fails); the same generous deadline unless given. */
  publishBatch(messages: DeliveryMessage[], options?: { signal?: AbortSignal }): Promise<AttemptResult[]>
  close(): Promise<void>
}

/** What a test may vary about the destination a publisher is created for. */
export interface PublisherOptions {
  credentials?: Record<string, unknown>
  context?: Partial<PublisherContext>
  id?: string
}

/** What a file fixes about its destinations: config and credentials can be functions of what `beforeAll` started. */
export interface DestinationDefaults {
  config?: Record<string, unknown> | (() => Record<string, unknown>)
  credentials?: Record<string, unknown> | (() => Record<string, unknown>)
  /** Default: a fresh `des_…` id per publisher. */
  id?: string
}

const valueOf = (value: Record<string, unknown> | (() => Record<string, unknown>) | undefined) => (typeof value === 'function' ? value() : (value ?? {}))

/**
 * The publishers a test file creates for one destination type. `open` creates one with the file's defaults
 * (its config merged under the one given), to be closed by `closeAll` in the file's `afterAll`, before the peer
 * it talks to is closed; `deliver` publishes one message through a fresh publisher and closes it.
 *
 * @example
 * const publishers = publishersFor(cloudxSqs, { id: 'des_sqs', credentials: { key, secret } })
 * afterAll(() => publishers.closeAll())
 * const result = await (await publishers.open({ queue_url })).publish(message())
 */
export function publishersFor(definition: DestinationTypeDefinition, defaults: DestinationDefaults = {}) {
  const open: TestPublisher[] = []

  function destination(config: Record<string, unknown>, options: PublisherOptions): PublisherDestination {
    return {
      id: options.id ?? defaults.id ?? `des_${randomUUID()}`,
      tenant_id: 'acme',
      type: definition.type,
      config: { ...valueOf(defaults.config), ...config },
      credentials: options.credentials ?? valueOf(defaults.credentials),
    }
  }

  /** A publisher of a destination with this config (over the file's), closed by closeAll(). */
  async function openPublisher(config: Record<string, unknown> = {}, options: PublisherOptions = {}): Promise<TestPublisher> {
    const publisher = await definition.createPublisher(destination(config, options), { ...testContext, ...options.context })
    const tested: TestPublisher = {
      publish: (message, { signal } = {}) => publisher.publish(message, { signal: signal ?? AbortSignal.timeout(testDeadlineMs) }),
      publishBatch: (messages, { signal } = {}) => {
        if (!publisher.publishBatch) throw new Error(`${definition.type} publishers have no publishBatch`)
        return publisher.publishBatch(messages, { signal: signal ?? AbortSignal.timeout(testDeadlineMs) })
      },
      close: () => publisher.close(),
    }
    open.push(tested)
    return tested
  }

  /** Publish `message` through a fresh publisher and close it. */
  async function deliver(config: Record<string, unknown>, message: DeliveryMessage, options: PublisherOptions = {}): Promise<AttemptResult> {
    const publisher = await openPublisher(config, options)
    try {
      return await publisher.publish(message)
    } finally {
      await publisher.close()
    }
  }

  async function closeAll(): Promise<void> {
    await Promise.all(open.splice(0).map((p) => p.close()))
  }

  return { open: openPublisher, deliver, closeAll }
}

/** A fake or peer that counts the connections it accepted and tags each message with the connection it came on. */
export interface ConnectionCounter {
  messages: { connection: number }[]
  connections: { opened: number; closed: number }
}

/**
 * Two publishes go over one connection, close() ends it, and a publish after close() fails.
 *
 * @example
 * await expectOneConnection(await publishers.open({ endpoint: own.endpoint }), own, message)
 */
export async function expectOneConnection(publisher: TestPublisher, peer: ConnectionCounter, message: (overrides?: Partial<DeliveryMessage>) => DeliveryMessage): Promise<void> {
  expect((await publisher.publish(message())).ok).toBe(true)
  expect((await publisher.publish(message())).ok).toBe(true)
  expect(peer.messages.map((m) => m.connection)).toEqual([0, 0])
  expect(peer.connections.opened).toBe(1)
  await publisher.close()
  await vi.waitFor(() => expect(peer.connections.closed).toBe(1))
  expect(await publisher.publish(message())).toMatchObject({ ok: false })
}

/** A loopback port with nothing listening on it. */
export async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/**
 * Answer `dns.lookup` from `answers`, which the test may change (a name missing there fails as ENOTFOUND, so no
 * query leaves the machine); `localhost` still resolves. `dns.promises` lookups (the gRPC resolver's own) always
 * fail. Returns the names looked up: by the engine's guard (`dns.lookup`) and by an SDK's own resolver. Restore
 * with `vi.restoreAllMocks()`.
 */
export function stubDns(answers: Record<string, string>): { guard: string[]; sdk: string[] } {
  const asked = { guard: [] as string[], sdk: [] as string[] }
  const real = dns.lookup
  vi.spyOn(dns, 'lookup').mockImplementation(((hostname: string, options: dns.LookupAllOptions, callback: (err: Error | null, addresses: dns.LookupAddress[]) => void) => {
    if (hostname === 'localhost') return (real as (...a: unknown[]) => void)(hostname, options, callback)
    asked.guard.push(hostname)
    const address = answers[hostname]
    if (address === undefined) return process.nextTick(() => callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []))
    process.nextTick(() => callback(null, [{ address, family: net.isIP(address) }]))
  }) as never)
  const refuse = async (hostname: string) => {
    asked.sdk.push(hostname)
    throw Object.assign(new Error(`queryA ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' })
  }
  vi.spyOn(dns.promises, 'lookup').mockImplementation(refuse as never)
  vi.spyOn(dns.promises, 'resolveTxt').mockImplementation(refuse as never)
  return asked
}
