import dns from 'node:dns'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { hostChecker, hostFailure, privateEndpointError, privateHostError, resolvePublicHost } from '../../src/net/endpoint-guard.js'
import { SSRF_ERROR_CODE } from '../../src/net/ssrf.js'

const guarded = { allowPrivateNetworks: false }
const open = { allowPrivateNetworks: true }

describe('privateHostError', () => {
  it.each(['169.254.169.254', '10.0.0.1', '[::1]', '[fd00:ec2::254]', '127.0.0.1'])('refuses the private IP literal %s', (host) => {
    expect(privateHostError(host, guarded)).toBe(`refusing to connect to a private network address (${host.replace(/^\[|\]$/g, '')}); set allowPrivateNetworks to allow it`)
  })

  it('passes a public IP literal, and leaves a name to be checked after DNS', () => {
    expect(privateHostError('93.184.216.34', guarded)).toBeUndefined()
    expect(privateHostError('[2606:4700:4700::1111]', guarded)).toBeUndefined()
    expect(privateHostError('localhost', guarded)).toBeUndefined()
  })

  it('passes every host when private networks are allowed', () => {
    expect(privateHostError('169.254.169.254', open)).toBeUndefined()
  })
})

describe('privateEndpointError', () => {
  it("judges the endpoint URL's host, and nothing when there is no endpoint", () => {
    expect(privateEndpointError('http://127.0.0.1:4566/queue', guarded)).toMatch(/^refusing to connect to a private network address \(127\.0\.0\.1\)/)
    expect(privateEndpointError('https://[::ffff:a00:1]/', guarded)).toMatch(/\(::ffff:a00:1\)/)
    expect(privateEndpointError('https://sqs.us-east-1.amazonaws.com', guarded)).toBeUndefined()
    expect(privateEndpointError('http://127.0.0.1:4566', open)).toBeUndefined()
    expect(privateEndpointError(undefined, guarded)).toBeUndefined()
  })
})

