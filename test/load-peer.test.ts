import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createOutflow } from '../src/create-outflow.js'
import { loadPeer, PeerLoadError } from '../src/load-peer.js'
import { OutflowError } from '../src/errors.js'
import { sqlite } from '../src/storage/sqlite.js'
import { hostWithout } from './support/without-packages.js'

describe('optional peer SDKs', () => {
  it('names the package to install when it is missing', async () => {
    const err = await loadPeer('@outflow-test/not-installed-sdk', 'amqp_broker destinations').then(
      () => null,
      (e: unknown) => e,
    )
    expect(err).toBeInstanceOf(OutflowError)
    expect(err).toBeInstanceOf(PeerLoadError)
    expect(err).toMatchObject({ package: '@outflow-test/not-installed-sdk', installed: false, status: 503 })
    expect((err as OutflowError).message).toBe(
      'the optional package "@outflow-test/not-installed-sdk" is needed by amqp_broker destinations but is not installed: npm install @outflow-test/not-installed-sdk',
    )
  })

  it('loads an installed one once and reuses it', async () => {
    const a = await loadPeer<typeof import('amqplib')>('amqplib', 'amqp_broker destinations')
    const b = await loadPeer<typeof import('amqplib')>('amqplib', 'amqp_broker destinations')
    expect(typeof a.connect).toBe('function')
    expect(b).toBe(a)
  })
})

/** Every optional SDK a destination type loads, and a valid create body per type. */
const sdkSamples: Record<string, { package: string; config: unknown; credentials: unknown }> = {
  amqp_broker: { package: 'amqplib', config: { server_url: 'broker.example.com:5672' }, credentials: { username: 'outflow', password: 'broker-password' } },
  cloudx_sqs: { package: '@aws-sdk/client-sqs', config: { queue_url: 'https://sqs.us-east-1.amazonaws.com/123456789012/orders' }, credentials: { key: 'AKIAEXAMPLE', secret: 'aws-secret' } },
  cloudx_kinesis: { package: '@aws-sdk/client-kinesis', config: { stream_name: 'orders', region: 'us-east-1' }, credentials: { key: 'AKIAEXAMPLE', secret: 'aws-secret' } },
  cloudx_s3: { package: '@aws-sdk/client-s3', config: { bucket: 'orders', region: 'us-east-1' }, credentials: { key: 'AKIAEXAMPLE', secret: 'aws-secret' } },
  cloudy_servicebus: {
    package: '@azure/service-bus',
    config: { name: 'orders' },
    credentials: { connection_string: 'Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0' },
  },
  cloudz_pubsub: {
    package: '@google-cloud/pubsub',
    config: { project_id: 'acme-project', topic: 'orders', endpoint: 'pubsub-emulator.example:8085' },
    credentials: { service_account_json: '{}' },
  },
  kafka: { package: 'kafkajs', config: { brokers: 'kafka.example.com:9092', topic: 'orders' }, credentials: {} },
  aws_eventbridge: { package: '@aws-sdk/client-eventbridge', config: { event_bus: 'orders', source: 'com.example.shop' }, credentials: { key: 'AKIAEXAMPLE', secret: 'aws-secret' } },
  nats_jetstream: { package: '@nats-io/transport-node', config: { servers: 'nats.example.com:4222', subject: 'events.orders' }, credentials: {} },
  redis_streams: { package: 'ioredis', config: { url: 'redis://cache.example.com:6379', stream_key: 'events' }, credentials: {} },
}

/** [type, package] of each type that needs one. */
const sdkPackages = Object.entries(sdkSamples).map(([type, sample]) => [type, sample.package] as const)

