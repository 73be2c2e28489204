import fc from 'fast-check'
import { encodeCursor } from '../../../src/model/pagination.js'

// The hostile and edge values the fuzz cases are made of. Query and path values are plain strings,
// percent-encoded (as UTF-8) when the URL is built, or raw pieces put into the URL as they are.
// JSON values are JSON text, so a 5,000-level nesting never goes through a recursive stringify.

/** Ids the suite seeds (see suite.ts); cases mostly aim at them so that requests reach storage. */
export const fixture = {
  tenants: ['acme', 'globex'],
  /** acme's destinations; globex has `hook` too. `off` is disabled. */
  destinations: ['hook', 'relay-1', 'off'],
  events: ['e1', 'e2', 'e3'],
  /** Event times of e1..e3 (ms), for cursors the server itself could have written. */
  eventTimes: [Date.parse('2024-01-01T00:00:00Z'), Date.parse('2024-01-02T00:00:00Z'), Date.parse('2024-01-03T00:00:00Z')],
  /** A webhook target nothing listens on: seeded attempts fail fast and are final. */
  deadUrl: 'http://127.0.0.1:9/hook',
} as const

/** Percent-encode as UTF-8 every character outside the unreserved set (a lone surrogate becomes U+FFFD). */
export function percentEncode(text: string): string {
  let out = ''
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte)
    out += /[A-Za-z0-9_.~-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`
  }
  return out
}

/** A value for a URL: plain text (encoded later) or a raw, possibly malformed, piece. */
export type UrlValue = { text: string } | { raw: string }

export const encodeUrlValue = (value: UrlValue) => ('raw' in value ? value.raw : percentEncode(value.text))

const text = (values: readonly string[]) => fc.constantFrom(...values).map((t): UrlValue => ({ text: t }))
const raw = (values: readonly string[]) => fc.constantFrom(...values).map((r): UrlValue => ({ raw: r }))

/** Strings any parameter may be sent: empty, control and prototype names, sizes around the limits, injection-looking text. */
export const hostileTexts = [
  '', ' ', '\u0000', 'a\u0000b', '\t', '\n', '\u2028', '\uFEFF', '\u{1F600}', 'é', 'Ⅻ', '１',
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf',
  'null', 'undefined', 'true', 'NaN', 'Infinity', '-0', '0', '-1', '1e309', '0x10', '[]', '{}', '[object Object]',
  "' or '1'='1", '"; drop table tenants; --', '$gt', '{{x}}', '${x}', '%s%n', '..', '.', '/', '\\', '*', '*.*', '#', '?', '&', '=',
  'a'.repeat(128), 'a'.repeat(129), 'a'.repeat(256), 'a'.repeat(4096),
] as const

/** URL pieces sent without encoding: broken percent-escapes, overlong and surrogate UTF-8, encoded separators. */
export const rawUrlPieces = ['%', '%Z', '%ZZ', '%0', '%00', '%FF', '%C0%80', '%ED%A0%80', '%F4%90%80%80', '%2F', '%2e%2e', '%25', '+', '%20', ';', ','] as const

export const hostileUrlValue: fc.Arbitrary<UrlValue> = fc.oneof(
  { weight: 4, arbitrary: text(hostileTexts) },
  { weight: 2, arbitrary: raw(rawUrlPieces) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 24 }).map((t): UrlValue => ({ text: t })) },
  { weight: 1, arbitrary: fc.stringMatching(/^[A-Za-z0-9_.:-]{1,130}$/).map((t): UrlValue => ({ text: t })) },
)

export const dates = [
  '2024-01-01T00:00:00Z', '2024-01-02T00:00:00.000Z', '2024-01-01T00:00:00+14:00', '2024-01-01T00:00:00-2359', '2024-01-01T00:00Z',
  '0001-01-01T00:00:00Z', '0001-01-01T00:30:00+01:00', '0000-12-31T23:59:59Z', '0050-06-15T12:00:00Z', '0099-12-31T23:59:59.999Z',
  '9999-12-31T23:59:59.999Z', '9999-12-31T23:30:00-01:00', '10000-01-01T00:00:00Z', '+275760-09-13T00:00:00Z', '-000001-01-01T00:00:00Z',
  '2024-02-30T00:00:00Z', '2024-13-01T00:00:00Z', '2024-01-01T24:00:00Z', '2024-01-01T23:59:60Z', '2024-01-01T00:00:00.1234567890123Z',
  '2024-01-01', '2024-01-01 00:00:00', 'yesterday', '1704067200000', '',
] as const

/** Cursors: real ones (as the server writes them) and forged ones a client could send instead. */
export function cursors(): string[] {
  const b64 = (json: string) => Buffer.from(json).toString('base64url')
  const [t1, t2] = fixture.eventTimes
  return [
    encodeCursor('events', 'desc', [t2, 'e2', 'hook']),
    encodeCursor('events', 'asc', [t1, 'e1', 'hook']),
    encodeCursor('tenants', 'desc', [Date.parse('2030-01-01T00:00:00Z'), 'acme']),
    encodeCursor('tenants', 'asc', [0, 'acme']),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [1e20, 'e1', 'hook'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [-1e16, 'e1', 'hook'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [1.5, 'e1', 'hook'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [t1, '\u0000', 'hook'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [t1, '\ud800', 'hook'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [t1, 'e1'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [t1, 'e1', 'hook', 'x'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [t1, 5, 'hook'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: [t1, 'a'.repeat(5000), 'hook'] })),
    b64(JSON.stringify({ l: 'tenants', d: 'desc', p: [t1, 'acme', 'x'] })),
    b64(JSON.stringify({ l: 'tenants', d: 'sideways', p: [t1, 'acme'] })),
    b64(JSON.stringify({ l: 'events', d: 'desc', p: 'e1' })),
    b64(JSON.stringify({ l: 'events', d: 'desc' })),
    b64(JSON.stringify({ l: 5, d: 'desc', p: [t1, 'e1', 'hook'] })),
    b64('{"__proto__":{"l":"events","d":"desc","p":[0,"e1","hook"]}}'),
    b64('null'), b64('[]'), b64('"x"'), b64('1'), b64('{'), b64('\u0000'),
    '!!!', '====', 'e30', '',
  ]
}

/** Values by query parameter name, for names the route table uses; others get hostile values only. */
export function queryPools(): Record<string, readonly string[]> {
  const ids = ['acme', 'globex', 'ghost', 'hook', 'e1', '', '\u0000', 'a'.repeat(129)]
  const topics = ['order.created', '*', 'order.*', '*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*.*', 'a.'.repeat(40) + 'a', 'a'.repeat(256), ' a', '\u0000', 'x\u0000y']
  return {
    limit: ['1', '2', '20', '100', '1000', '0', '-1', '101', '1001', '1.5', '1e2', '0x10', ' 1', '99999999999999999999', 'NaN', ''],
    order_by: ['created_at', 'time', 'id', ''],
    dir: ['asc', 'desc', 'ASC', 'up', ''],
    next: cursors(),
    prev: cursors(),
    'created_at[gte]': dates,
    'created_at[lte]': dates,
    'time[gte]': dates,
    'time[lte]': dates,
    tenant_id: ids,
    destination_id: ids,
    topic: topics,
    topics,
    type: ['webhook', 'relay', 'cloudz_pubsub', 'nope', 'WEBHOOK', ''],
    status: ['success', 'failed', 'pending', ''],
    theme: ['light', 'dark', 'blue', ''],
    details: ['1', 'true', '0', 'yes', ''],
    granularity: ['1h', '1d', '1M', '30s', '0h', '61s', '13M', '1y', '1H', '', '01h'],
    measures: ['count', 'rate', 'error_rate', 'successful_count', 'nope', ''],
    dimensions: ['tenant_id', 'topic', 'destination_id', 'status', 'code', 'manual', 'nope', ''],
    start: ['2024-01-01T00:00:00Z', ...dates],
    end: ['2024-01-08T00:00:00Z', ...dates],
  }
}

/** A query value for `name`: its pool (when it has one) or anything hostile. */
export function queryValue(name: string, pools: Record<string, readonly string[]>): fc.Arbitrary<UrlValue> {
  const pool = pools[name.replace(/^.*\[(\w+)\]$/, '$1')] ?? pools[name]
  return pool ? fc.oneof({ weight: 3, arbitrary: text(pool) }, { weight: 1, arbitrary: hostileUrlValue }) : hostileUrlValue
}

/** Query names no route has, or that break the bracket notation: prototype names, empty, unbalanced, huge indexes. */
export const oddQueryNames = [
  '__proto__', 'constructor', 'toString', 'hasOwnProperty', 'prototype', '', '[', ']', '[]', 'a[', 'a]', 'a[b', 'a[]]',
  'limit[]', 'limit[0]', 'limit[x]', '__proto__[x]', 'constructor[prototype]', 'x[__proto__]', 'time[start][x]', 'time[]',
  'measures[99999999]', 'measures[1000000]', 'measures[-1]', 'filters[__proto__]', 'filters[]', 'filters[topic][x]', 'a'.repeat(2000), '\u0000', 'é',
] as const

// ---- JSON ----

const json = (value: unknown) => JSON.stringify(value)

/** Strings a JSON field may carry: what storage refuses (NUL, lone surrogates), prototype names, sizes. */
const hostileJsonStrings = [
  '', ' ', '\u0000', 'a\u0000', '\ud800', '\udc00', 'x\ud83d', '\ud83d\ude00', '\uFFFF', '\u2028', '\uFEFF',
  '__proto__', 'constructor', 'prototype', '*', 'order.created', '$gt', '{{x}}', 'a'.repeat(300), 'a'.repeat(70_000),
  '2024-01-01T00:00:00Z', '0000-01-01T00:00:00Z', '0050-01-01T00:00:00Z', '10000-01-01T00:00:00Z',
] as const

/** Object keys: the same, plus keys that read as paths or operators. */
export const hostileKeys = [...hostileJsonStrings.filter((s) => s.length < 1000), '0', 'a.b', 'a[0]', '$or', '$not', 'hasOwnProperty', 'toString'] as const

const leafJson: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...hostileJsonStrings).map(json) },
  { weight: 2, arbitrary: fc.constantFrom('null', 'true', 'false', '0', '-0', '1e308', '-1e308', '5e-324', '1e400', '9007199254740993', '0.1', '[]', '{}') },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 12 }).map(json) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map(json) },
)

/** `levels` objects or arrays nested in one another around `inner`, as text (`{}` is one level). */
export function nestedJson(levels: number, kind: 'object' | 'array' = 'object', inner = '1'): string {
  if (levels <= 0) return inner
  const open = kind === 'object' ? '{"a":' : '['
  const close = kind === 'object' ? '}' : ']'
  return open.repeat(levels) + inner + close.repeat(levels)
}

const objectJson = (entries: [key: string, value: string][]) => `{${entries.map(([k, v]) => `${json(k)}:${v}`).join(',')}}`

/** Any JSON text a field may be sent: leaves, small objects with hostile keys, arrays, deep nesting. */
export const hostileJson: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: leafJson },
  { weight: 3, arbitrary: fc.array(fc.tuple(fc.constantFrom(...hostileKeys), leafJson), { maxLength: 3 }).map(objectJson) },
  { weight: 1, arbitrary: fc.array(leafJson, { maxLength: 3 }).map((items) => `[${items.join(',')}]`) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(30, 31, 32, 33, 100, 5000), fc.constantFrom<'object' | 'array'>('object', 'array'), leafJson)
      .map(([levels, kind, inner]) => nestedJson(levels, kind, inner)),
  },
)

/** Fields whose spec says "object": what they are sent instead, and objects with hostile insides. */
export const hostileObjectJson: fc.Arbitrary<string> = fc.oneof(
  { weight: 2, arbitrary: hostileJson },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...hostileKeys), hostileJson).map(([k, v]) => objectJson([[k, v]])) },
  { weight: 1, arbitrary: fc.constantFrom('{"constructor":"x"}', '{"__proto__":{"a":1}}', '{"prototype":1,"toString":2}', '{"":""}', '[{}]', 'null') },
)

export const topicJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...queryPools().topic!).map(json),
  fc.array(fc.constantFrom<unknown>(...queryPools().topic!, '', '\ud800', 5), { maxLength: 4 }).map(json),
  fc.constantFrom(json(Array.from({ length: 101 }, (_, i) => `t${i}`)), json(['*', 'a']), json([]), '"*"', 'null', '{}'),
)

export const idJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...hostileTexts, 'acme', 'globex', 'ghost', 'hook', 'relay-1', 'e1').map(json),
  fc.constantFrom('5', 'null', '[]', '{}', 'true'),
)

export const dateJson: fc.Arbitrary<string> = fc.oneof(fc.constantFrom(...dates).map(json), fc.constantFrom('0', '1704067200000', 'null', 'true', '{}'))

/** Field-specific JSON by body field name; other fields get hostileJson. */
export const fieldJson: Record<string, fc.Arbitrary<string>> = {
  id: idJson,
  tenant_id: idJson,
  destination_id: idJson,
  topic: topicJson,
  topics: topicJson,
  time: dateJson,
  type: fc.constantFrom('"webhook"', '"relay"', '"WEBHOOK"', '"nope"', '5', 'null', '""'),
  eligible_for_retry: fc.constantFrom('true', 'false', '"true"', '1', 'null'),
  metadata: hostileObjectJson,
  data: hostileObjectJson,
  config: fc.oneof(hostileObjectJson, fc.constantFrom(json({ url: fixture.deadUrl, custom_headers: { constructor: 'x' } }), json({ url: 'http://[::1' }), json({ url: `${fixture.deadUrl}\u0000` }))),
  credentials: hostileObjectJson,
  filter: fc.oneof(
    hostileObjectJson,
    fc.constantFrom('{"data":{"n":{"$gt":"\\u0000"}}}', '{"$or":[]}', '{"data":{"__proto__":{"$exist":true}}}', `{"data":${nestedJson(40)}}`, '{"data":{"$nope":1}}'),
  ),
  delivery_metadata: fc.oneof(hostileObjectJson, fc.constantFrom('{"constructor":"x"}', '{"a":null}', '{"a":1}', '["a"]')),
}
