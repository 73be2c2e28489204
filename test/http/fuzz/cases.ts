import fc from 'fast-check'
import type * as v from 'valibot'
import type { RouteSpec } from '../../../src/http/routes.js'
import { bodyShape } from '../../../src/model/common.js'
import {
  encodeUrlValue,
  fieldJson,
  fixture,
  hostileJson,
  hostileKeys,
  hostileUrlValue,
  nestedJson,
  oddQueryNames,
  queryPools,
  queryValue,
  type UrlValue,
} from './values.js'

// Fuzz cases derived from the route table: for every route, cases that keep the request valid except
// for one thing (a path parameter, a query parameter, a body field, the content type, the body bytes,
// the method, the credentials, the path's shape), plus stray requests no route serves.

/** Who the request claims to be; the suite turns it into an Authorization header. */
export type Auth = 'admin' | 'acme' | 'globex' | 'none' | 'garbage' | 'basic' | 'huge' | 'lowercase'

export interface FuzzCase {
  /** What this case varies, e.g. `createDestination body.metadata`: coverage and reports. */
  target: string
  method: string
  /** Path (percent-encoded) and query, from the host on: `/api/v1/tenants/acme?limit=5`. */
  url: string
  headers: Record<string, string>
  body?: string | Uint8Array
  auth: Auth
  /** Body fields (JSON text) a successful answer must echo exactly, e.g. a created tenant's metadata. */
  echoes?: Record<string, string>
}

export interface CaseOptions {
  /** Include TRACE and CONNECT-like methods the Fetch Request constructor refuses (only over a real socket). */
  forbiddenMethods: boolean
  /** Paths only under `/api/v1` (a host mount serves nothing else as the API). */
  prefixedOnly: boolean
  /** maxBodyBytes of the engine under test: bodies just under and over it are sent. */
  maxBodyBytes: number
}

export const mutatingMethods = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const apiPrefix = '/api/v1'

type Entries = Record<string, v.GenericSchema & { type: string; wrapped?: unknown }>
const entriesOf = (schema: v.GenericSchema): Entries => (schema as unknown as { entries?: Entries }).entries ?? {}

/** The fields of a route's body as the route table declares them (the strict object inside objectBody). */
export function bodyFields(route: RouteSpec): string[] {
  return route.body ? Object.keys(entriesOf(bodyShape(route.body.schema))) : []
}

/** Every label a full run must cover: each path parameter, query parameter and body field of each route. */
export function routeTargets(route: RouteSpec): string[] {
  return [
    ...Object.keys(route.params).map((name) => `${route.operationId} param.${name}`),
    ...Object.keys(entriesOf(route.query)).map((name) => `${route.operationId} query.${name}`),
    ...bodyFields(route).map((name) => `${route.operationId} body.${name}`),
  ]
}

/** Path parameter values that exist after seeding (or plainly do not), by method: deletes aim at throwaway ids. */
function validParam(name: string, method: string): fc.Arbitrary<string> {
  const deleting = method === 'DELETE'
  switch (name) {
    case 'tenant_id':
      return deleting ? fc.constantFrom('ghost', 'scratch') : fc.constantFrom('acme', 'acme', 'acme', 'globex', 'ghost', 'scratch')
    case 'destination_id':
      return deleting ? fc.constantFrom('ghost', 'scratch-d') : fc.constantFrom(...fixture.destinations, 'ghost', 'scratch-d')
    case 'event_id':
      return fc.constantFrom(...fixture.events, 'ghost')
    case 'type':
      return fc.constantFrom('webhook', 'relay', 'cloudx_s3', 'amqp_broker')
    default:
      return fc.constant('x')
  }
}

