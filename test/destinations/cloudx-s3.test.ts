import { GetObjectCommand, HeadObjectCommand } from '@aws-sdk/client-s3'
import * as v from 'valibot'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { cloudxS3 } from '../../src/destinations/cloudx-s3.js'
import { startS3rver } from '../support/emulators.js'
import { messageBuilder, publishersFor } from '../support/publishers.js'

const message = messageBuilder({ data: { customer: 'cus_7', total: 12.5 }, metadata: { plan: 'pro' } })

describe('cloudx_s3 destination (s3rver)', () => {
  let s3: Awaited<ReturnType<typeof startS3rver>>
  const publishers = publishersFor(cloudxS3, { config: () => ({ bucket: s3.bucket, region: 'us-east-1', endpoint: s3.endpoint }), credentials: () => s3.credentials })
  const deliver = publishers.deliver

  async function read(key: string) {
    const object = await s3.admin.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }))
    return { object, body: JSON.parse(await object.Body!.transformToString('utf8')) as unknown }
  }

  beforeAll(async () => {
    s3 = await startS3rver()
  })

  afterAll(async () => {
    await publishers.closeAll()
    await s3?.close()
  })

  it('stores the data as JSON under <topic>/<time>_<id>.json with the metadata as object metadata', async () => {
    const m = message()
    const result = await deliver({}, m)
    const key = `order.created/2025-03-01T12:00:00.000Z_${m.id}.json`
    expect(result).toMatchObject({ ok: true, response_status_code: 200 })
    expect(JSON.parse(result.response_body!)).toMatchObject({ bucket: s3.bucket, key })
    const { object, body } = await read(key)
    expect(body).toEqual(m.data)
    expect(object.ContentType).toBe('application/json')
    expect(object.Metadata).toEqual(m.metadata)
  })

  it('names the object with key_template', async () => {
    const m = message()
    expect(await deliver({ key_template: "join('/', [topic, id])" }, m)).toMatchObject({ ok: true })
    expect((await read(`order.created/${m.id}`)).body).toEqual(m.data)

    const n = message()
    expect(await deliver({ key_template: "join('', [data.customer, '/', metadata.plan, '/', id, '.json'])" }, n)).toMatchObject({ ok: true })
    expect((await read(`cus_7/pro/${n.id}.json`)).body).toEqual(n.data)
  })

  it('applies storage_class', async () => {
    const m = message()
    expect(await deliver({ key_template: 'id', storage_class: 'STANDARD_IA' }, m)).toMatchObject({ ok: true })
    const head = await s3.admin.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: m.id }))
    expect(head.StorageClass).toBe('STANDARD_IA')
  })

  it('encodes non-ASCII metadata values instead of failing the delivery', async () => {
    const m = message({ metadata: { 'event-id': 'x', city: 'Zürich' } })
    expect(await deliver({ key_template: 'id' }, m)).toMatchObject({ ok: true })
    const { object } = await read(m.id)
    expect(object.Metadata?.city).toBe(`=?UTF-8?B?${Buffer.from('Zürich').toString('base64')}?=`)
  })

  it('reuses one client for several deliveries', async () => {
    const publisher = await publishers.open({ key_template: 'id' })
    const [a, b] = [message(), message()]
    try {
      expect(await publisher.publish(a)).toMatchObject({ ok: true })
      expect(await publisher.publish(b)).toMatchObject({ ok: true })
    } finally {
      await publisher.close()
    }
    expect((await read(a.id)).body).toEqual(a.data)
    expect((await read(b.id)).body).toEqual(b.data)
  })

  it('reports a missing bucket as not_found', async () => {
    const publisher = await publishers.open({ bucket: 'no-such-bucket-here' })
    try {
      const result = await publisher.publish(message())
      expect(result).toMatchObject({ ok: false, error_kind: 'not_found', response_status_code: 404 })
      expect(result.error).toContain('NoSuchBucket')
    } finally {
      await publisher.close()
    }
  })

  // s3rver does not verify SigV4 signatures (so a wrong secret passes there); it does refuse unknown access keys.
  it('reports an unknown access key as an authentication failure without the secret', async () => {
    const result = await deliver({}, message(), { credentials: { key: 'NOBODY', secret: 'not-the-secret-value' } })
    expect(result).toMatchObject({ ok: false, error_kind: 'authentication', response_status_code: 403 })
    expect(result.error).toContain('InvalidAccessKeyId')
    expect(result.error).not.toContain('not-the-secret-value')
  })

  it('fails with configuration when the key template yields nothing', async () => {
    const result = await deliver({ key_template: 'data.missing' }, message())
    expect(result).toMatchObject({ ok: false, error_kind: 'configuration' })
    expect(result.error).toContain('empty')
  })

  it('refuses a loopback endpoint unless private networks are allowed', async () => {
    const guarded = { context: { allowPrivateNetworks: false } }
    expect(await deliver({}, message(), guarded)).toMatchObject({ ok: false, error_kind: 'ssrf' })
    // A DNS name is checked after resolution, at connect time.
    const viaDns = await deliver({ endpoint: s3.endpoint.replace('127.0.0.1', 'localhost') }, message(), guarded)
    expect(viaDns).toMatchObject({ ok: false, error_kind: 'ssrf' })
  })
})

