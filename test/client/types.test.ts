import * as v from 'valibot'
import { describe, expect, expectTypeOf, it } from 'vitest'
import { OutflowClient, type HealthReport, type PublishInput, type PublishResult } from '../../src/client/index.js'
import type { Outflow } from '../../src/engine.js'
import type { PublishArgument } from '../../src/model/typed-publish.js'

// Compile-time tests: `npm run typecheck` (tsc over test/) fails if a `@ts-expect-error` line compiles or an
// `expectTypeOf` does not hold. The calls are never sent (`compileOnly` is not called): the routes suite
// sends them to a real server.

const catalog = {
  'order.created': {
    schema: { type: 'object', required: ['id', 'total'], properties: { id: { type: 'string' }, total: { type: 'number' }, currency: { enum: ['EUR', 'USD'] } }, additionalProperties: false } as const,
  },
  'user.signed_up': { schema: v.object({ email: v.string(), plan: v.picklist(['free', 'pro']) }) },
  'audit.logged': { description: 'No schema: any JSON object' },
}
type Catalog = typeof catalog

/** The methods the client shares with the engine (health is overloaded: checked on its own). */
type Shared =
  | 'listTenants' | 'getTenant' | 'upsertTenant' | 'deleteTenant' | 'getPortalRedirect' | 'exchangePortalCode' | 'getTenantToken'
  | 'listDestinations' | 'createDestination' | 'getDestination' | 'updateDestination' | 'deleteDestination' | 'enableDestination' | 'disableDestination'
  | 'replayDestination' | 'replayTenant' | 'getReplay' | 'cancelReplay' | 'listDestinationTypes' | 'getDestinationType' | 'listTopics' | 'getTopic'
  | 'publish' | 'listAdminEvents' | 'listEvents' | 'getEvent' | 'listDeliveries' | 'listDestinationEvents' | 'getDestinationEvent' | 'retryDelivery'
  | 'eventMetrics' | 'attemptMetrics' | 'getSigningKeys' | 'rotateSigningKey'
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Results<O> = { [K in Shared & keyof O]: O[K] extends (...args: any[]) => infer R ? Awaited<R> : never }

function compileOnly(client: OutflowClient<Catalog>, untyped: OutflowClient, inferred: OutflowClient<Catalog>) {
  void client.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 10, currency: 'EUR' } })
  void client.publish({ tenant_id: 'acme', topic: 'user.signed_up', data: { email: 'a@example.com', plan: 'pro' } })
  void client.publish({ tenant_id: 'acme', topic: 'audit.logged', data: { anything: [1, 2] } })
  // @ts-expect-error total is a number
  void client.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: '10' } })
  // @ts-expect-error currency is EUR or USD
  void client.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 10, currency: 'GBP' } })
  // @ts-expect-error plan is free or pro
  void client.publish({ tenant_id: 'acme', topic: 'user.signed_up', data: { email: 'a@example.com', plan: 'team' } })
  // @ts-expect-error not a topic of the catalog
  void client.publish({ tenant_id: 'acme', topic: 'order.shipped', data: {} })
  // @ts-expect-error tenant_id is required
  void client.publish({ topic: 'audit.logged', data: {} })
  void untyped.publish({ tenant_id: 'acme', topic: 'anything.at_all', data: { n: 1 } })
  // @ts-expect-error without a catalog publish still takes a PublishInput: data is an object
  void untyped.publish({ tenant_id: 'acme', topic: 'anything.at_all', data: 'text' })
  // @ts-expect-error the bodies are typed: a destination needs its topics
  void untyped.createDestination('acme', { type: 'webhook', config: { url: 'https://example.com' } })
  // @ts-expect-error the type of a destination is one of the registry's
  void untyped.createDestination('acme', { type: 'carrier_pigeon', topics: '*' })
  // @ts-expect-error an unknown query parameter
  void untyped.listEvents('acme', { topics: ['a'] })
  void inferred.publish({ tenant_id: 'acme', topic: 'order.created', data: { id: 'o-1', total: 1 } })
}

describe('outflow/client types', () => {
  it('types publish by the catalog like the engine, whether given as a type argument or the topics option', () => {
    expectTypeOf<Parameters<OutflowClient<Catalog>['publish']>[0]>().toEqualTypeOf<PublishArgument<Catalog>>()
    expectTypeOf<Parameters<Outflow<Catalog>['publish']>[0]>().toEqualTypeOf<PublishArgument<Catalog>>()
    const inferred = new OutflowClient({ baseUrl: 'http://outflow.test/api/v1', topics: catalog })
    expectTypeOf(inferred).toEqualTypeOf<OutflowClient<Catalog>>()
    expectTypeOf<Parameters<OutflowClient['publish']>[0]>().toEqualTypeOf<PublishInput>()
    expectTypeOf<ReturnType<OutflowClient['publish']>>().toEqualTypeOf<Promise<PublishResult>>()
    expect(typeof compileOnly).toBe('function')
  })

  it('answers with the engine’s types, method for method', () => {
    expectTypeOf<Results<OutflowClient>>().toEqualTypeOf<Results<Outflow>>()
    expectTypeOf<Awaited<ReturnType<OutflowClient['health']>>>().toEqualTypeOf<{ status: 'ok' | 'unavailable' | 'unhealthy'; failed_loops?: HealthReport['loops'][number]['name'][] }>()
    expectTypeOf<OutflowClient['health']>().toBeCallableWith()
    const health = (client: OutflowClient) => client.health()
    expectTypeOf(health).returns.resolves.toEqualTypeOf<HealthReport>()
    expectTypeOf<Awaited<ReturnType<Outflow['health']>>>().toEqualTypeOf<HealthReport>()
  })
})
