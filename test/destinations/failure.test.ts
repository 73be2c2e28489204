import { describe, expect, it } from 'vitest'
import { failureOf } from '../../src/destinations/failure.js'
import { startDeadline } from '../../src/net/deadline.js'

const live = () => new AbortController().signal
const serviceError = Object.assign(new Error('The security token secret-key-123 is invalid'), { name: 'InvalidClientTokenId', status: 403 })

describe('failureOf', () => {
  it("records the type's own description, with the status and body it gives", () => {
    const result = failureOf(serviceError, (_err, message) => ({ kind: 'authentication', error: `InvalidClientTokenId: ${message}`, status: 403, body: '{"code":"x"}' }), { signal: live() })
    expect(result).toEqual({
      ok: false,
      error_kind: 'authentication',
      error: 'InvalidClientTokenId: The security token secret-key-123 is invalid',
      response_status_code: 403,
      response_body: '{"code":"x"}',
    })
  })

  it('removes secrets and PEM blocks from the text and the body', () => {
    const pem = '-----BEGIN PRIVATE KEY-----\nMIIfake\n-----END PRIVATE KEY-----'
    const result = failureOf(new Error(`bad key ${pem}`), (_err, message) => ({ kind: 'unknown', error: `${message} secret-key-123`, body: JSON.stringify({ message }) }), {
      signal: live(),
      secrets: ['secret-key-123', undefined, 'ab'],
    })
    expect(result.error).toBe('bad key **** ****')
    expect(result.response_body).toBe('{"message":"bad key ****"}')
  })

  it('reports a timeout once the attempt deadline has passed, whatever the SDK made of it', async () => {
    const deadline = startDeadline(10)
    await new Promise((resolve) => deadline.signal.addEventListener('abort', resolve))
    const result = failureOf(Object.assign(new Error('Request aborted'), { name: 'AbortError' }), () => ({ kind: 'unknown', error: 'not this' }), { signal: deadline.signal })
    expect(result).toEqual({ ok: false, error_kind: 'timeout', error: 'no complete response within 10 ms', response_status_code: null, response_body: null })
  })
})
