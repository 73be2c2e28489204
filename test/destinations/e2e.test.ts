import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { destinationTypes, type DestinationTypeName } from '../../src/model/destination-type.js'
import type { Outflow } from '../../src/engine.js'
import type { Destination } from '../../src/model/destination.js'
import { engineKinds } from '../support/engines.js'
import { waitFor } from '../support/receiver.js'
import { amqpAvailable, natsAvailable, redisAvailable } from '../support/services.js'
import { startEventBridgePeer, startKinesisPeer, startS3Peer, startSqsPeer } from './e2e/aws-peers.js'
import { startAmqpPeer, startPubsubPeer, startServiceBusPeer } from './e2e/broker-peers.js'
import { startRelayPeer, startWebhookPeer } from './e2e/http-peers.js'
import { startKafkaPeer } from './e2e/kafka-peer.js'
import { startNatsPeer, startRedisPeer } from './e2e/stream-peers.js'
import type { Peer, Sent } from './e2e/peer.js'

const topic = 'order.created'
const time = '2025-03-01T12:00:00.750Z'
/** Unix seconds of `time`, the fraction dropped. */
const timestamp = '1740830400'
const data = { order: 'ord_1042', total: 99.5, paid: true, coupon: null, items: [{ sku: 'A-1', qty: 2 }], note: 'Grüße ✓' }
const deliveryMetadata = { team: 'fulfilment', source: 'destination' }
/** `source` collides with the destination's delivery_metadata: the event's value must win. */
const eventMetadata = { region: 'eu-west-1', source: 'checkout' }

/** What every copy must carry: event-id, topic, timestamp, then delivery_metadata, then the event's metadata (later wins). */
function expectedMetadata(eventId: string): Record<string, string> {
  return { 'event-id': eventId, topic, timestamp, team: 'fulfilment', region: 'eu-west-1', source: 'checkout' }
}

/** A test of a local server's type without that server is skipped (or fails under OUTFLOW_REQUIRE_SERVICES=1, when `*Available` throws). */
const serverAvailable: Partial<Record<DestinationTypeName, boolean>> = { amqp_broker: amqpAvailable, nats_jetstream: natsAvailable, redis_streams: redisAvailable }
const runs = (type: DestinationTypeName) => serverAvailable[type] ?? true

// One peer per type for the whole file, shared by both storages (each event is found by its own id).
const peers: Partial<Record<DestinationTypeName, Peer>> = {}
let relay: Awaited<ReturnType<typeof startRelayPeer>>
let rabbit: Awaited<ReturnType<typeof startAmqpPeer>> | undefined
let kafka: Awaited<ReturnType<typeof startKafkaPeer>>

beforeAll(async () => {
  const [webhook, relayPeer, sqs, kinesis, s3, servicebus, pubsub, amqpPeer] = await Promise.all([
    startWebhookPeer(),
    startRelayPeer(),
    startSqsPeer(),
    startKinesisPeer(),
    startS3Peer(),
    startServiceBusPeer(),
    startPubsubPeer(),
    amqpAvailable ? startAmqpPeer() : undefined,
  ])
  relay = relayPeer
  rabbit = amqpPeer
  Object.assign(peers, { webhook, relay, cloudx_sqs: sqs, cloudx_kinesis: kinesis, cloudx_s3: s3, cloudy_servicebus: servicebus, cloudz_pubsub: pubsub })
  if (rabbit) peers.amqp_broker = rabbit
  kafka = await startKafkaPeer()
  Object.assign(peers, { kafka, aws_eventbridge: await startEventBridgePeer() })
  if (natsAvailable) peers.nats_jetstream = await startNatsPeer()
  if (redisAvailable) peers.redis_streams = await startRedisPeer()
})

