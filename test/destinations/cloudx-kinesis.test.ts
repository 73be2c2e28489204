import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-kinesis'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cloudxKinesis } from '../../src/destinations/cloudx-kinesis.js'
import type { AttemptResult } from '../../src/model/attempt-result.js'
import { startKinesisFront, type KinesisFront } from '../fakes/kinesis-front.js'
import { startKinesalite } from '../support/emulators.js'
import { closedPort, messageBuilder, publishersFor } from '../support/publishers.js'

const message = messageBuilder({ topic: 'order.paid', data: { customer: 'cus_9', amount: 300 }, metadata: { source: 'checkout' } })

describe('cloudx_kinesis destination (kinesalite)', () => {
  let kinesis: Awaited<ReturnType<typeof startKinesalite>>
  const publishers = publishersFor(cloudxKinesis, {
    config: () => ({ stream_name: kinesis.stream, region: 'us-east-1', endpoint: kinesis.endpoint }),
    credentials: () => kinesis.credentials,
  })
  const deliver = publishers.deliver

  /** Read back the record a successful attempt wrote, by the shard and sequence number it reported. */
  async function readRecord(result: AttemptResult): Promise<{ partitionKey: string; body: unknown }> {
    const receipt = JSON.parse(result.response_body!) as { shard_id: string; sequence_number: string }
    const { ShardIterator } = await kinesis.admin.send(
      new GetShardIteratorCommand({ StreamName: kinesis.stream, ShardId: receipt.shard_id, ShardIteratorType: 'AT_SEQUENCE_NUMBER', StartingSequenceNumber: receipt.sequence_number }),
    )
    const { Records = [] } = await kinesis.admin.send(new GetRecordsCommand({ ShardIterator, Limit: 1 }))
    const record = Records[0]
    expect(record?.SequenceNumber).toBe(receipt.sequence_number)
    return { partitionKey: record!.PartitionKey!, body: JSON.parse(Buffer.from(record!.Data!).toString('utf8')) }
  }

  beforeAll(async () => {
    kinesis = await startKinesalite({ shards: 2 })
  })

  afterAll(async () => {
    await publishers.closeAll()
    await kinesis?.close()
  })

  it('puts { metadata, data } as UTF-8 JSON, partitioned by the event id', async () => {
    const m = message()
    const result = await deliver({}, m)
    expect(result).toMatchObject({ ok: true, response_status_code: 200 })
    expect(JSON.parse(result.response_body!)).toMatchObject({ stream: kinesis.stream, partition_key: m.id })
    const record = await readRecord(result)
    expect(record.partitionKey).toBe(m.id)
    expect(record.body).toEqual({ metadata: m.metadata, data: m.data })
  })

  it('partitions by partition_key_template', async () => {
    const m = message({ data: { customer: 'cus_42', note: 'Grüße' } })
    const result = await deliver({ partition_key_template: 'data.customer' }, m)
    expect(result).toMatchObject({ ok: true })
    const record = await readRecord(result)
    expect(record.partitionKey).toBe('cus_42')
    expect(record.body).toEqual({ metadata: m.metadata, data: m.data })

    const n = message()
    const joined = await readRecord(await deliver({ partition_key_template: "join(':', [topic, metadata.source])" }, n))
    expect(joined.partitionKey).toBe('order.paid:checkout')
  })

  it('reuses one client for several records', async () => {
    const publisher = await publishers.open()
    try {
      const [a, b] = [message(), message()]
      const ra = await publisher.publish(a)
      const rb = await publisher.publish(b)
      expect((await readRecord(ra)).body).toEqual({ metadata: a.metadata, data: a.data })
      expect((await readRecord(rb)).body).toEqual({ metadata: b.metadata, data: b.data })
    } finally {
      await publisher.close()
    }
  })

  it('reports an unknown stream as not_found', async () => {
    const result = await deliver({ stream_name: 'no-such-stream' }, message())
    expect(result).toMatchObject({ ok: false, error_kind: 'not_found' })
    expect(result.error).toContain('ResourceNotFoundException')
    expect(result.error).toContain('no-such-stream')
  })

  it('fails with configuration when the partition key template yields nothing', async () => {
    expect(await deliver({ partition_key_template: 'data.nothing' }, message())).toMatchObject({ ok: false, error_kind: 'configuration' })
  })

  it('refuses a loopback endpoint unless private networks are allowed', async () => {
    expect(await deliver({}, message(), { context: { allowPrivateNetworks: false } })).toMatchObject({ ok: false, error_kind: 'ssrf' })
  })

  it('reports an endpoint that refuses the connection as connection_refused', async () => {
    expect(await deliver({ endpoint: `http://127.0.0.1:${await closedPort()}` }, message())).toMatchObject({ ok: false, error_kind: 'connection_refused' })
  })
})