/** A valid body per route (field → JSON text), the starting point each body case changes one thing of. */
function validBody(route: RouteSpec): fc.Arbitrary<Record<string, string>> {
  switch (route.operationId) {
    case 'upsertTenant':
      return fc.constantFrom<Record<string, string>>({}, { metadata: '{"plan":"pro"}' })
    case 'createDestination':
      return fc.constantFrom<Record<string, string>>(
        // Topics no published event has, so the deliveries table does not grow with every destination made.
        { type: '"webhook"', topics: '["never.published"]', config: JSON.stringify({ url: fixture.deadUrl }) },
        { id: '"scratch-d"', type: '"webhook"', topics: '["never.*"]', config: JSON.stringify({ url: fixture.deadUrl }), metadata: '{"k":"v"}' },
        { type: '"relay"', topics: '["a.*"]', credentials: '{"token":"t0ken"}' },
      )
    case 'updateDestination':
      return fc.constantFrom<Record<string, string>>({ metadata: '{"k":"v"}' }, { topics: '["order.*"]' }, { filter: 'null' })
    case 'publish':
      return fc.constantFrom<Record<string, string>>(
        { tenant_id: '"acme"', topic: '"order.created"', data: '{"n":1}', eligible_for_retry: 'false' },
        { tenant_id: '"acme"', topic: '"order.created"', data: '{}', metadata: '{"m":"1"}', time: '"2024-01-04T00:00:00Z"' },
      )
    default:
      return fc.constant({})
  }
}

/** A valid query per route: the metrics routes require a time range and measures. */
function validQuery(route: RouteSpec): [string, UrlValue][] {
  if (route.queryStyle !== 'deepObject') return []
  return [
    ['time[start]', { text: '2024-01-01T00:00:00Z' }],
    ['time[end]', { text: '2024-01-08T00:00:00Z' }],
    ['measures[0]', { text: 'count' }],
  ]
}

const pools = queryPools()

/** One to three query pairs for `name`, in every notation the query parser reads. */
function queryPairs(route: RouteSpec, name: string): fc.Arbitrary<[string, UrlValue][]> {
  const schema = entriesOf(route.query)[name]
  const inner = (schema?.type === 'optional' ? (schema.wrapped as v.GenericSchema) : schema) ?? schema
  const keys = inner ? Object.keys(entriesOf(inner as v.GenericSchema)) : []
  const nested = route.queryStyle === 'deepObject'
  const spelled = fc.constantFrom(
    name,
    name,
    `${name}[]`,
    `${name}[0]`,
    `${name}[1]`,
    `${name}[999999]`,
    `${name}[x]`,
    ...(nested ? keys.flatMap((k) => [`${name}[${k}]`, `${name}[${k}]`, `${name}[${k}][]`, `${name}[${k}][0]`, `${name}[${k}][x]`]) : []),
  )
  return fc
    .array(spelled, { minLength: 1, maxLength: 3 })
    .chain((names) => fc.tuple(...names.map((spelling) => queryValue(spelling, pools).map((value): [string, UrlValue] => [spelling, value]))))
}

function queryString(pairs: [string, UrlValue][]): string {
  if (pairs.length === 0) return ''
  return `?${pairs.map(([name, value]) => `${encodeUrlValue({ text: name })}=${encodeUrlValue(value)}`).join('&')}`
}

/** Replace `{name}` segments of a route path with (encoded) values. */
function fillPath(route: RouteSpec, params: Record<string, UrlValue>): string {
  return route.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeUrlValue(params[name] ?? { text: 'x' }))
}

function bodyText(fields: Record<string, string>): string {
  return `{${Object.entries(fields).map(([k, value]) => `${JSON.stringify(k)}:${value}`).join(',')}}`
}

/** Raw bodies: empty, broken JSON, not UTF-8, a BOM, duplicate keys, sizes around the limit, deep nesting. */
function rawBodies(maxBodyBytes: number): fc.Arbitrary<string | Uint8Array> {
  return fc.oneof(
    fc.constantFrom<string | Uint8Array>(
      '', ' ', '\n', 'null', '[]', '{}', '"x"', '1', 'true', '{', '}', '{"a":1}garbage', '\uFEFF{}', '{"a":1,"a":2}', 'NaN', '1e400', "{'a':1}",
      '{"metadata":{}}\u0000', new Uint8Array([0xff, 0xfe, 0x7b, 0x7d]), new Uint8Array([0x7b, 0x22, 0xc0, 0x80, 0x22, 0x3a, 0x31, 0x7d]),
      new Uint8Array([0x22, 0xed, 0xa0, 0x80, 0x22]), new Uint8Array([0x1f, 0x8b, 0x08, 0x00]),
    ),
    fc.constantFrom(10, 100_000).map((levels) => nestedJson(levels, 'array')),
    fc.constantFrom(maxBodyBytes - 64, maxBodyBytes + 1).map((size) => `{"metadata":{"k":"${'x'.repeat(Math.max(0, size - 20))}"}}`),
  )
}