describe('a host without the optional packages (a child process whose node_modules lacks them)', () => {
  it('tells an installed package that fails to load (a dependency of its own is missing) from one not installed', async () => {
    const host = hostWithout(['url-parse'])
    try {
      const { code, stdout, stderr } = await host.run('missing-peers.ts', ['load', 'amqplib'])
      expect(code, stderr).toBe(0)
      const { error } = JSON.parse(stdout)
      expect(error).toMatchObject({ name: 'PeerLoadError', installed: true })
      expect(error.message).toMatch(/^the optional package "amqplib" is needed by this test but could not be loaded \(Cannot find (module|package) 'url-parse'.*\): reinstall it with npm install amqplib$/)
    } finally {
      host.remove()
    }
  })

  it.each([
    ['sqlite', 'better-sqlite3'],
    ['postgres', 'postgres'],
  ])('imports outflow/%s, and opening the storage fails naming npm install %s', async (storage, driver) => {
    const host = hostWithout([driver])
    try {
      const { code, stdout, stderr } = await host.run('missing-peers.ts', ['storage', storage])
      expect(code, stderr).toBe(0)
      expect(JSON.parse(stdout)).toEqual({
        imported: true,
        opened: { ok: false, error: { name: 'PeerLoadError', code: 'unavailable', message: expect.stringContaining(`is not installed: npm install ${driver}`) } },
      })
    } finally {
      host.remove()
    }
  })

  it('outflow/prometheus without the metrics SDK and the exporter names both in one npm install', async () => {
    const host = hostWithout(['@opentelemetry/exporter-prometheus', '@opentelemetry/sdk-metrics'])
    try {
      const { code, stdout, stderr } = await host.run('missing-peers.ts', ['prometheus'])
      expect(code, stderr).toBe(0)
      expect(JSON.parse(stdout)).toEqual({
        ok: false,
        error: {
          name: 'OutflowError',
          code: 'unavailable',
          message:
            'the optional packages "@opentelemetry/exporter-prometheus", "@opentelemetry/sdk-metrics" are needed by Prometheus metrics but are not installed: npm install @opentelemetry/exporter-prometheus @opentelemetry/sdk-metrics',
        },
      })
    } finally {
      host.remove()
    }
  })

  it('refuses a zod schema in the topic catalog when zod is not installed, advising jsonSchema beside it', async () => {
    const host = hostWithout(['zod'])
    try {
      const { code, stdout, stderr } = await host.run('missing-peers.ts', ['catalog'])
      expect(code, stderr).toBe(0)
      const message = 'zod schemas need zod 4 (its toJSONSchema), or give jsonSchema beside the schema'
      expect(JSON.parse(stdout)).toEqual({
        ok: false,
        error: { name: 'OutflowError', code: 'validation', message: `invalid topic catalog: topics.user.invited.schema: ${message}`, data: { 'topics.user.invited.schema': message } },
      })
    } finally {
      host.remove()
    }
  })

  describe('destination SDKs', () => {
    let result: {
      instructions: Record<string, string>
      created: Record<string, { status: number; body: { data?: Record<string, string> } }>
      updated: Record<string, { status: number; body: { data?: Record<string, string> } }>
      attempts: Record<string, { error_kind: string; error: string }>
    }
    let stored: Record<string, unknown>
    let dir: string
    const key = 'missing-peers-key-0123456789abcdef'

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'outflow-peers-'))
      // Created while the SDKs are installed (this process), then used by a host that lacks them all.
      const db = join(dir, 'outflow.db')
      const outflow = await createOutflow({ storage: sqlite({ path: db }), encryptionKey: key, jwtSecret: 'missing-peers-jwt-0123456789', auth: false, delivery: { worker: false } })
      await outflow.upsertTenant('acme')
      for (const [type, { config, credentials }] of Object.entries(sdkSamples)) await outflow.createDestination('acme', { id: type, type, topics: ['*'], config, credentials })
      stored = Object.fromEntries((await outflow.listDestinations('acme')).map((d) => [d.id, d.updated_at]))
      await outflow.close()
      const host = hostWithout(Object.values(sdkSamples).map((s) => s.package))
      try {
        const bodies = Object.fromEntries(Object.entries(sdkSamples).map(([type, { config, credentials }]) => [type, { config, credentials }]))
        const samples = { ...bodies, webhook: { config: { url: 'https://example.com/hook' } } }
        const { code, stdout, stderr } = await host.run('missing-peers.ts', ['destinations', db, key], { OUTFLOW_TEST_SAMPLES: JSON.stringify(samples) })
        expect(code, stderr).toBe(0)
        result = JSON.parse(stdout)
      } finally {
        host.remove()
      }
    }, 120_000)
    afterAll(() => dir && rmSync(dir, { recursive: true, force: true }))

    it.each(sdkPackages)('refuses to create a %s destination with 422 naming npm install %s', (type, name) => {
      expect(result.created[type]).toEqual({
        status: 422,
        body: expect.objectContaining({ data: { type: `${type} destinations need the optional package "${name}", which is not installed: npm install ${name}` } }),
      })
    })

    it('still creates destinations of types that need no optional package', () => {
      expect(result.created.webhook?.status).toBe(201)
    })

    it.each(Object.keys(sdkSamples))('refuses to update an existing %s destination with the same 422, and leaves it unchanged', async (type) => {
      expect(result.updated[type]).toEqual({ status: 422, body: expect.objectContaining({ data: { type: expect.stringContaining('npm install') } }) })
      const outflow = await createOutflow({ storage: sqlite({ path: join(dir, 'outflow.db') }), encryptionKey: key, jwtSecret: 'missing-peers-jwt-0123456789', auth: false, delivery: { worker: false } })
      try {
        const destination = await outflow.getDestination('acme', type)
        expect([destination.updated_at, destination.metadata]).toEqual([stored[type], undefined])
      } finally {
        await outflow.close()
      }
    })

    it.each(sdkPackages)('records an attempt to an existing %s destination as sdk_missing, naming npm install %s', (type, name) => {
      expect(result.attempts[type]).toEqual({ error_kind: 'sdk_missing', error: expect.stringContaining(`is not installed: npm install ${name}`) })
    })

    it.each(sdkPackages)('says in the %s instructions which package it needs (%s)', (type, name) => {
      expect(result.instructions[type]).toContain(`npm install ${name}`)
    })

    it('names no package in the instructions of types that need none', () => {
      expect(result.instructions.webhook).not.toContain('npm install')
      expect(result.instructions.relay).not.toContain('npm install')
    })
  })
})
