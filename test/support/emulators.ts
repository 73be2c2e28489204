import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import type http from 'node:http'
import { createRequire } from 'node:module'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { CreateStreamCommand, DescribeStreamCommand, KinesisClient } from '@aws-sdk/client-kinesis'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { NodeHttpHandler } from '@smithy/node-http-handler'
import amqp from 'amqplib'
import { expect, vi } from 'vitest'
import { amqpUrl } from './services.js'

// The peers the destination suites and the end-to-end suite deliver to: started the same way for both.

const require = createRequire(import.meta.url)

/** kinesalite ships no type declarations: it exports a factory of a node:http server. */
const kinesalite = require('kinesalite') as (options: Record<string, unknown>) => http.Server

/** s3rver ships no type declarations; this is the part of its API the suites use. */
interface S3rverInstance {
  run(): Promise<{ address: string; port: number }>
  close(): Promise<void>
}
const S3rver = require('s3rver') as new (options: Record<string, unknown>) => S3rverInstance

/**
 * kinesalite (Kinesis in-process) on loopback with one active stream, and an admin client to read records back.
 *
 * @example
 * const kinesis = await startKinesalite({ shards: 2 })
 * const config = { stream_name: kinesis.stream, region: 'us-east-1', endpoint: kinesis.endpoint }
 */
export async function startKinesalite({ shards = 1 } = {}) {
  const credentials = { key: 'AKIDEXAMPLE', secret: 'kinesalite-does-not-check-this' }
  const stream = `outflow-${randomUUID().slice(0, 8)}`
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
  await admin.send(new CreateStreamCommand({ StreamName: stream, ShardCount: shards }))
  const shardIds = await vi.waitFor(
    async () => {
      const { StreamDescription } = await admin.send(new DescribeStreamCommand({ StreamName: stream }))
      expect(StreamDescription?.StreamStatus).toBe('ACTIVE')
      return StreamDescription!.Shards!.map((shard) => shard.ShardId!)
    },
    { timeout: 10_000 },
  )
  return {
    endpoint,
    stream,
    credentials,
    shardIds,
    admin,
    async close() {
      admin.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/**
 * s3rver (S3 in-process) on loopback with one bucket, and an admin client to read objects back.
 *
 * @example
 * const s3 = await startS3rver()
 * const config = { bucket: s3.bucket, region: 'us-east-1', endpoint: s3.endpoint }
 */
export async function startS3rver() {
  // s3rver checks requests against this fixed key pair.
  const credentials = { key: 'S3RVER', secret: 'S3RVER' }
  const bucket = `outflow-${randomUUID().slice(0, 8)}`
  const directory = await mkdtemp(path.join(os.tmpdir(), 'outflow-s3rver-'))
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory })
  const { port } = await server.run()
  const endpoint = `http://127.0.0.1:${port}`
  const admin = new S3Client({ region: 'us-east-1', endpoint, forcePathStyle: true, credentials: { accessKeyId: credentials.key, secretAccessKey: credentials.secret } })
  await admin.send(new CreateBucketCommand({ Bucket: bucket }))
  return {
    endpoint,
    bucket,
    credentials,
    admin,
    async close() {
      admin.destroy()
      await server.close()
      await rm(directory, { recursive: true, force: true })
    },
  }
}

/**
 * A fresh topic exchange on the local RabbitMQ with an exclusive queue bound to it with `#`, and the broker's
 * `host:port` and login from `amqpUrl` for destinations to use. close() deletes the exchange.
 *
 * @example
 * const rabbit = await startRabbitExchange()
 * const config = { server_url: rabbit.brokerHostPort, exchange: rabbit.exchange }
 */
export async function startRabbitExchange() {
  const broker = new URL(amqpUrl)
  const brokerHostPort = `${broker.hostname}:${broker.port || 5672}`
  const credentials = { username: decodeURIComponent(broker.username || 'guest'), password: decodeURIComponent(broker.password || 'guest') }
  const exchange = `outflow-test-${randomUUID()}`
  const connection = await amqp.connect(amqpUrl)
  const channel = await connection.createChannel()
  await channel.assertExchange(exchange, 'topic', { durable: false, autoDelete: false })
  const { queue } = await channel.assertQueue('', { exclusive: true })
  await channel.bindQueue(queue, exchange, '#')
  return {
    brokerHostPort,
    credentials,
    exchange,
    queue,
    channel,
    async close() {
      await channel.deleteExchange(exchange).catch(() => {})
      await connection.close()
    },
  }
}