const contentTypes = [
  undefined, 'text/plain', 'application/json; charset=latin1', 'application/JSON', 'application/vnd.api+json', 'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x', 'application/json, text/plain', '*/*', 'application/jsonx', '', 'application/json;;;', 'application/merge-patch+json',
] as const

// No DELETE: on a route's path with the seeded ids it would delete the fixture (each DELETE route is fuzzed itself).
const otherMethods = ['GET', 'POST', 'PUT', 'PATCH', 'HEAD', 'OPTIONS', 'QUERY', 'PROPFIND', 'SEARCH', 'FOO', 'M-SEARCH', 'patch', 'Get'] as const

const pathShapes = ['trailing slash', 'double slash', 'unprefixed', 'upper case', 'extra segment', 'short', 'encoded slash', 'api v2', 'dot segment'] as const

function reshape(path: string, shape: (typeof pathShapes)[number], prefixedOnly: boolean): string {
  const prefixed = (p: string) => `${apiPrefix}${p}`
  switch (shape) {
    case 'trailing slash':
      return prefixed(`${path}/`)
    case 'double slash':
      return prefixed(path.replace('/', '//'))
    case 'unprefixed':
      return prefixedOnly ? prefixed(path) : path
    case 'upper case':
      return prefixed(path.toUpperCase())
    case 'extra segment':
      return prefixed(`${path}/extra`)
    case 'short':
      return prefixed(path.split('/').slice(0, -1).join('/') || '/')
    case 'encoded slash':
      // Within the path below the prefix: `/api/v1%2Fpublish` is outside the API, a host's own 404.
      return prefixed(path.replace(/(.)\/([^/]*)$/, '$1%2F$2'))
    case 'api v2':
      return prefixedOnly ? prefixed(path) : `/api/v2${path}`
    case 'dot segment':
      return prefixed(`${path}/../${path.split('/').at(-1)}`)
  }
}

type Target =
  | { kind: 'valid' | 'query-extra' | 'content-type' | 'raw-body' | 'whole-body' | 'extra-field' | 'missing-field' | 'method' | 'auth' | 'path' }
  | { kind: 'param' | 'query' | 'body'; name: string }

function targetsOf(route: RouteSpec): Target[] {
  const targets: Target[] = [
    { kind: 'valid' },
    { kind: 'valid' },
    ...Object.keys(route.params).map((name) => ({ kind: 'param' as const, name })),
    ...Object.keys(entriesOf(route.query)).map((name) => ({ kind: 'query' as const, name })),
    { kind: 'query-extra' },
    { kind: 'method' },
    { kind: 'auth' },
    { kind: 'path' },
  ]
  if (route.body) {
    targets.push(...bodyFields(route).flatMap((name) => [{ kind: 'body' as const, name }, { kind: 'body' as const, name }]))
    targets.push({ kind: 'content-type' }, { kind: 'raw-body' }, { kind: 'whole-body' }, { kind: 'extra-field' }, { kind: 'missing-field' })
  }
  return targets
}

function label(route: RouteSpec, target: Target): string {
  if ('name' in target) return `${route.operationId} ${target.kind}.${target.name}`
  return `${route.operationId} ${target.kind}`
}