describe('resolvePublicHost', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })

  it('resolves nothing when private networks are allowed or the host is an IP literal', async () => {
    const lookup = vi.spyOn(dns, 'lookup')
    expect(await resolvePublicHost('localhost', open)).toBeUndefined()
    expect(await resolvePublicHost('10.0.0.1', guarded)).toBeUndefined()
    expect(await resolvePublicHost('[::1]', guarded)).toBeUndefined()
    expect(lookup).not.toHaveBeenCalled()
  })

  it('rejects with ERR_OUTFLOW_SSRF when the name resolves to a private address', async () => {
    await expect(resolvePublicHost('localhost', guarded)).rejects.toMatchObject({ code: SSRF_ERROR_CODE, message: expect.stringMatching(/localhost resolves to/) })
  })

  it('returns every public address, asking for the family it is given', async () => {
    const addresses = [
      { address: '93.184.216.34', family: 4 },
      { address: '93.184.216.35', family: 4 },
    ]
    const lookup = vi.spyOn(dns, 'lookup').mockImplementation(((_host: string, _options: object, callback: (err: null, a: typeof addresses) => void) =>
      callback(null, addresses)) as never)
    expect(await resolvePublicHost('public.example.com', guarded, 4)).toEqual(addresses)
    expect(lookup).toHaveBeenLastCalledWith('public.example.com', expect.objectContaining({ all: true, family: 4 }), expect.any(Function))
    expect(await resolvePublicHost('public.example.com', guarded)).toEqual(addresses)
    expect(lookup).toHaveBeenLastCalledWith('public.example.com', expect.objectContaining({ all: true, family: 0 }), expect.any(Function))
  })

  it('rejects with the resolver error when the name does not resolve', async () => {
    vi.spyOn(dns, 'lookup').mockImplementation(((_host: string, _options: object, callback: (err: Error) => void) =>
      callback(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' }))) as never)
    await expect(resolvePublicHost('nowhere.example', guarded)).rejects.toMatchObject({ code: 'ENOTFOUND' })
  })
})

describe('hostChecker', () => {
  afterEach(() => {
    vi.restoreAllMocks()
  })
  /** dns.lookup answering `answer` (addresses, or an error) to every name; the spy counts the look-ups. */
  function resolver(answer: { address: string; family: number }[] | Error) {
    return vi.spyOn(dns, 'lookup').mockImplementation(((_host: string, _options: object, callback: (err: Error | null, a?: unknown) => void) =>
      answer instanceof Error ? callback(answer) : callback(null, answer)) as never)
  }

  it('refuses a private IP literal on every check without asking DNS, and lets it through when private networks are allowed', async () => {
    const lookup = resolver([])
    const check = hostChecker('169.254.169.254', guarded)
    const failure = { ok: false, error_kind: 'ssrf', error: 'refusing to connect to a private network address (169.254.169.254); set allowPrivateNetworks to allow it' }
    expect(await check()).toEqual({ failure })
    expect(await check()).toEqual({ failure })
    expect(await hostChecker('169.254.169.254', open)()).toEqual({ addresses: undefined })
    expect(lookup).not.toHaveBeenCalled()
  })

  it('checks nothing without a host (the SDK service itself), and resolves nothing for a public literal', async () => {
    const lookup = resolver([])
    // The shape HostCheck declares, `addresses` present though undefined.
    expect(await hostChecker(undefined, guarded)()).toStrictEqual({ addresses: undefined })
    expect(await hostChecker('93.184.216.34', guarded)()).toStrictEqual({ addresses: undefined })
    expect(lookup).not.toHaveBeenCalled()
  })

  it('resolves a name on every check, in the family it is given, and refuses it once it resolves to a private address', async () => {
    const lookup = resolver([{ address: '93.184.216.34', family: 4 }])
    const check = hostChecker('bus.example.com', guarded, 4)
    expect(await check()).toEqual({ addresses: [{ address: '93.184.216.34', family: 4 }] })
    expect(lookup).toHaveBeenLastCalledWith('bus.example.com', expect.objectContaining({ all: true, family: 4 }), expect.any(Function))
    vi.restoreAllMocks()
    resolver([{ address: '10.0.0.7', family: 4 }])
    expect(await check()).toEqual({
      failure: { ok: false, error_kind: 'ssrf', error: 'refusing to connect to a private network address (bus.example.com resolves to 10.0.0.7); set allowPrivateNetworks to allow it' },
    })
  })

  it('is the DNS failure of a name that does not resolve', async () => {
    resolver(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example'), { code: 'ENOTFOUND' }))
    expect(await hostChecker('nowhere.example', guarded)()).toEqual({ failure: { ok: false, error_kind: 'dns', error: 'could not resolve nowhere.example: ENOTFOUND' } })
  })
})

describe('hostFailure', () => {
  it('is an ssrf failure with the refusal as its text for a private address', () => {
    const err = Object.assign(new Error('refusing to connect to a private network address (localhost resolves to 127.0.0.1)'), { code: SSRF_ERROR_CODE })
    expect(hostFailure(err, 'localhost')).toEqual({ ok: false, error_kind: 'ssrf', error: err.message })
  })

  it.each([
    ['ENOTFOUND', 'dns'],
    ['EAI_AGAIN', 'dns'],
    ['ETIMEDOUT', 'timeout'],
    ['ECONNREFUSED', 'network'],
    ['ECONNRESET', 'network'],
  ])('is a %s failure of kind %s naming the host and the code', (code, kind) => {
    expect(hostFailure(Object.assign(new Error(`lookup ${code}`), { code }), 'bus.example.com')).toEqual({ ok: false, error_kind: kind, error: `could not resolve bus.example.com: ${code}` })
  })

  it('is a network failure naming "error" when the error has no code', () => {
    expect(hostFailure(new Error('boom'), 'bus.example.com')).toEqual({ ok: false, error_kind: 'network', error: 'could not resolve bus.example.com: error' })
    expect(hostFailure(Object.assign(new Error('odd'), { code: 42 }), 'bus.example.com')).toEqual({ ok: false, error_kind: 'network', error: 'could not resolve bus.example.com: error' })
    expect(hostFailure(null, 'bus.example.com')).toEqual({ ok: false, error_kind: 'network', error: 'could not resolve bus.example.com: error' })
  })
})
