import { describe, expect, it } from 'vitest'
import { attemptResultFromError, DeliveryError, httpAttemptResult } from '../../src/net/http-client.js'
import { parseRetryAfter } from '../../src/retry-after.js'

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

describe('httpAttemptResult: what is recorded', () => {
  it('keeps the status, headers and body of every answer', () => {
    const response = { status: 201, headers: { 'content-type': 'text/plain' }, body: 'created' }
    expect(httpAttemptResult(response)).toEqual({ ok: true, response_status_code: 201, response_headers: { 'content-type': 'text/plain' }, response_body: 'created' })
    expect(httpAttemptResult({ ...response, status: 422, body: 'no' })).toEqual({
      ok: false,
      response_status_code: 422,
      response_headers: { 'content-type': 'text/plain' },
      response_body: 'no',
      error_kind: 'http_4xx',
      error: 'HTTP 422',
    })
  })

  it.each([
    [199, false, 'unknown'],
    [299, true, undefined],
    [300, false, 'redirect'],
    [399, false, 'redirect'],
    [402, false, 'http_4xx'],
    [499, false, 'http_4xx'],
  ] as const)('HTTP %i at the edge of its class: ok %s, error_kind %s', (status, ok, kind) => {
    const result = httpAttemptResult({ status, headers: {}, body: '' })
    expect(result.ok).toBe(ok)
    expect(result.error_kind).toBe(kind)
  })

  it('says a redirect is not followed, and only for a redirect', () => {
    expect(httpAttemptResult({ status: 302, headers: { location: 'https://elsewhere.example' }, body: '' }).error).toBe('HTTP 302 (redirects are not followed)')
    expect(httpAttemptResult({ status: 300, headers: {}, body: '' }).error).toBe('HTTP 300 (redirects are not followed)')
    expect(httpAttemptResult({ status: 399, headers: {}, body: '' }).error).toBe('HTTP 399 (redirects are not followed)')
    expect(httpAttemptResult({ status: 199, headers: {}, body: '' }).error).toBe('HTTP 199')
    expect(httpAttemptResult({ status: 400, headers: {}, body: '' }).error).toBe('HTTP 400')
  })

  it('asks to disable the destination on 410 Gone only', () => {
    expect(httpAttemptResult({ status: 410, headers: {}, body: '' }).disable).toBe(true)
    for (const status of [200, 404, 409, 500]) expect(httpAttemptResult({ status, headers: {}, body: '' })).not.toHaveProperty('disable')
  })

  it('reads Retry-After on 429 and 503, and leaves it out when unreadable', () => {
    expect(httpAttemptResult({ status: 429, headers: { 'retry-after': '7' }, body: '' }).retry_after_ms).toBe(7000)
    expect(httpAttemptResult({ status: 503, headers: { 'retry-after': '0' }, body: '' }).retry_after_ms).toBe(0)
    expect(httpAttemptResult({ status: 429, headers: { 'retry-after': 'later' }, body: '' })).not.toHaveProperty('retry_after_ms')
    expect(httpAttemptResult({ status: 503, headers: {}, body: '' })).not.toHaveProperty('retry_after_ms')
  })

  it('reads delta-seconds with white space around them, and a date relative to the clock by default', () => {
    expect(parseRetryAfter(' 12 ')).toBe(12_000)
    const inAMinute = new Date(Date.now() + 60_000).toUTCString()
    expect(parseRetryAfter(inAMinute)).toBeGreaterThan(50_000)
    expect(parseRetryAfter(inAMinute)).toBeLessThanOrEqual(60_000)
    expect(parseRetryAfter('12 s', 0)).toBeUndefined()
    expect(parseRetryAfter('in 30', 0)).toBeUndefined()
  })
})

describe('attemptResultFromError', () => {
  it('records the kind of a DeliveryError with its message, and nothing of a response', () => {
    expect(attemptResultFromError(new DeliveryError('timeout', 'no response within 10000 ms'))).toEqual({
      ok: false,
      response_status_code: null,
      response_headers: null,
      response_body: null,
      error_kind: 'timeout',
      error: 'no response within 10000 ms',
    })
  })

  it('records any other error as unknown, with its message or its text', () => {
    expect(attemptResultFromError(new TypeError('bad'))).toMatchObject({ error_kind: 'unknown', error: 'bad' })
    expect(attemptResultFromError('thrown text')).toMatchObject({ error_kind: 'unknown', error: 'thrown text' })
  })
})