/** The cases of one route: a valid request with one thing changed (or none). */
function routeCases(route: RouteSpec, options: CaseOptions): fc.Arbitrary<FuzzCase> {
  const paramNames = Object.keys(route.params)
  return fc.constantFrom(...targetsOf(route)).chain((target) => {
    const params = fc.record(
      Object.fromEntries(
        paramNames.map((name) => [
          name,
          target.kind === 'param' && target.name === name ? hostileUrlValue : validParam(name, route.method).map((t): UrlValue => ({ text: t })),
        ]),
      ) as Record<string, fc.Arbitrary<UrlValue>>,
    )
    const baseQuery = validQuery(route)
    const query: fc.Arbitrary<[string, UrlValue][]> =
      target.kind === 'query'
        ? queryPairs(route, target.name).map((pairs) => [...baseQuery.filter(([n]) => n !== target.name && !n.startsWith(`${target.name}[`)), ...pairs])
        : target.kind === 'query-extra'
          ? fc
              .tuple(fc.constantFrom(...oddQueryNames), hostileUrlValue, fc.constantFrom(1, 1, 2, 3000))
              // Thousands of repeats of a short name: the query parser must stay linear in them.
              .map(([name, value, times]): [string, UrlValue][] => [
                ...baseQuery,
                ...Array.from({ length: name.length > 50 ? 1 : times }, (): [string, UrlValue] => [name, value]),
              ])
          : fc.constant(baseQuery)
    const body = route.body ? bodyCase(route, target, options) : fc.constant<BodyPart>({ headers: {} })
    const method =
      target.kind === 'method'
        ? fc.constantFrom(...otherMethods, ...(options.forbiddenMethods ? ['TRACE', 'TRACK'] : [])).filter((m) => m !== route.method)
        : fc.constant(route.method)
    const auth: fc.Arbitrary<Auth> =
      target.kind === 'auth'
        ? fc.constantFrom('none', 'garbage', 'basic', 'huge', 'lowercase', 'globex', 'acme')
        : route.access === 'tenant' || route.access === 'token'
          ? fc.constantFrom<Auth>('admin', 'admin', 'admin', 'acme')
          : fc.constant('admin')
    const shape = target.kind === 'path' ? fc.constantFrom(...pathShapes) : fc.constant(undefined)
    return fc.record({ params, query, body, method, auth, shape }).map(({ params, query, body, method, auth, shape }): FuzzCase => {
      const path = fillPath(route, params)
      const url = (shape ? reshape(path, shape, options.prefixedOnly) : `${apiPrefix}${path}`) + queryString(query)
      // Another method reaches another route (or none): what it answers is not this route's echo.
      const echoes = method === route.method ? body.echoes : undefined
      return { target: label(route, target), method, url, auth, ...body, echoes }
    })
  })
}

type BodyPart = Pick<FuzzCase, 'headers' | 'body' | 'echoes'>

const json = { 'content-type': 'application/json' }

/** The body of a route case: the valid body with `target` applied to it. */
function bodyCase(route: RouteSpec, target: Target, options: CaseOptions): fc.Arbitrary<BodyPart> {
  const fields = bodyFields(route)
  return validBody(route).chain((valid): fc.Arbitrary<BodyPart> => {
    const echo = (body: Record<string, string>): BodyPart => ({ headers: json, body: bodyText(body), echoes: echoed(route, body) })
    switch (target.kind) {
      case 'body':
        return (fieldJson[target.name] ?? hostileJson).map((value) => echo({ ...valid, [target.name]: value }))
      case 'extra-field':
        return fc.tuple(fc.constantFrom(...hostileKeys, 'target', 'target_url', 'disabled_at', 'created_at'), hostileJson).map(([key, value]) => echo({ ...valid, [key]: value }))
      case 'missing-field':
        return fc.constantFrom(...fields).map((name) => {
          const { [name]: _gone, ...rest } = valid
          return echo(rest)
        })
      case 'whole-body':
        return hostileJson.map((body) => ({ headers: json, body }))
      case 'raw-body':
        return rawBodies(options.maxBodyBytes).map((body) => ({ headers: json, body }))
      case 'content-type':
        return fc.constantFrom(...contentTypes).map((type): BodyPart => ({ headers: type === undefined ? {} : { 'content-type': type }, body: bodyText(valid) }))
      default:
        return fc.constant(echo(valid))
    }
  })
}

/** Stored fields a successful create echoes as sent: every key kept, nothing rewritten. */
function echoed(route: RouteSpec, body: Record<string, string>): Record<string, string> | undefined {
  const fields = route.operationId === 'upsertTenant' || route.operationId === 'createDestination' ? ['metadata', 'delivery_metadata'] : []
  const out = Object.fromEntries(fields.filter((f) => body[f] !== undefined && body[f] !== 'null').map((f) => [f, body[f]!]))
  return Object.keys(out).length > 0 ? out : undefined
}

