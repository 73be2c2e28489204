import { describe, expect, it } from 'vitest'
import { type RouteSpec, routes } from '../../src/http/routes.js'
import type { SuiteContext } from './support.js'

interface MatrixRequest {
  path: string
  json?: unknown
  /** The `{tenant_id}` of the path, whose token is "own tenant". Default acme. */
  tenant?: string
}

type Principal = 'none' | 'admin' | 'own tenant' | 'other tenant'
const principals: Principal[] = ['none', 'admin', 'own tenant', 'other tenant']

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

/** A valid request per route; destructive routes get a fresh resource for every call. */
const cases: Record<string, (ctx: SuiteContext) => Promise<MatrixRequest>> = {
  listTenants: async () => ({ path: '/tenants' }),
  getTenant: async () => ({ path: '/tenants/acme' }),
  upsertTenant: async () => ({ path: '/tenants/acme', json: { metadata: { name: 'acme' } } }),
  deleteTenant: async (ctx) => {
    const tenant = unique('matrix')
    await ctx.api('PUT', `/tenants/${tenant}`)
    return { path: `/tenants/${tenant}`, tenant }
  },
  getPortalRedirect: async () => ({ path: '/tenants/acme/portal?theme=dark' }),
  getTenantToken: async () => ({ path: '/tenants/acme/token' }),
  listDestinations: async () => ({ path: '/tenants/acme/destinations?type=webhook' }),
  createDestination: async (ctx) => ({ path: '/tenants/acme/destinations', json: { type: 'webhook', topics: ['matrix.none'], config: { url: `${ctx.receiverUrl}/ok` } } }),
  getDestination: async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}` }),
  updateDestination: async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}`, json: { topics: ['order.created'] } }),
  deleteDestination: async (ctx) => ({ path: `/tenants/acme/destinations/${await freshDestination(ctx)}` }),
  enableDestination: async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/enable` }),
  disableDestination: async (ctx) => ({ path: `/tenants/acme/destinations/${await freshDestination(ctx)}/disable` }),
  listTenantDestinationTypes: async () => ({ path: '/tenants/acme/destination-types' }),
  getTenantDestinationType: async () => ({ path: '/tenants/acme/destination-types/webhook' }),
  listDestinationTypes: async () => ({ path: '/destination-types' }),
  getDestinationType: async () => ({ path: '/destination-types/relay' }),
  publish: async () => ({ path: '/publish', json: { tenant_id: 'acme', topic: 'matrix.none', data: {} } }),
  listAdminEvents: async () => ({ path: '/events?limit=1' }),
  listEvents: async () => ({ path: '/tenants/acme/events?status=success' }),
  getEvent: async () => ({ path: '/tenants/acme/events/e1' }),
  listDeliveries: async () => ({ path: '/tenants/acme/events/e1/deliveries' }),
  listDestinationEvents: async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events` }),
  getDestinationEvent: async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events/e1` }),
  retryDelivery: async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events/e1/retry` }),
  getEventMetrics: async () => ({ path: '/metrics/events?time[start]=2024-01-01T00:00:00Z&time[end]=2024-01-02T00:00:00Z&granularity=1h&measures[]=count' }),
  getAttemptMetrics: async () => ({ path: '/metrics/attempts?time[start]=2024-01-01T00:00:00Z&time[end]=2024-01-02T00:00:00Z&measures[0]=count&dimensions[0]=status' }),
  health: async () => ({ path: '/healthz' }),
  openapi: async () => ({ path: '/openapi.json' }),
}

async function freshDestination(ctx: SuiteContext): Promise<string> {
  const res = await ctx.api('POST', '/tenants/acme/destinations', { json: { type: 'webhook', topics: ['matrix.none'], config: { url: `${ctx.receiverUrl}/ok` } } })
  return res.body.id
}

/** DESIGN §3: who may call what. A denied call is 401 without credentials and 403 with the wrong ones. */
function expectedStatus(route: RouteSpec, principal: Principal): number {
  const success = route.operationId === 'upsertTenant' ? 200 : route.responses[0].status
  if (route.access === 'public' || principal === 'admin') return success
  if (principal === 'none') return 401
  if (route.access === 'admin') return 403
  if (route.access === 'token') return success
  return principal === 'own tenant' ? success : 403
}

async function tokenFor(ctx: SuiteContext, tenant: string): Promise<string> {
  if (tenant === 'acme' || tenant === 'globex') return ctx.tokens[tenant]
  return (await ctx.api('GET', `/tenants/${tenant}/token`)).body.token
}

/** The auth matrix: every route × admin, own tenant, other tenant, none, with the exact status. */
export function describeMatrix(ctx: SuiteContext): void {
  describe('auth matrix', () => {
    it('has a case for every route of the table', () => {
      expect(Object.keys(cases).sort()).toEqual(routes.map((r) => r.operationId).sort())
    })

    for (const route of routes) {
      for (const principal of principals) {
        const expected = expectedStatus(route, principal)
        it(`${route.method} ${route.path} as ${principal} -> ${expected}`, async () => {
          const request = await cases[route.operationId]!(ctx)
          const tenant = request.tenant ?? 'acme'
          const as =
            principal === 'none' ? null
            : principal === 'admin' ? 'admin'
            : principal === 'own tenant' ? await tokenFor(ctx, tenant)
            : ctx.tokens[tenant === 'globex' ? 'acme' : 'globex']
          const res = await ctx.api(route.method, request.path, { as, json: request.json })
          expect(res.status, JSON.stringify(res.body)).toBe(expected)
          if (expected === 401) expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
        })
      }
    }
  })
}