describe('cloudx_kinesis batches (PutRecords, kinesalite behind a front)', () => {
  let kinesis: Awaited<ReturnType<typeof startKinesalite>>
  let front: KinesisFront
  const publishers = publishersFor(cloudxKinesis, {
    config: () => ({ stream_name: kinesis.stream, region: 'us-east-1', endpoint: front.endpoint, partition_key_template: 'topic' }),
    credentials: () => kinesis.credentials,
  })
  const batch = (count: number, tag: string, data: Record<string, unknown> = {}) => Array.from({ length: count }, (_, i) => message({ data: { tag, i, ...data } }))

  /** Every record of the stream carrying `tag`, shard by shard, in stored order. */
  async function recordsTagged(tag: string): Promise<{ partitionKey: string; body: { metadata: unknown; data: { tag: string; i: number } } }[]> {
    const found = []
    for (const ShardId of kinesis.shardIds) {
      const { ShardIterator } = await kinesis.admin.send(new GetShardIteratorCommand({ StreamName: kinesis.stream, ShardId, ShardIteratorType: 'TRIM_HORIZON' }))
      const { Records = [] } = await kinesis.admin.send(new GetRecordsCommand({ ShardIterator, Limit: 10_000 }))
      for (const r of Records) {
        const body = JSON.parse(Buffer.from(r.Data!).toString('utf8'))
        if (body.data?.tag === tag) found.push({ partitionKey: r.PartitionKey!, body })
      }
    }
    return found
  }

  beforeAll(async () => {
    kinesis = await startKinesalite({ shards: 2 })
    front = await startKinesisFront(kinesis.endpoint)
  })
  afterAll(async () => {
    await publishers.closeAll()
    await front?.close()
    await kinesis?.close()
  })

  it('puts several records in one call, each once, in order on its shard, as PutRecord would write them', async () => {
    const publisher = await publishers.open()
    const calls = front.calls.length
    const messages = batch(7, 'seven')
    const results = await publisher.publishBatch(messages)
    expect(results.every((r) => r.ok && r.response_status_code === 200)).toBe(true)
    expect(JSON.parse(results[3]!.response_body!)).toMatchObject({ stream: kinesis.stream, partition_key: 'order.paid', shard_id: expect.any(String) })
    expect(front.calls.slice(calls)).toEqual([{ action: 'PutRecords', records: 7 }])
    const stored = await recordsTagged('seven')
    expect(stored.map((r) => r.body.data.i)).toEqual([0, 1, 2, 3, 4, 5, 6])
    expect(stored[2]).toEqual({ partitionKey: 'order.paid', body: { metadata: messages[2]!.metadata, data: messages[2]!.data } })
  })

  it('splits at 500 records and at 5 MiB per call', async () => {
    const publisher = await publishers.open({ partition_key_template: undefined })
    let calls = front.calls.length
    expect((await publisher.publishBatch(batch(501, 'many'))).every((r) => r.ok)).toBe(true)
    expect(front.calls.slice(calls).map((c) => c.records)).toEqual([500, 1])
    expect(new Set((await recordsTagged('many')).map((r) => r.body.data.i)).size).toBe(501)
    calls = front.calls.length
    expect((await publisher.publishBatch(batch(6, 'large', { pad: 'x'.repeat(900 * 1024) }))).every((r) => r.ok)).toBe(true)
    expect(front.calls.slice(calls).map((c) => c.records)).toEqual([5, 1])
  })

  it('gives a record Kinesis refuses its own result and kind; the others are written', async () => {
    const publisher = await publishers.open()
    front.failRecord('"tag":"refused","i":1}', 'ProvisionedThroughputExceededException', 'Rate exceeded for shard shardId-000000000000 in stream')
    front.failRecord('"tag":"refused","i":2}', 'InternalFailure', 'Internal service failure.')
    const results = await publisher.publishBatch(batch(4, 'refused'))
    expect(results.map((r) => [r.ok, r.error_kind])).toEqual([
      [true, undefined],
      [false, 'throttled'],
      [false, 'unavailable'],
      [true, undefined],
    ])
    expect(results[1]!.error).toContain('ProvisionedThroughputExceededException: Rate exceeded')
    expect((await recordsTagged('refused')).map((r) => r.body.data.i)).toEqual([0, 3])
  })

  it('fails every record of a call refused whole; a record without a partition key fails alone', async () => {
    const publisher = await publishers.open()
    front.failNext(400, 'ProvisionedThroughputExceededException', 'Rate exceeded for stream')
    expect((await publisher.publishBatch(batch(3, 'whole'))).map((r) => r.error_kind)).toEqual(['throttled', 'throttled', 'throttled'])
    const missing = await publishers.open({ stream_name: 'no-such-stream' })
    expect((await missing.publishBatch(batch(2, 'missing'))).map((r) => r.error_kind)).toEqual(['not_found', 'not_found'])
    const keyed = await publishers.open({ partition_key_template: 'data.customer' })
    const messages = batch(3, 'keyed').map((m, i) => (i === 1 ? m : { ...m, data: { ...(m.data as object), customer: `cus_${i}` } }))
    expect((await keyed.publishBatch(messages)).map((r) => [r.ok, r.error_kind])).toEqual([
      [true, undefined],
      [false, 'configuration'],
      [true, undefined],
    ])
  })

  it('sends an ordered batch one PutRecord at a time (PutRecords does not keep order), and times out an aborted one', async () => {
    const publisher = await publishers.open()
    const calls = front.calls.length
    const results = await publisher.publishBatch(batch(3, 'ordered').map((m) => ({ ...m, ordering_key: '' })))
    expect(results.every((r) => r.ok)).toBe(true)
    expect(front.calls.slice(calls).map((c) => c.action)).toEqual(['PutRecord', 'PutRecord', 'PutRecord'])
    expect((await recordsTagged('ordered')).map((r) => r.body.data.i)).toEqual([0, 1, 2])
    const aborted = await publisher.publishBatch(batch(2, 'aborted'), { signal: AbortSignal.abort(new Error('deadline passed')) })
    expect(aborted.map((r) => r.error_kind)).toEqual(['timeout', 'timeout'])
  })
})

describe('cloudx_kinesis schemas', () => {
  const parse = (config: unknown) => v.safeParse(cloudxKinesis.configSchema, config)
  const base = { stream_name: 'orders', region: 'us-east-1' }

  it('accepts the documented fields and rejects the rest', () => {
    expect(parse(base).success).toBe(true)
    expect(parse({ ...base, endpoint: 'https://kinesis.example.com', partition_key_template: 'data.customer' }).success).toBe(true)
    for (const config of [{ ...base, partition_key_template: 'data.[' }, { ...base, shard: '1' }, { ...base, stream_name: 'bad name' }, { region: 'us-east-1' }]) {
      expect(parse(config).success, JSON.stringify(config)).toBe(false)
    }
    expect(cloudxKinesis.config_fields.map((f) => f.key)).toEqual(['stream_name', 'region', 'endpoint', 'partition_key_template'])
    expect(cloudxKinesis.credential_fields.map((f) => f.key)).toEqual(['key', 'secret', 'session'])
  })

  it('shows the stream as target', () => {
    expect(cloudxKinesis.target(base)).toBe('orders')
    expect(cloudxKinesis.targetUrl?.(base)).toContain('kinesis/home?region=us-east-1')
  })
})
