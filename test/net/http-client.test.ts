import { describe, expect, it } from 'vitest'
import { httpAttemptResult, parseRetryAfter } from '../../src/net/http-client.js'

describe('httpAttemptResult and parseRetryAfter', () => {
  it.each([
    [200, true, undefined],
    [204, true, undefined],
    [301, false, 'redirect'],
    [308, false, 'redirect'],
    [400, false, 'http_4xx'],
    [401, false, 'authentication'],
    [403, false, 'authentication'],
    [404, false, 'not_found'],
    [409, false, 'http_4xx'],
    [410, false, 'http_4xx'],
    [413, false, 'http_4xx'],
    [429, false, 'throttled'],
    [500, false, 'http_5xx'],
    [502, false, 'http_5xx'],
    [503, false, 'http_5xx'],
    [599, false, 'http_5xx'],
    [600, false, 'unknown'],
  ] as const)('HTTP %i: ok %s, error_kind %s', (status, ok, kind) => {
    const result = httpAttemptResult({ status, headers: {}, body: '' })
    expect(result.ok).toBe(ok)
    expect(result.error_kind).toBe(kind)
    expect(result.response_status_code).toBe(status)
    if (!ok) expect(result.error).toMatch(new RegExp(`^HTTP ${status}`))
  })

  it('ignores Retry-After on statuses other than 429 and 503', () => {
    expect(httpAttemptResult({ status: 500, headers: { 'retry-after': '5' }, body: '' }).retry_after_ms).toBeUndefined()
  })

  it('reads delta-seconds and HTTP-dates relative to now, and ignores junk', () => {
    const now = Date.parse('Wed, 21 Oct 2015 07:27:00 GMT')
    expect(parseRetryAfter('30', now)).toBe(30_000)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT', now)).toBe(60_000)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:00:00 GMT', now)).toBe(0)
    expect(parseRetryAfter('soon', now)).toBeUndefined()
    expect(parseRetryAfter(undefined, now)).toBeUndefined()
  })
})
