import { describe, expect, it } from 'vitest'
import { failureBeforeSending, failureOf } from '../../src/destinations/failure.js'
import { OutflowError } from '../../src/errors.js'
import { PeerLoadError } from '../../src/load-peer.js'
import type { ErrorKind } from '../../src/model/attempt-result.js'
import { startDeadline } from '../../src/net/deadline.js'
import { DeliveryError } from '../../src/net/http-client.js'

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

describe('failureOf: what is recorded', () => {
  const describeAs = (kind: ErrorKind) => (_err: unknown, message: string) => ({ kind, error: message })

  it('records no status and no body when the type gives none', () => {
    expect(failureOf(new Error('queue gone'), describeAs('not_found'), { signal: live() })).toEqual({ ok: false, error_kind: 'not_found', error: 'queue gone', response_status_code: null, response_body: null })
  })

  it('records an empty body the type gives as empty, scrubbed', () => {
    expect(failureOf(new Error('x'), () => ({ kind: 'rejected', error: 'x', body: '' }), { signal: live() }).response_body).toBe('')
  })

  it('reads the text of anything thrown: a message, else the value as a string', () => {
    expect(failureOf('plain text', describeAs('unknown'), { signal: live() }).error).toBe('plain text')
    expect(failureOf({ message: 42 }, describeAs('unknown'), { signal: live() }).error).toBe('[object Object]')
    expect(failureOf(null, describeAs('unknown'), { signal: live() }).error).toBe('null')
    expect(failureOf({ message: 'from an object' }, describeAs('unknown'), { signal: live() }).error).toBe('from an object')
  })

  it('removes every occurrence of each secret of 4 characters or more, and leaves shorter ones', () => {
    const result = failureOf(new Error('abcd and abcd, xyz and xyz'), describeAs('unknown'), { signal: live(), secrets: ['abcd', 'xyz', ''] })
    expect(result.error).toBe('**** and ****, xyz and xyz')
  })

  it('removes the secrets from the text the type writes itself', () => {
    const result = failureOf(new Error('denied'), () => ({ kind: 'authentication', error: 'key AKIA1234 denied', body: 'key AKIA1234' }), { signal: live(), secrets: ['AKIA1234'] })
    expect(result).toMatchObject({ error: 'key **** denied', response_body: 'key ****' })
  })

  it('removes a PEM block cut short, up to the end of the text', () => {
    const result = failureOf(new Error('cannot parse -----BEGIN RSA PRIVATE KEY-----\nMIIEow'), describeAs('configuration'), { signal: live() })
    expect(result.error).toBe('cannot parse ****')
  })

  it('removes each of several PEM blocks and keeps the text between them', () => {
    const pem = (label: string) => `-----BEGIN ${label}-----\nAAAA\n-----END ${label}-----`
    const result = failureOf(new Error(`a ${pem('CERTIFICATE')} b ${pem('PRIVATE KEY')} c`), describeAs('tls'), { signal: live() })
    expect(result.error).toBe('a **** b **** c')
  })

  it('scrubs the deadline reason of a timeout, and reads a reason that is not an Error', () => {
    const controller = new AbortController()
    controller.abort(new Error('deadline of 5000 ms for key s3cr3t-key passed'))
    expect(failureOf(new Error('x'), describeAs('unknown'), { signal: controller.signal, secrets: ['s3cr3t-key'] }).error).toBe('deadline of 5000 ms for key **** passed')
    const plain = new AbortController()
    plain.abort('stopped')
    expect(failureOf(new Error('x'), describeAs('unknown'), { signal: plain.signal })).toEqual({ ok: false, error_kind: 'timeout', error: 'stopped', response_status_code: null, response_body: null })
  })
})

describe('failureBeforeSending', () => {
  const nothingSent = { ok: false, response_status_code: null, response_headers: null, response_body: null }

  it("is sdk_missing when the type's package is missing", () => {
    const err = new PeerLoadError('amqplib', 'the amqp_broker destination type', Object.assign(new Error("Cannot find package 'amqplib'"), { code: 'ERR_MODULE_NOT_FOUND' }))
    expect(failureBeforeSending(err)).toEqual({ ...nothingSent, error_kind: 'sdk_missing', error: err.message })
  })

  it('is configuration, naming each field, when the stored settings fail their schemas', () => {
    const err = new OutflowError('validation', 'invalid config', { data: { 'config.queue_url': 'is required', 'credentials.key': 'must be a string' } })
    expect(failureBeforeSending(err)).toEqual({ ...nothingSent, error_kind: 'configuration', error: 'invalid config: config.queue_url is required; credentials.key must be a string' })
    expect(failureBeforeSending(new OutflowError('validation', 'no signing secret'))).toEqual({ ...nothingSent, error_kind: 'configuration', error: 'no signing secret' })
    expect(failureBeforeSending(new OutflowError('validation', 'empty', { data: {} }))).toEqual({ ...nothingSent, error_kind: 'configuration', error: 'empty' })
  })

  it('is the kind of a DeliveryError, and unknown for any other error', () => {
    expect(failureBeforeSending(new DeliveryError('ssrf', 'refusing 10.0.0.1'))).toEqual({ ...nothingSent, error_kind: 'ssrf', error: 'refusing 10.0.0.1' })
    expect(failureBeforeSending(new OutflowError('internal', 'boom'))).toEqual({ ...nothingSent, error_kind: 'unknown', error: 'boom' })
    expect(failureBeforeSending('text')).toEqual({ ...nothingSent, error_kind: 'unknown', error: 'text' })
  })
})
