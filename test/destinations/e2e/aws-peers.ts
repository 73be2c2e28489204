import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import type http from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { CreateStreamCommand, DescribeStreamCommand, GetRecordsCommand, GetShardIteratorCommand, KinesisClient } from '@aws-sdk/client-kinesis'
import { CreateBucketCommand, GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3'
import { NodeHttpHandler } from '@smithy/node-http-handler'
import { expect } from 'vitest'
import { startFakeSqs } from '../../fakes/sqs-server.js'
import { waitFor } from '../../support/receiver.js'
import type { Peer, Received, Sent } from './peer.js'

const require = createRequire(import.meta.url)

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

/** kinesalite ships no type declarations: it exports a factory of a node:http server. */
const kinesalite = require('kinesalite') as (options: Record<string, unknown>) => http.Server

/** kinesalite in-process with a one-shard stream; records are read back from the start of the shard. */
export async function startKinesisPeer(): Promise<Peer> {
  const credentials = { key: 'AKIDE2EEXAMPLE', secret: 'kinesalite-does-not-check-this' }
  const stream = `outflow-e2e-${randomUUID().slice(0, 8)}`
  const server = kinesalite({ createStreamMs: 0, deleteStreamMs: 0, updateStreamMs: 0 })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  // kinesalite speaks HTTP/1.1 only; the Kinesis client defaults to HTTP/2.
  const admin = new KinesisClient({
    region: 'us-east-1',
    endpoint,
    credentials: { accessKeyId: credentials.key, secretAccessKey: credentials.secret },
    requestHandler: new NodeHttpHandler(),
  })
  await admin.send(new CreateStreamCommand({ StreamName: stream, ShardCount: 1 }))
  const shardId = await waitFor(
    async () => {
      const { StreamDescription } = await admin.send(new DescribeStreamCommand({ StreamName: stream }))
      return StreamDescription?.StreamStatus === 'ACTIVE' && StreamDescription.Shards?.[0]?.ShardId
    },
    10_000,
    'the Kinesis stream to become active',
  )
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
    async close() {
      admin.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** s3rver ships no type declarations; this is the part of its API the peer uses. */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>
  close(): Promise<void>
}
const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverInstance

/** s3rver in-process with one bucket; objects are named `e2e/<event id>.json` by the destination's key_template. */
export async function startS3Peer(): Promise<Peer> {
  // s3rver checks requests against this fixed key pair.
  const credentials = { key: 'S3RVER', secret: 'S3RVER' }
  const bucket = `outflow-e2e-${randomUUID().slice(0, 8)}`
  const directory = await mkdtemp(path.join(os.tmpdir(), 'outflow-e2e-s3rver-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory })
  const { port } = await server.run()
  const endpoint = `http://127.0.0.1:${port}`
  const admin = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: credentials.key, secretAccessKey: credentials.secret } })
  await admin.send(new CreateBucketCommand({ Bucket: bucket }))
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
    async close() {
      admin.destroy()
      await server.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}
