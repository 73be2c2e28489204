// Query strings the way src/http reads them: `form` repeats a name for a list (`topic=a&topic=b`), and
// `deepObject` (the metrics routes) brackets nested names (`time[start]=…`, `measures[0]=count`).

/** A query value: dates are sent as RFC 3339, numbers and booleans as text, lists per style. */
type QueryValue = string | number | boolean | Date | null | undefined | readonly QueryValue[] | { readonly [key: string]: QueryValue }

const text = (value: string | number | boolean | Date): string => (value instanceof Date ? value.toISOString() : String(value))

function append(search: URLSearchParams, name: string, value: QueryValue, deep: boolean): void {
  if (value === undefined || value === null) return
  if (Array.isArray(value)) {
    value.forEach((item: QueryValue, index) => append(search, deep ? `${name}[${index}]` : name, item, deep))
  } else if (typeof value === 'object' && !(value instanceof Date)) {
    if (!deep) throw new TypeError(`query parameter ${name}: an object is only sent in deepObject style`)
    for (const [key, item] of Object.entries(value)) append(search, `${name}[${key}]`, item, deep)
  } else {
    search.append(name, text(value as string | number | boolean | Date))
  }
}

/**
 * `?…` of a query object (empty when nothing is set); `undefined` and `null` values are left out.
 *
 * @example
 * queryString({ topic: ['a', 'b'], limit: 5 }) // '?topic=a&topic=b&limit=5'
 * queryString({ time: { start: '2026-01-01T00:00:00Z' }, measures: ['count'] }, 'deepObject') // '?time%5Bstart%5D=…&measures%5B0%5D=count'
 */
export function queryString(query: object | undefined, style: 'form' | 'deepObject' = 'form'): string {
  const search = new URLSearchParams()
  for (const [name, value] of Object.entries(query ?? {})) append(search, name, value as QueryValue, style === 'deepObject')
  const encoded = search.toString()
  return encoded ? `?${encoded}` : ''
}

/**
 * A path with each interpolated value percent-encoded as one segment.
 *
 * @example
 * path`/tenants/${'a/b'}/events` // '/tenants/a%2Fb/events'
 */
export function path(strings: TemplateStringsArray, ...values: string[]): string {
  return strings.reduce((out, part, i) => out + part + (i < values.length ? encodeURIComponent(values[i]!) : ''), '')
}