describe('cloudx_s3 schemas', () => {
  const parse = (config: unknown) => v.safeParse(cloudxS3.configSchema, config)
  const base = { bucket: 'my-bucket', region: 'eu-west-1' }

  it('accepts the documented fields', () => {
    expect(parse(base).success).toBe(true)
    expect(parse({ ...base, key_template: "join('/', [topic, id])", storage_class: 'GLACIER_IR', endpoint: 'http://127.0.0.1:4568' }).success).toBe(true)
  })

  it('rejects a bad template, an unknown function, a bad storage class, a bad endpoint and unexpected fields', () => {
    for (const config of [
      { ...base, key_template: "join('/', [topic, id]" },
      { ...base, key_template: 'shout(topic)' },
      { ...base, key_template: '' },
      { ...base, storage_class: 'COLD' },
      { ...base, endpoint: 'ftp://example.com' },
      { ...base, acl: 'public-read' },
      { ...base, bucket: 'Not_A_Bucket' },
      { bucket: 'my-bucket' },
    ]) {
      expect(parse(config).success, JSON.stringify(config)).toBe(false)
    }
    const bad = parse({ ...base, key_template: 'data.[' })
    expect(bad.success).toBe(false)
    expect(bad.issues?.[0]?.message).toMatch(/invalid JMESPath template/)
  })

  it('requires key and secret; session is optional; secrets are sensitive', () => {
    const creds = (c: unknown) => v.safeParse(cloudxS3.credentialsSchema, c).success
    expect(creds({ key: 'AKIA', secret: 's' })).toBe(true)
    expect(creds({ key: 'AKIA', secret: 's', session: 't' })).toBe(true)
    expect(creds({ key: 'AKIA' })).toBe(false)
    expect(creds({ key: 'AKIA', secret: 's', region: 'x' })).toBe(false)
    expect(cloudxS3.credential_fields.map((f) => [f.key, f.required, f.sensitive])).toEqual([
      ['key', true, false],
      ['secret', true, true],
      ['session', false, true],
    ])
    expect(cloudxS3.config_fields.map((f) => f.key)).toEqual(['bucket', 'region', 'key_template', 'storage_class', 'endpoint'])
  })

  it('shows the bucket as target and a console or endpoint URL', () => {
    expect(cloudxS3.target(base)).toBe('my-bucket')
    expect(cloudxS3.targetUrl?.(base)).toBe('https://s3.console.aws.amazon.com/s3/buckets/my-bucket?region=eu-west-1')
    expect(cloudxS3.targetUrl?.({ ...base, endpoint: 'http://minio.local:9000/' })).toBe('http://minio.local:9000/my-bucket')
  })
})
