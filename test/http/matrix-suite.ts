import { describe, expect, it } from 'vitest'
import { routes } from '../../src/http/routes.js'
import type { SuiteContext } from './support.js'

interface MatrixRequest {
  path: string
  json?: unknown
  /** The `{tenant_id}` of the path, whose token is "own tenant". Default acme. */
  tenant?: string
}

type Principal = 'admin' | 'own tenant' | 'other tenant' | 'none'
const principals: Principal[] = ['admin', 'own tenant', 'other tenant', 'none']

/**
 * Who gets what (DESIGN §3), stated here rather than read from src/http/routes.ts, so a route whose
 * access rule changes fails this suite. Columns: the admin key; a token of the path's tenant (acme
 * where the path names none); a token of another tenant; no credentials. A denied call is 401 without
 * credentials and 403 with the wrong ones. `PUT /tenants/{tenant_id}` updates an existing tenant: 200.
 */
const expectations: Record<string, [admin: number, own: number, other: number, none: number]> = {
  'GET /tenants':                                                                        [200, 403, 403, 401],
  'GET /tenants/{tenant_id}':                                                            [200, 200, 403, 401],
  'PUT /tenants/{tenant_id}':                                                            [200, 403, 403, 401],
  'DELETE /tenants/{tenant_id}':                                                         [200, 403, 403, 401],
  'GET /tenants/{tenant_id}/portal':                                                     [200, 403, 403, 401],
  'GET /tenants/{tenant_id}/token':                                                      [200, 403, 403, 401],
  // The code in the body is the credential: whatever Authorization says, a fresh code signs in.
  'POST /portal/sessions':                                                               [200, 200, 200, 200],
  'GET /tenants/{tenant_id}/destinations':                                               [200, 200, 403, 401],
  'POST /tenants/{tenant_id}/destinations':                                              [201, 201, 403, 401],
  'GET /tenants/{tenant_id}/destinations/{destination_id}':                              [200, 200, 403, 401],
  'PATCH /tenants/{tenant_id}/destinations/{destination_id}':                            [200, 200, 403, 401],
  'DELETE /tenants/{tenant_id}/destinations/{destination_id}':                           [200, 200, 403, 401],
  'PUT /tenants/{tenant_id}/destinations/{destination_id}/enable':                       [200, 200, 403, 401],
  'PUT /tenants/{tenant_id}/destinations/{destination_id}/disable':                      [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/destination-types':                                          [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/destination-types/{type}':                                   [200, 200, 403, 401],
  'GET /destination-types':                                                              [200, 200, 200, 401],
  'GET /destination-types/{type}':                                                       [200, 200, 200, 401],
  // The catalog: any token. This suite's engine has none, so a name is 404 once the caller is let in (topics-suite.ts has the 200s).
  'GET /topics':                                                                         [200, 200, 200, 401],
  'GET /topics/{name}':                                                                  [404, 404, 404, 401],
  'POST /publish':                                                                       [202, 403, 403, 401],
  'GET /events':                                                                         [200, 403, 403, 401],
  'GET /tenants/{tenant_id}/events':                                                     [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/events/{event_id}':                                          [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/events/{event_id}/deliveries':                               [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/destinations/{destination_id}/events':                       [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}':            [200, 200, 403, 401],
  'POST /tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}/retry':     [202, 202, 403, 401],
  'POST /tenants/{tenant_id}/destinations/{destination_id}/replay':                      [202, 202, 403, 401],
  'POST /tenants/{tenant_id}/events/expunge':                                            [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/expunges/{job_id}':                                          [200, 200, 403, 401],
  'GET /tenants/{tenant_id}/destinations/{destination_id}/replays/{job_id}':             [200, 200, 403, 401],
  'DELETE /tenants/{tenant_id}/destinations/{destination_id}/replays/{job_id}':          [200, 200, 403, 401],
  'POST /tenants/{tenant_id}/replay':                                                    [202, 202, 403, 401],
  // A token sees the metrics of its own tenant (the path names none), so another tenant's token is 200 too.
  'GET /metrics/events':                                                                 [200, 200, 200, 401],
  'GET /metrics/attempts':                                                               [200, 200, 200, 401],
  // The token in the path is the only credential: Authorization opens nothing (a link that is not one is 404 for all).
  'GET /payloads/{token}':                                                               [404, 404, 404, 404],
  'GET /healthz':                                                                        [200, 200, 200, 200],
  'GET /signing-keys':                                                                   [200, 200, 200, 200],
  'POST /signing-keys/rotate':                                                           [200, 403, 403, 401],
  'GET /openapi.json':                                                                   [200, 200, 200, 200],
}

let counter = 0
const unique = (prefix: string) => `${prefix}-${process.pid}-${++counter}`

/** A valid request per route; destructive routes get a fresh resource for every call. */
const cases: Record<string, (ctx: SuiteContext) => Promise<MatrixRequest>> = {
  'GET /tenants': async () => ({ path: '/tenants' }),
  'GET /topics': async () => ({ path: '/topics' }),
  'GET /topics/{name}': async () => ({ path: '/topics/order.created' }),
  'GET /tenants/{tenant_id}': async () => ({ path: '/tenants/acme' }),
  'PUT /tenants/{tenant_id}': async () => ({ path: '/tenants/acme', json: { metadata: { name: 'acme' } } }),
  'DELETE /tenants/{tenant_id}': async (ctx) => {
    const tenant = unique('matrix')
    await ctx.api('PUT', `/tenants/${tenant}`)
    return { path: `/tenants/${tenant}`, tenant }
  },
  'GET /tenants/{tenant_id}/portal': async () => ({ path: '/tenants/acme/portal?theme=dark' }),
  'GET /tenants/{tenant_id}/token': async () => ({ path: '/tenants/acme/token' }),
  'POST /portal/sessions': async (ctx) => {
    const redirect = await ctx.api('GET', '/tenants/acme/portal')
    return { path: '/portal/sessions', json: { code: new URL(redirect.body.redirect_url).searchParams.get('code') } }
  },
  'GET /tenants/{tenant_id}/destinations': async () => ({ path: '/tenants/acme/destinations?type=webhook' }),
  'POST /tenants/{tenant_id}/destinations': async (ctx) => ({ path: '/tenants/acme/destinations', json: { type: 'webhook', topics: ['matrix.none'], config: { url: `${ctx.receiverUrl}/ok` } } }),
  'GET /tenants/{tenant_id}/destinations/{destination_id}': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}` }),
  'PATCH /tenants/{tenant_id}/destinations/{destination_id}': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}`, json: { topics: ['order.created'] } }),
  'DELETE /tenants/{tenant_id}/destinations/{destination_id}': async (ctx) => ({ path: `/tenants/acme/destinations/${await freshDestination(ctx)}` }),
  'PUT /tenants/{tenant_id}/destinations/{destination_id}/enable': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/enable` }),
  'PUT /tenants/{tenant_id}/destinations/{destination_id}/disable': async (ctx) => ({ path: `/tenants/acme/destinations/${await freshDestination(ctx)}/disable` }),
  'GET /tenants/{tenant_id}/destination-types': async () => ({ path: '/tenants/acme/destination-types' }),
  'GET /tenants/{tenant_id}/destination-types/{type}': async () => ({ path: '/tenants/acme/destination-types/webhook' }),
  'GET /destination-types': async () => ({ path: '/destination-types' }),
  'GET /destination-types/{type}': async () => ({ path: '/destination-types/relay' }),
  'POST /publish': async () => ({ path: '/publish', json: { tenant_id: 'acme', topic: 'matrix.none', data: {} } }),
  'GET /events': async () => ({ path: '/events?limit=1' }),
  'GET /tenants/{tenant_id}/events': async () => ({ path: '/tenants/acme/events?status=success' }),
  'GET /tenants/{tenant_id}/events/{event_id}': async () => ({ path: '/tenants/acme/events/e1' }),
  'GET /tenants/{tenant_id}/events/{event_id}/deliveries': async () => ({ path: '/tenants/acme/events/e1/deliveries' }),
  'GET /tenants/{tenant_id}/destinations/{destination_id}/events': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events` }),
  'GET /tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events/e1` }),
  'POST /tenants/{tenant_id}/destinations/{destination_id}/events/{event_id}/retry': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/events/e1/retry` }),
  'POST /tenants/{tenant_id}/destinations/{destination_id}/replay': async (ctx) => ({
    path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/replay`,
    json: { since: '2024-01-01T00:00:00Z', until: '2024-01-02T00:00:00Z' },
  }),
  'GET /tenants/{tenant_id}/destinations/{destination_id}/replays/{job_id}': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/replays/${await freshReplay(ctx)}` }),
  'DELETE /tenants/{tenant_id}/destinations/{destination_id}/replays/{job_id}': async (ctx) => ({ path: `/tenants/acme/destinations/${ctx.destinations.acmeOk}/replays/${await freshReplay(ctx)}` }),
  // Ids that name no event: answered per id (not_found), nothing erased.
  'POST /tenants/{tenant_id}/events/expunge': async () => ({ path: '/tenants/acme/events/expunge', json: { ids: ['matrix-no-such-event'] } }),
  'GET /tenants/{tenant_id}/expunges/{job_id}': async (ctx) => {
    const res = await ctx.api('POST', '/tenants/acme/events/expunge', { json: { from: '2024-01-01T00:00:00Z', to: '2024-01-02T00:00:00Z' } })
    return { path: `/tenants/acme/expunges/${res.body.id}` }
  },
  'POST /tenants/{tenant_id}/replay': async (ctx) => ({ path: '/tenants/acme/replay', json: { since: '2024-01-01T00:00:00Z', until: '2024-01-02T00:00:00Z', destination_id: [ctx.destinations.acmeOk] } }),
  'GET /metrics/events': async () => ({ path: '/metrics/events?time[start]=2024-01-01T00:00:00Z&time[end]=2024-01-02T00:00:00Z&granularity=1h&measures[]=count' }),
  'GET /metrics/attempts': async () => ({ path: '/metrics/attempts?time[start]=2024-01-01T00:00:00Z&time[end]=2024-01-02T00:00:00Z&measures[0]=count&dimensions[0]=status' }),
  'GET /payloads/{token}': async () => ({ path: '/payloads/WyJhY21lIiwiZTEiLCJkMSIsOTk5OTk5OTk5OV0.bm90LWEtbWFj' }),
  'GET /healthz': async () => ({ path: '/healthz' }),
  'GET /signing-keys': async () => ({ path: '/signing-keys' }),
  'POST /signing-keys/rotate': async () => ({ path: '/signing-keys/rotate', json: { overlap: '1h' } }),
  'GET /openapi.json': async () => ({ path: '/openapi.json' }),
}

async function freshDestination(ctx: SuiteContext): Promise<string> {
  const res = await ctx.api('POST', '/tenants/acme/destinations', { json: { type: 'webhook', topics: ['matrix.none'], config: { url: `${ctx.receiverUrl}/ok` } } })
  return res.body.id
}

/** A replay job of acme's destination over a range with nothing in it (it completes at once, and stays readable). */
async function freshReplay(ctx: SuiteContext): Promise<string> {
  const res = await ctx.api('POST', `/tenants/acme/destinations/${ctx.destinations.acmeOk}/replay`, { json: { since: '2024-01-01T00:00:00Z', until: '2024-01-02T00:00:00Z' } })
  return res.body.id
}

async function tokenFor(ctx: SuiteContext, tenant: string): Promise<string> {
  if (tenant === 'acme' || tenant === 'globex') return ctx.tokens[tenant]
  return (await ctx.api('GET', `/tenants/${tenant}/token`)).body.token
}

/** The auth matrix: every route × admin, own tenant, other tenant, none, with the exact status this file expects. */
export function describeMatrix(ctx: SuiteContext): void {
  describe('auth matrix', () => {
    it('states an expectation and a request for exactly the routes of the route table', () => {
      const served = routes.map((r) => `${r.method} ${r.path}`).sort()
      expect(served).toEqual(Object.keys(expectations).sort())
      expect(served).toEqual(Object.keys(cases).sort())
    })

    it('documents in the OpenAPI document who may call each route, as the server enforces it', async () => {
      const document = (await ctx.api('GET', '/openapi.json', { as: null })).body as { paths: Record<string, Record<string, { security: unknown; responses: Record<string, unknown> }>> }
      const adminKey = { adminKey: [] }
      const tenantToken = { tenantToken: [] }
      for (const [route, [, own, other, none]] of Object.entries(expectations)) {
        const [method, path] = route.split(' ') as [string, string]
        const operation = document.paths[path]![method.toLowerCase()]!
        const security = none !== 401 ? [] : own === 403 ? [adminKey] : [adminKey, tenantToken]
        expect(operation.security, route).toEqual(security)
        if (none === 401) expect(operation.responses, route).toHaveProperty('401')
        if (own === 403 || other === 403) expect(operation.responses, route).toHaveProperty('403')
      }
    })

    for (const [route, statuses] of Object.entries(expectations)) {
      const [method, path] = route.split(' ') as [string, string]
      principals.forEach((principal, column) => {
        const expected = statuses[column]!
        it(`${method} ${path} as ${principal} -> ${expected}`, async () => {
          const request = await cases[route]!(ctx)
          const tenant = request.tenant ?? 'acme'
          const as =
            principal === 'none' ? null
            : principal === 'admin' ? 'admin'
            : principal === 'own tenant' ? await tokenFor(ctx, tenant)
            : ctx.tokens[tenant === 'globex' ? 'acme' : 'globex']
          const res = await ctx.api(method, request.path, { as, json: request.json })
          expect(res.status, JSON.stringify(res.body)).toBe(expected)
          if (expected === 401) expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/)
        })
      })
    }
  })
}
