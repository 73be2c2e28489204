import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Body, Controller, type DynamicModule, type INestApplication, Injectable, Module, Post, type Type } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { ExpressAdapter } from '@nestjs/platform-express'
import { FastifyAdapter } from '@nestjs/platform-fastify'
import { Test } from '@nestjs/testing'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { InjectOutflow, OutflowModule } from '../../adapters/nestjs.js'
import { createOutflow } from '../../src/create-outflow.js'
import { Outflow } from '../../src/engine.js'
import { sqlite } from '../../src/storage/sqlite.js'
import { startReceiver, waitFor } from '../support/receiver.js'
import { type NestHost, createNestApp, decorateRoute, hostModule, listenNest, nestPlatforms, startNestHost } from '../support/nest-host.js'
import { adminKey, jwtSecret } from './support.js'

// What the shared suites (test/http/mounts.ts, test/support/portal-mounts.ts) cannot show of OutflowModule:
// the host's own controllers, parsers and filters beside the API, forRootAsync, injection into host
// providers, and the engine's life with the app's (close drains deliveries). The shared suites run the
// whole API and the portal through Nest on both platforms.

const admin = { authorization: `Bearer ${adminKey}` }
const json = { 'content-type': 'application/json' }

/** A publisher of the host's: gets the engine by its constructor's type, as `emitDecoratorMetadata` tells Nest. */
class OrdersService {
  constructor(readonly outflow: Outflow) {}
  placeOrder(tenant: string, id: string) {
    return this.outflow.publish({ id, tenant_id: tenant, topic: 'order.created', data: { order: id } })
  }
}
Injectable()(OrdersService)
// What TypeScript emits for `constructor(readonly outflow: Outflow)` with emitDecoratorMetadata.
Reflect.defineMetadata('design:paramtypes', [Outflow], OrdersService)

/** Another provider, given the engine with @InjectOutflow() (no emitted types needed). */
class AuditService {
  constructor(readonly outflow: Outflow) {}
}
Injectable()(AuditService)
InjectOutflow()(AuditService, undefined, 0)

/** The host's route that publishes through OrdersService. */
class OrdersController {
  constructor(private readonly orders: OrdersService) {}
  create(body: { tenant: string; id: string }) {
    return this.orders.placeOrder(body.tenant, body.id)
  }
}
Controller('orders')(OrdersController)
Reflect.defineMetadata('design:paramtypes', [OrdersService], OrdersController)
decorateRoute(OrdersController, 'create', [Post()], [Body()])

function engine(options: { path?: string; apiKey?: string } = {}): Promise<Outflow> {
  return createOutflow({ storage: sqlite({ path: options.path ?? ':memory:' }), apiKey: 'apiKey' in options ? options.apiKey : adminKey, jwtSecret, allowPrivateNetworks: true })
}

