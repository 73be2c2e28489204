import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-kinesis'
import { GetObjectCommand, NoSuchKey } from '@aws-sdk/client-s3'
import { expect } from 'vitest'
import { startFakeEventBridge } from '../../fakes/eventbridge-server.js'
import { startFakeSqs } from '../../fakes/sqs-server.js'
import { startKinesalite, startS3rver } from '../../support/emulators.js'
import type { Peer, Received, Sent } from './peer.js'

/** The fake SQS endpoint (SigV4 verified) with one queue; it records what the real SDK sent. */
export async function startSqsPeer(): Promise<Peer> {
  const key = 'AKIAE2EOUTFLOW000001'
  const secret = 'e2e-secret-0123456789abcdefghijklmnopqrstu'
  const sqs = await startFakeSqs({ accessKeyId: key, secretAccessKey: secret, queues: ['orders'] })
  return {
    target: { config: { queue_url: sqs.queueUrl('orders'), endpoint: sqs.endpoint }, credentials: { key, secret } },
    async read(sent: Sent): Promise<Received[]> {
      return sqs.messages
        .filter((m) => m.attributes['event-id']?.StringValue === sent.id)
        .map((m) => {
          expect(m.queueName).toBe('orders')
          expect(Object.values(m.attributes).map((a) => a.DataType)).toEqual(Object.keys(m.attributes).map(() => 'String'))
          return { data: JSON.parse(m.body), metadata: Object.fromEntries(Object.entries(m.attributes).map(([name, a]) => [name, a.StringValue])) }
        })
    },
    close: () => sqs.close(),
  }
}

/** kinesalite in-process with a one-shard stream; records are read back from the start of the shard. */
export async function startKinesisPeer(): Promise<Peer> {
  const kinesis = await startKinesalite()
  const { admin, stream, endpoint, credentials } = kinesis
  const shardId = kinesis.shardIds[0]!
  return {
    target: { config: { stream_name: stream, region: 'us-east-1', endpoint }, credentials },
    async read(sent: Sent): Promise<Received[]> {
      const { ShardIterator } = await admin.send(new GetShardIteratorCommand({ StreamName: stream, ShardId: shardId, ShardIteratorType: 'TRIM_HORIZON' }))
      const { Records = [] } = await admin.send(new GetRecordsCommand({ ShardIterator, Limit: 10_000 }))
      return Records.flatMap((record) => {
        const body = JSON.parse(Buffer.from(record.Data!).toString('utf8')) as { metadata: Record<string, unknown>; data: unknown }
        if (body.metadata['event-id'] !== sent.id) return []
        expect(Object.keys(body).sort()).toEqual(['data', 'metadata'])
        // Without a partition_key_template the event id is the partition key.
        expect(record.PartitionKey).toBe(sent.id)
        return [{ data: body.data, metadata: body.metadata }]
      })
    },
    close: () => kinesis.close(),
  }
}

/** s3rver in-process with one bucket; objects are named `e2e/<event id>.json` by the destination's key_template. */
export async function startS3Peer(): Promise<Peer> {
  const s3 = await startS3rver()
  const { admin, bucket, endpoint, credentials } = s3
  return {
    target: { config: { bucket, region: 'us-east-1', endpoint, key_template: "join('', ['e2e/', id, '.json'])" }, credentials },
    async read(sent: Sent): Promise<Received[]> {
      try {
        const object = await admin.send(new GetObjectCommand({ Bucket: bucket, Key: `e2e/${sent.id}.json` }))
        expect(object.ContentType).toBe('application/json')
        return [{ data: JSON.parse(await object.Body!.transformToString('utf8')), metadata: object.Metadata ?? {} }]
      } catch (err) {
        if (err instanceof NoSuchKey) return []
        throw err
      }
    },
    close: () => s3.close(),
  }
}

/** The fake EventBridge endpoint (SigV4 verified) with one bus; it records the entries the real SDK put. */
export async function startEventBridgePeer(): Promise<Peer> {
  const key = 'AKIAE2EOUTFLOWEB0001'
  const secret = 'e2e-eventbridge-secret-0123456789abcdefgh'
  const bus = await startFakeEventBridge({ accessKeyId: key, secretAccessKey: secret, buses: ['orders'] })
  return {
    target: { config: { event_bus: 'orders', endpoint: bus.endpoint, source: 'com.example.e2e' }, credentials: { key, secret } },
    async read(sent: Sent): Promise<Received[]> {
      return bus.events.flatMap((event) => {
        const detail = JSON.parse(event.detail) as { metadata: Record<string, unknown>; data: unknown }
        if (detail.metadata['event-id'] !== sent.id) return []
        expect(Object.keys(detail).sort()).toEqual(['data', 'metadata'])
        expect(event).toMatchObject({ bus: 'orders', source: 'com.example.e2e', detailType: sent.topic, time: Date.parse(sent.time) / 1000 })
        return [{ data: detail.data, metadata: detail.metadata }]
      })
    },
    close: () => bus.close(),
  }
}