/** Requests no route serves: the root, unknown paths, odd prefixes, huge paths. */
function strayCases(options: CaseOptions): fc.Arbitrary<FuzzCase> {
  const paths = fc.oneof(
    fc.constantFrom('/', '/api', '/api/v1', '/api/v1/', '/api/v1//', '/api/v1/nope', '/api/v1/tenants/acme/nope/x', '/api/v1/%', '/api/v1/%ZZ', '/api/v1/tenants/%ED%A0%80'),
    fc.constantFrom(4000, 20_000).map((n) => `${apiPrefix}/tenants/${'a'.repeat(n)}`),
    hostileUrlValue.map((value) => `${apiPrefix}/${encodeUrlValue(value)}`),
  )
  return fc
    .record({ path: paths, method: fc.constantFrom('GET', 'POST', 'DELETE', 'OPTIONS', 'HEAD', 'FOO') })
    .map(({ path, method }): FuzzCase => ({ target: 'stray path', method, url: options.prefixedOnly && !path.startsWith(apiPrefix) ? `${apiPrefix}${path}` : path, auth: 'admin', headers: {} }))
}

/**
 * Cases for every route of `routes`, each valid but for one thing, and some stray requests.
 *
 * @example
 * fc.sample(fuzzCases(routes, { forbiddenMethods: false, prefixedOnly: false, maxBodyBytes: 65536 }), 3)
 */
export function fuzzCases(routes: RouteSpec[], options: CaseOptions): fc.Arbitrary<FuzzCase> {
  return fc.oneof(
    // Each route weighs as many things as it has to vary: a body route's fields get their share.
    { weight: 30, arbitrary: fc.oneof(...routes.map((route) => ({ weight: targetsOf(route).length, arbitrary: routeCases(route, options) }))) },
    { weight: 1, arbitrary: strayCases(options) },
  )
}

/**
 * What only a real socket can send, for the host mounts: TRACE, a body on a method no route serves
 * without a Content-Type, Content-Encodings the body does not decode with, a GET with a body.
 */
export function socketCases(): fc.Arbitrary<FuzzCase> {
  const body = '{"metadata":{"k":"v"}}'
  return fc.oneof(
    fc.constantFrom('TRACE', 'QUERY', 'PROPFIND', 'SEARCH', 'M-SEARCH', 'PURGE', 'LINK').chain((method) =>
      fc.record({
        url: fc.constantFrom(`${apiPrefix}/tenants/acme`, `${apiPrefix}/tenants`, `${apiPrefix}/nope`),
        headers: fc.constantFrom<Record<string, string>>({}, json, { 'content-type': 'text/plain' }),
        body: fc.constantFrom(undefined, body),
      }).map((r): FuzzCase => ({ target: `socket ${method}`, method, auth: 'admin', ...r })),
    ),
    fc
      .record({
        encoding: fc.constantFrom('gzip', 'deflate', 'br', 'x-gzip', 'identity', 'compress', 'nope', 'gzip, gzip'),
        method: fc.constantFrom('PUT', 'POST', 'PATCH'),
        bytes: fc.constantFrom<string | Uint8Array>(body, new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0x00]), 'garbage'),
      })
      .map(({ encoding, method, bytes }): FuzzCase => ({
        target: `socket content-encoding ${encoding}`,
        method,
        url: method === 'PUT' ? `${apiPrefix}/tenants/acme` : method === 'POST' ? `${apiPrefix}/publish` : `${apiPrefix}/tenants/acme/destinations/hook`,
        auth: 'admin',
        headers: { ...json, 'content-encoding': encoding },
        body: bytes,
      })),
    fc.constantFrom(`${apiPrefix}/tenants/acme`, `${apiPrefix}/events?limit=1`).map((url): FuzzCase => ({ target: 'socket GET with a body', method: 'GET', url, auth: 'admin', headers: json, body })),
  )
}

/** A case as a report line: method, URL and body (shortened). */
export function describeCase(c: FuzzCase): string {
  const body = c.body === undefined ? '' : typeof c.body === 'string' ? c.body : `bytes ${Buffer.from(c.body).toString('hex')}`
  const short = (s: string) => (s.length > 400 ? `${s.slice(0, 400)}… (${s.length} chars)` : s)
  return `[${c.target}] ${c.method} ${short(c.url)} auth=${c.auth} headers=${JSON.stringify(c.headers)}${body ? ` body=${short(JSON.stringify(body))}` : ''}`
}