afterAll(async () => {
  await Promise.all(Object.values(peers).map((p) => p.close()))
})

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`every destination type delivers end to end through publish: ${kind.name}`, () => {
    /** Runs the delivery worker; its own publishes are handed to the worker at once (the fast path). */
    let outflow: Outflow
    /** No worker, same storage (like an API server): its events reach the worker only through storage. */
    let apiOnly: Outflow

    beforeAll(async () => {
      outflow = await kind.create({ relayUrl: relay.url, delivery: { pollIntervalMs: 50, retry: { schedule: [100], jitter: 0 } } })
      // The storage stays the first engine's to close.
      apiOnly = await kind.create({ storage: { ...outflow.storage, close: async () => {} }, migrate: false, delivery: { worker: false } })
    })

    afterAll(async () => {
      await apiOnly?.close()
      await kind.cleanup()
    })

    /** A new tenant with one destination of `type` for every topic, pointed at `target`, with delivery_metadata. */
    async function destinationFor(tenantId: string, type: DestinationTypeName, target: Peer['target']): Promise<Destination> {
      await outflow.upsertTenant(tenantId, {})
      return outflow.createDestination(tenantId, { type, topics: '*', ...target, delivery_metadata: deliveryMetadata })
    }

    /** Publish through `engine`, read the copy back from the peer, and check it and the delivery log. */
    async function deliversEndToEnd(type: DestinationTypeName, engine: Outflow, tenantId: string): Promise<void> {
      const peer = peers[type]!
      const destination = await destinationFor(tenantId, type, peer.target)
      const published = await engine.publish({ tenant_id: tenantId, topic, time, data, metadata: eventMetadata })
      expect(published).toEqual({ id: expect.any(String), duplicate: false, destination_ids: [destination.id] })
      const sent: Sent = { id: published.id, tenant_id: tenantId, topic, time, destination }

      // The successful attempt first: the peer acknowledged the write, so the read below sees it whole.
      // (Reading while the delivery is in flight raced s3rver, which writes an object's bytes before its
      // metadata: a GET in between saw the object with the default content type binary/octet-stream.)
      const event = await waitFor(async () => {
        const e = await outflow.getEvent(tenantId, published.id, { destination_id: destination.id }).catch(() => undefined)
        return e?.status === 'success' && e
      }, 15_000, `a successful attempt of ${published.id} in the log`)
      expect(event).toMatchObject({ id: published.id, destination_id: destination.id, topic, time, metadata: eventMetadata, data })
      const copies = await waitFor(async () => {
        const found = await peer.read(sent)
        return found.length > 0 && found
      }, 10_000, `${type} to receive ${published.id}`)
      expect(copies).toHaveLength(1)
      expect(copies[0]!.data).toEqual(data)
      expect(copies[0]!.metadata).toEqual(expectedMetadata(published.id))
      const attempts = await outflow.listDeliveries(tenantId, published.id)
      expect(attempts).toEqual([expect.objectContaining({ destination_id: destination.id, status: 'success', attempt_number: 1, error: null, error_kind: null })])
      // One copy once the attempt is recorded: nothing was sent twice.
      expect(await peer.read(sent)).toHaveLength(1)
    }

    for (const type of destinationTypes) {
      it.runIf(runs(type))(`${type}: a published event reaches its peer with data as the body and all metadata, and the log shows a successful attempt`, async () => {
        await deliversEndToEnd(type, outflow, `${type}.fast-path`)
      })

      it.runIf(runs(type))(`${type}: an event another engine published is claimed from storage and delivered the same way`, async () => {
        await deliversEndToEnd(type, apiOnly, `${type}.claimed`)
      })
    }

    it('kafka: an ordered destination keys its messages by the FIFO ordering key, read back from storage, so each sequence stays in one partition', async () => {
      const tenantId = 'kafka.fifo'
      await outflow.upsertTenant(tenantId, {})
      const destination = await outflow.createDestination(tenantId, { type: 'kafka', topics: '*', ...kafka.target, delivery: { ordering: 'fifo', ordering_key: 'data.customer' } })
      const ids: string[] = []
      for (const customer of ['cus_a', 'cus_b', 'cus_a', 'cus_b', 'cus_a']) ids.push((await outflow.publish({ tenant_id: tenantId, topic, data: { customer } })).id)
      const records = await waitFor(() => {
        const found = ids.map((id) => kafka.broker.log.find((r) => r.headers['event-id'] === id))
        return found.every(Boolean) && (found as NonNullable<(typeof found)[number]>[])
      }, 15_000, `the ${ids.length} ordered events of ${destination.id} in the log`)
      expect(records.map((r) => r.key)).toEqual(['cus_a', 'cus_b', 'cus_a', 'cus_b', 'cus_a'])
      for (const key of ['cus_a', 'cus_b']) {
        const sequence = records.filter((r) => r.key === key)
        expect(new Set(sequence.map((r) => r.partition)).size).toBe(1)
        expect(sequence.map((r) => r.offset)).toEqual([...sequence.map((r) => r.offset)].sort((a, b) => a - b))
      }
    })

    it.runIf(amqpAvailable)('amqp_broker: a wrong password gives a failed attempt of kind authentication that names the problem, not the password', async () => {
      const password = 'not-the-broker-password-5f2e'
      const tenantId = 'amqp_broker.wrong-password'
      const config = rabbit!.target.config
      const credentials = { ...rabbit!.target.credentials, password }
      const destination = await destinationFor(tenantId, 'amqp_broker', { config, credentials })
      expect(JSON.stringify(destination)).not.toContain(password)
      const { id } = await outflow.publish({ tenant_id: tenantId, topic, time, data, metadata: eventMetadata })

      const attempts = await waitFor(async () => {
        const found = await outflow.listDeliveries(tenantId, id).catch(() => [])
        return found.length > 0 && found
      }, 15_000, `a failed attempt of ${id} in the log`)
      for (const attempt of attempts) {
        expect(attempt).toMatchObject({ destination_id: destination.id, status: 'failed', error_kind: 'authentication' })
        expect(attempt.error).toMatch(/authentication/i)
        expect(attempt.error).toMatch(/ACCESS.REFUSED/)
      }
      expect(JSON.stringify(attempts)).not.toContain(password)
      expect(await outflow.getEvent(tenantId, id, { destination_id: destination.id })).toMatchObject({ status: 'failed', successful_at: null })
      expect(await rabbit!.read({ id, tenant_id: tenantId, topic, time, destination })).toEqual([])
    })
  })
}