describe.each(nestPlatforms)('OutflowModule on Nest with %s, beside the host’s own routes', (platform) => {
  let outflow: Outflow
  let host: NestHost
  beforeAll(async () => {
    outflow = await engine()
    host = await startNestHost(platform, [OutflowModule.forRoot({ outflow })])
  })
  afterAll(async () => {
    await host?.close()
    await outflow?.close()
  })

  it('host controllers keep Nest’s body parsing (JSON and urlencoded)', async () => {
    const echoed = await fetch(`${host.origin}/host/echo`, { method: 'POST', headers: json, body: '{"a":1,"b":[true]}' })
    expect(echoed.status).toBe(201)
    expect(await echoed.json()).toEqual({ echoed: { a: 1, b: [true] } })
    const form = await fetch(`${host.origin}/host/echo`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&b=two' })
    expect(await form.json()).toEqual({ echoed: { a: '1', b: 'two' } })
  })

  it('host HttpExceptions and unknown routes go through the host’s exception filter, the API’s errors do not', async () => {
    const refused = await fetch(`${host.origin}/host/refuse`)
    expect(refused.status).toBe(418)
    expect(await refused.json()).toEqual({ host_error: 'the host refuses', status: 418 })
    const unknown = await fetch(`${host.origin}/nope`)
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toMatchObject({ status: 404, host_error: expect.stringContaining('/nope') })
    const apiUnknown = await fetch(`${host.origin}/api/v1/nope`, { headers: admin })
    expect(apiUnknown.status).toBe(404)
    expect(await apiUnknown.json()).toEqual({ status: 404, message: 'route not found: GET /nope' })
    const unauthenticated = await fetch(`${host.origin}/api/v1/tenants`)
    expect(unauthenticated.status).toBe(401)
    expect(await unauthenticated.json()).toMatchObject({ status: 401 })
  })

  it('the API reads its own raw body: one over Nest’s 100 kb JSON limit is stored as sent, a form body is a 415', async () => {
    const metadata = { blob: 'x'.repeat(300_000), unicode: 'ünïcødé ✓' }
    const put = await fetch(`${host.origin}/api/v1/tenants/big`, { method: 'PUT', headers: { ...admin, ...json }, body: JSON.stringify({ metadata }) })
    expect(put.status).toBe(201)
    expect((await outflow.getTenant('big')).metadata).toEqual(metadata)
    const form = await fetch(`${host.origin}/api/v1/tenants/form`, { method: 'PUT', headers: { ...admin, 'content-type': 'application/x-www-form-urlencoded' }, body: 'metadata=1' })
    expect(form.status).toBe(415)
    expect(await form.json()).toMatchObject({ status: 415 })
    await expect(outflow.getTenant('form')).rejects.toMatchObject({ status: 404 })
  })
})

describe.each(nestPlatforms)('OutflowModule’s engine in a Nest app on %s', (platform) => {
  const closers: (() => Promise<unknown>)[] = []
  afterEach(async () => {
    for (const close of closers.splice(0).reverse()) await close()
  })
  /** A host app closed after the test (once: a test may close it itself). */
  const start = async (imports: DynamicModule[], providers: Type[] = [], controllers: Type[] = []) => {
    const host = await startNestHost(platform, imports, providers, controllers)
    let closed: Promise<void> | undefined
    const close = () => (closed ??= host.close())
    closers.push(close)
    return { ...host, close }
  }

  it('forRootAsync: options from an injected config provider of an imported module, the API at their path', async () => {
    class OutflowSettings {
      constructor(private readonly values: Record<string, string>) {}
      get(name: string): string {
        return this.values[name]!
      }
    }
    class SettingsModule {}
    Module({ providers: [{ provide: OutflowSettings, useValue: new OutflowSettings({ apiKey: 'config-admin-key-0123456789', apiPath: '/outflow/v1' }) }], exports: [OutflowSettings] })(SettingsModule)
    const outflowModule = OutflowModule.forRootAsync({
      imports: [SettingsModule],
      inject: [OutflowSettings],
      useFactory: async (settings: OutflowSettings) => ({ storage: sqlite({ path: ':memory:' }), apiKey: settings.get('apiKey'), jwtSecret, apiPath: settings.get('apiPath') }),
    })
    const host = await start([outflowModule])
    const created = host.app.get(Outflow)
    expect(created.options.apiKey).toBe('config-admin-key-0123456789')
    expect((await fetch(`${host.origin}/outflow/v1/tenants`, { headers: admin })).status).toBe(401)
    const listed = await fetch(`${host.origin}/outflow/v1/tenants`, { headers: { authorization: 'Bearer config-admin-key-0123456789' } })
    expect(listed.status).toBe(200)
    expect(await listed.json()).toMatchObject({ models: [] })
    // Nothing at the default path: that is the host's 404.
    expect(await (await fetch(`${host.origin}/api/v1/tenants`)).json()).toMatchObject({ host_error: expect.any(String) })
    // The portal page calls the API where it is mounted.
    expect(await (await fetch(`${host.origin}/portal/`)).text()).toContain('<meta name="outflow-api" content="/outflow/v1">')
    await host.close()
    expect(created.closed).toBe(true)
  })

  it('host providers get the one engine, by type or @InjectOutflow(); an event a host route publishes reaches a real receiver, signed', async () => {
    const receiver = await startReceiver()
    closers.push(receiver.close)
    const host = await start([OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret, allowPrivateNetworks: true })], [OrdersService, AuditService], [OrdersController])
    const outflow = host.app.get(Outflow)
    expect(host.app.get(OrdersService).outflow).toBe(outflow)
    expect(host.app.get(AuditService).outflow).toBe(outflow)
    await outflow.upsertTenant('acme')
    await outflow.createDestination('acme', { type: 'webhook', topics: ['order.*'], config: { url: `${receiver.url}/hooks` } })
    const placed = await fetch(`${host.origin}/orders`, { method: 'POST', headers: json, body: JSON.stringify({ tenant: 'acme', id: 'order-1' }) })
    expect(placed.status).toBe(201)
    expect(await placed.json()).toMatchObject({ id: 'order-1' })
    const [delivered] = await waitFor(() => receiver.on('/hooks').length > 0 && receiver.on('/hooks'))
    expect(JSON.parse(delivered!.body)).toEqual({ order: 'order-1' })
    expect(delivered!.headers['webhook-id']).toBe('order-1')
    expect(delivered!.headers['webhook-signature']).toMatch(/^v1,/)
  })

  it('app.close() stops the HTTP server, then closes the engine it created: a delivery in flight completes and is recorded', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'outflow-nest-'))
    closers.push(async () => rmSync(dir, { recursive: true, force: true }))
    const path = join(dir, 'outflow.db')
    let release!: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    const receiver = await startReceiver(() => ({ until: released }))
    closers.push(receiver.close)
    const host = await start([OutflowModule.forRoot({ storage: sqlite({ path }), apiKey: adminKey, jwtSecret, allowPrivateNetworks: true })])
    const outflow = host.app.get(Outflow)
    const order: string[] = []
    outflow.on('delivery.succeeded', () => order.push('delivered'))
    await outflow.upsertTenant('acme')
    await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/slow` } })
    const published = await fetch(`${host.origin}/api/v1/publish`, { method: 'POST', headers: { ...admin, ...json }, body: JSON.stringify({ id: 'in-flight', tenant_id: 'acme', topic: 'order.created', data: {} }) })
    expect(published.status).toBe(202)
    await waitFor(() => receiver.on('/slow').length === 1, 15_000, 'the attempt to reach the receiver')
    const closing = host.close().then(() => order.push('closed'))
    await waitFor(() => outflow.closed, 15_000, 'the module to close the engine')
    // The HTTP server stopped before the engine closed.
    await expect(fetch(`${host.origin}/api/v1/healthz`)).rejects.toThrow()
    release()
    await closing
    expect(order).toEqual(['delivered', 'closed'])
    const reopened = await createOutflow({ storage: sqlite({ path }), apiKey: adminKey, jwtSecret, delivery: { worker: false } })
    try {
      expect((await reopened.listDeliveries('acme', 'in-flight')).map((a) => a.status)).toEqual(['success'])
    } finally {
      await reopened.close()
    }
    expect(receiver.received).toHaveLength(1)
  })

  it('an engine passed in as outflow is left open on app.close(): it is the host’s', async () => {
    const outflow = await engine()
    closers.push(() => outflow.close())
    const host = await start([OutflowModule.forRoot({ outflow })])
    await host.close()
    expect(outflow.closed).toBe(false)
    expect((await outflow.upsertTenant('still-open')).tenant.id).toBe('still-open')
  })

  it('apiPath: false provides the engine without mounting anything', async () => {
    const host = await start([OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret, apiPath: false })])
    expect(host.app.get(Outflow)).toBeInstanceOf(Outflow)
    for (const path of ['/api/v1/healthz', '/portal/']) expect(await (await fetch(`${host.origin}${path}`)).json()).toMatchObject({ status: 404, host_error: expect.any(String) })
  })

  it('an engine without apiKey fails the app’s init (and is closed); a bad apiPath fails before an engine is made', async () => {
    const app = await createNestApp(platform, hostModule([OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), jwtSecret })]))
    closers.push(() => app.close())
    await expect(app.init()).rejects.toThrow(/needs an apiKey/)
    expect(app.get(Outflow).closed).toBe(true)
    await expect(createNestApp(platform, hostModule([OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret, apiPath: 'api' })]))).rejects.toThrow(
      'OutflowModule apiPath must be a path like /api/v1, not "api"',
    )
  })

  it('under @nestjs/testing (createNestApplication after compile) the API is mounted ahead of Nest’s body parsers too', async () => {
    const moduleRef = await Test.createTestingModule({ imports: [OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret })] }).compile()
    const app: INestApplication = moduleRef.createNestApplication(platform === 'express' ? new ExpressAdapter() : new FastifyAdapter(), { logger: false, forceCloseConnections: true })
    const host = await listenNest(app)
    closers.push(host.close)
    const metadata = { blob: 'y'.repeat(300_000) }
    expect((await fetch(`${host.origin}/api/v1/tenants/big`, { method: 'PUT', headers: { ...admin, ...json }, body: JSON.stringify({ metadata }) })).status).toBe(201)
    expect((await app.get(Outflow).getTenant('big')).metadata).toEqual(metadata)
    expect((await fetch(`${host.origin}/api/v1/tenants/form`, { method: 'PUT', headers: { ...admin, 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1' })).status).toBe(415)
  })
})

describe('OutflowModule without an HTTP server (NestFactory.createApplicationContext)', () => {
  it('provides the engine to a worker-style app and closes it with the context', async () => {
    class WorkerModule {}
    Module({ imports: [OutflowModule.forRoot({ storage: sqlite({ path: ':memory:' }), apiKey: adminKey, jwtSecret })], providers: [AuditService] })(WorkerModule)
    const context = await NestFactory.createApplicationContext(WorkerModule, { logger: false, abortOnError: false })
    const outflow = context.get(AuditService).outflow
    expect((await outflow.upsertTenant('worker')).tenant.id).toBe('worker')
    await context.close()
    expect(outflow.closed).toBe(true)
  })
})
