import type { LookupAddress } from 'node:dns'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import dns from 'node:dns'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { guardedLookup, ipLiteral, isPrivateAddress, SSRF_ERROR_CODE } from '../../src/net/ssrf.js'

describe('isPrivateAddress', () => {
  const privateAddresses = [
    '127.0.0.1',
    '127.255.255.254',
    '0.0.0.0',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.10',
    '169.254.169.254',
    '100.64.0.1',
    '100.127.255.255',
    '192.0.0.8',
    '198.18.0.1',
    '198.19.255.255',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '::',
    '::1',
    'fc00::1',
    'fd12:3456::1',
    'fd00:ec2::254',
    'fe80::1',
    'fe80::1%eth0',
    'ff02::1',
    '::ffff:10.0.0.1',
    '::ffff:a00:1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '0:0:0:0:0:ffff:c0a8:101',
    '::10.0.0.1',
    '64:ff9b::a00:1',
    '64:ff9b::169.254.169.254',
    '2002:a00:1::1',
    'not-an-ip',
    '',
  ]
  it.each(privateAddresses)('refuses %s', (ip) => {
    expect(isPrivateAddress(ip)).toBe(true)
  })

  const publicAddresses = ['8.8.8.8', '1.1.1.1', '93.184.216.34', '172.32.0.1', '100.128.0.1', '198.20.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808', '2a00:1450:4001::200e']
  it.each(publicAddresses)('allows %s', (ip) => {
    expect(isPrivateAddress(ip)).toBe(false)
  })

  // Each refused range by its first and last address, and the addresses just outside it.
  const edges: [range: string, first: string, last: string, before: string | null, after: string | null][] = [
    ['0.0.0.0/8', '0.0.0.0', '0.255.255.255', null, '1.0.0.0'],
    ['10.0.0.0/8', '10.0.0.0', '10.255.255.255', '9.255.255.255', '11.0.0.0'],
    ['100.64.0.0/10', '100.64.0.0', '100.127.255.255', '100.63.255.255', '100.128.0.0'],
    ['127.0.0.0/8', '127.0.0.0', '127.255.255.255', '126.255.255.255', '128.0.0.0'],
    ['169.254.0.0/16', '169.254.0.0', '169.254.255.255', '169.253.255.255', '169.255.0.0'],
    ['172.16.0.0/12', '172.16.0.0', '172.31.255.255', '172.15.255.255', '172.32.0.0'],
    ['192.0.0.0/24', '192.0.0.0', '192.0.0.255', '191.255.255.255', '192.0.1.0'],
    ['192.0.2.0/24', '192.0.2.0', '192.0.2.255', '192.0.1.255', '192.0.3.0'],
    ['192.88.99.0/24', '192.88.99.0', '192.88.99.255', '192.88.98.255', '192.88.100.0'],
    ['192.168.0.0/16', '192.168.0.0', '192.168.255.255', '192.167.255.255', '192.169.0.0'],
    ['198.18.0.0/15', '198.18.0.0', '198.19.255.255', '198.17.255.255', '198.20.0.0'],
    ['198.51.100.0/24', '198.51.100.0', '198.51.100.255', '198.51.99.255', '198.51.101.0'],
    ['203.0.113.0/24', '203.0.113.0', '203.0.113.255', '203.0.112.255', '203.0.114.0'],
    ['224.0.0.0/4 and 240.0.0.0/4', '224.0.0.0', '255.255.255.255', '223.255.255.255', null],
    ['fc00::/7', 'fc00::', 'fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fe00::'],
    ['fe80::/10 and fec0::/10', 'fe80::', 'feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', 'fe7f:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null],
    ['ff00::/8', 'ff00::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', null, null],
    ['100::/64', '100::', '100::ffff:ffff:ffff:ffff', 'ff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '100:0:0:1::'],
    ['2001:db8::/32', '2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', '2001:db9::'],
    ['64:ff9b:1::/48', '64:ff9b:1::', '64:ff9b:1:ffff:ffff:ffff:ffff:ffff', '64:ff9b:0:ffff:ffff:ffff:ffff:ffff', '64:ff9b:2::'],
  ]
  it.each(edges)('refuses %s from %s to %s, and nothing just outside', (_range, first, last, before, after) => {
    expect(isPrivateAddress(first)).toBe(true)
    expect(isPrivateAddress(last)).toBe(true)
    if (before) expect(isPrivateAddress(before)).toBe(false)
    if (after) expect(isPrivateAddress(after)).toBe(false)
  })

  // An IPv6 address that carries an IPv4 one is judged by the IPv4 address.
  it.each([
    ['IPv4-mapped', '::ffff:192.168.0.1', '::ffff:8.8.4.4'],
    ['IPv4-compatible', '::a00:1', '::808:808'],
    ['IPv4-translated (SIIT)', '::ffff:0:a00:1', '::ffff:0:808:808'],
    ['NAT64', '64:ff9b::7f00:1', '64:ff9b::8.8.4.4'],
    ['6to4', '2002:c0a8:1::', '2002:808:808::1'],
    ['Teredo (the client address inverted)', '2001:0:4136:e378:8000:63bf:f5ff:fffe', '2001:0:4136:e378:8000:63bf:f7f7:f7f7'],
  ])('judges %s addresses by the IPv4 address inside: %s refused, %s allowed', (_form, refused, allowed) => {
    expect(isPrivateAddress(refused)).toBe(true)
    expect(isPrivateAddress(allowed)).toBe(false)
  })

  it('judges an IPv4 address written inside IPv6 by all of its digits', () => {
    // Multi-digit parts in every position of the dotted quad: a public address stays public, a private one private.
    for (const ip of ['::ffff:93.184.216.34', '64:ff9b::93.184.216.34', '::ffff:0:93.184.216.34']) expect(isPrivateAddress(ip), ip).toBe(false)
    for (const ip of ['::ffff:192.168.100.200', '::ffff:172.31.255.255', '64:ff9b::100.127.255.255']) expect(isPrivateAddress(ip), ip).toBe(true)
  })

  it('refuses what only looks like IPv6 (fail closed), though its groups would read as a public address', () => {
    for (const ip of ['2606:4700:4700::1111x', '2606:4700:4700::11111', '12345::1', '2606:4700:4700:0:0:0:0:1111:0']) expect(isPrivateAddress(ip), ip).toBe(true)
  })

  it('judges the address, whatever zone id it carries', () => {
    expect(isPrivateAddress('2606:4700:4700::1111%eth0')).toBe(false)
    expect(isPrivateAddress('2606:4700:4700::1111%eth0.100')).toBe(false)
    expect(isPrivateAddress('fe80::1%eth0.100')).toBe(true)
    // Zone ids may hold colons and dots: none of it is read as part of the address.
    expect(isPrivateAddress('::ffff:7f00:1%a:b')).toBe(true)
    expect(isPrivateAddress('::ffff:808:808%1.2.3.4')).toBe(false)
  })

  it('reads the zone id off a link-local address and every form of IPv6 zero compression', () => {
    expect(isPrivateAddress('fe80::1%25eth0')).toBe(true)
    expect(isPrivateAddress('2606:4700:4700:0:0:0:0:1111')).toBe(false)
    expect(isPrivateAddress('fc00:0:0:0:0:0:0:1')).toBe(true)
    expect(isPrivateAddress('0:0:0:0:0:0:0:1')).toBe(true)
    expect(isPrivateAddress('2001:db8::')).toBe(true)
    expect(isPrivateAddress('::ffff:127.0.0.1%1')).toBe(true)
  })
})

describe('ipLiteral', () => {
  it('recognises bracketed IPv6 and IPv4 hostnames, not DNS names', () => {
    expect(ipLiteral('[::1]')).toBe('::1')
    expect(ipLiteral('::1')).toBe('::1')
    expect(ipLiteral('[::1')).toBeNull()
    expect(ipLiteral('::1]')).toBeNull()
    expect(ipLiteral('1::1]')).toBeNull()
    expect(ipLiteral('[1::1')).toBeNull()
    expect(ipLiteral('[10.0.0.1]')).toBe('10.0.0.1')
    expect(ipLiteral('10.0.0.1')).toBe('10.0.0.1')
    expect(ipLiteral('localhost')).toBeNull()
    expect(ipLiteral('example.com')).toBeNull()
  })

  it('sees the dotted quad WHATWG URL makes of decimal and hex IPv4 forms', () => {
    expect(ipLiteral(new URL('http://2130706433/').hostname)).toBe('127.0.0.1')
    expect(ipLiteral(new URL('http://0x7f.1/').hostname)).toBe('127.0.0.1')
    expect(ipLiteral(new URL('http://0xa9fea9fe/').hostname)).toBe('169.254.169.254')
  })
})

type LookupOutcome = { err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }

function lookup(hostname: string, options: { all?: boolean } = {}): Promise<LookupOutcome> {
  return new Promise((resolve) => guardedLookup(hostname, options, (err, address, family) => resolve({ err, address, family })))
}

describe('guardedLookup', () => {
  it('refuses a name that resolves to loopback, with code ERR_OUTFLOW_SSRF', async () => {
    const { err, address } = await lookup('localhost')
    expect(SSRF_ERROR_CODE).toBe('ERR_OUTFLOW_SSRF')
    expect(err?.code).toBe('ERR_OUTFLOW_SSRF')
    expect(address).toBe('')
    expect(err?.message).toMatch(/localhost resolves to (127\.0\.0\.1|::1)/)
  })

  it('refuses a private result in the all: true form used by happy-eyeballs connects', async () => {
    const { err } = await lookup('localhost', { all: true })
    expect(err?.code).toBe(SSRF_ERROR_CODE)
  })

  it('passes a public address through as (address, family)', async () => {
    // A numeric host resolves locally: no DNS query and no connection is made.
    const { err, address, family } = await lookup('93.184.216.34')
    expect(err).toBeNull()
    expect(address).toBe('93.184.216.34')
    expect(family).toBe(4)
  })

  it('passes a public address through as a list when all: true', async () => {
    const { err, address } = await lookup('2606:4700:4700::1111', { all: true })
    expect(err).toBeNull()
    expect(address).toEqual([{ address: '2606:4700:4700::1111', family: 6 }])
  })

  describe('with a resolver answering what the test says', () => {
    afterEach(() => {
      vi.restoreAllMocks()
    })
    /** dns.lookup answering `addresses` (or `err`) to every name, recording the options it was given. */
    function resolver(addresses: LookupAddress[], err: Error | null = null) {
      return vi.spyOn(dns, 'lookup').mockImplementation(((_host: string, _options: object, callback: (e: Error | null, a: LookupAddress[]) => void) =>
        callback(err, addresses)) as never)
    }

    it('refuses a name when any of its addresses is private, naming that address', async () => {
      resolver([
        { address: '93.184.216.34', family: 4 },
        { address: '10.1.2.3', family: 4 },
      ])
      const { err, address } = await lookup('rebind.example')
      expect(err?.code).toBe(SSRF_ERROR_CODE)
      expect(address).toBe('')
      expect(err?.message).toBe('refusing to connect to a private network address (rebind.example resolves to 10.1.2.3); set allowPrivateNetworks to allow it')
    })

    it('passes the first public address, or all of them, asking the resolver for all with the caller options', async () => {
      const addresses = [
        { address: '2606:4700:4700::1111', family: 6 },
        { address: '93.184.216.34', family: 4 },
      ]
      const spy = resolver(addresses)
      expect(await lookup('public.example', { family: 6 } as never)).toEqual({ err: null, address: '2606:4700:4700::1111', family: 6 })
      expect(spy).toHaveBeenLastCalledWith('public.example', { family: 6, all: true }, expect.any(Function))
      expect(await lookup('public.example', { all: true })).toEqual({ err: null, address: addresses, family: undefined })
      expect(await lookup('public.example', { all: false })).toEqual({ err: null, address: '2606:4700:4700::1111', family: 6 })
    })

    it('takes a family given as a number the way net does, as no options', async () => {
      const spy = resolver([{ address: '93.184.216.34', family: 4 }])
      const outcome = await new Promise<LookupOutcome>((resolve) => (guardedLookup as unknown as (h: string, o: number, c: (e: NodeJS.ErrnoException | null, a: string, f?: number) => void) => void)('public.example', 4, (err, address, family) => resolve({ err, address, family })))
      expect(outcome).toEqual({ err: null, address: '93.184.216.34', family: 4 })
      expect(spy).toHaveBeenLastCalledWith('public.example', { all: true }, expect.any(Function))
    })

    it('passes a resolver error on, and an empty answer as ENOTFOUND', async () => {
      resolver([], Object.assign(new Error('getaddrinfo EAI_AGAIN x.example'), { code: 'EAI_AGAIN' }))
      const failed = await lookup('x.example')
      expect(failed.err?.code).toBe('EAI_AGAIN')
      expect(failed.address).toBe('')
      vi.restoreAllMocks()
      resolver([])
      const { err, address } = await lookup('empty.example')
      expect(err?.code).toBe('ENOTFOUND')
      expect(err?.message).toBe('no address for empty.example')
      expect(address).toBe('')
    })

    it('takes null or undefined options as none', async () => {
      const spy = resolver([{ address: '93.184.216.34', family: 4 }])
      for (const options of [null, undefined]) {
        const outcome = await new Promise<LookupOutcome>((resolve) => guardedLookup('public.example', options as never, (err, address, family) => resolve({ err, address, family })))
        expect(outcome).toEqual({ err: null, address: '93.184.216.34', family: 4 })
        expect(spy).toHaveBeenLastCalledWith('public.example', { all: true }, expect.any(Function))
      }
    })
  })

  describe('as the lookup of a real socket', () => {
    let server: http.Server
    let port: number
    let connections = 0

    beforeAll(async () => {
      server = http.createServer((_req, res) => res.end('ok'))
      server.on('connection', () => connections++)
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
      port = (server.address() as AddressInfo).port
    })
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

    it('makes net.connect to localhost fail before any connection is opened', async () => {
      const error = await new Promise<NodeJS.ErrnoException>((resolve, reject) => {
        const socket = net.connect({ host: 'localhost', port, lookup: guardedLookup })
        socket.once('connect', () => (socket.destroy(), reject(new Error('connected'))))
        socket.once('error', resolve)
      })
      expect(error.code).toBe(SSRF_ERROR_CODE)
      expect(connections).toBe(0)
    })
  })
})
