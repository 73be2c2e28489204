import { GetRecordsCommand, GetShardIteratorCommand } from '@aws-sdk/client-kinesis'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cloudxKinesis } from '../../src/destinations/cloudx-kinesis.js'
import type { AttemptResult } from '../../src/model/attempt-result.js'
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
