import type { LookupAddress } from 'node:dns'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
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
})

describe('ipLiteral', () => {
  it('recognises bracketed IPv6 and IPv4 hostnames, not DNS names', () => {
    expect(ipLiteral('[::1]')).toBe('::1')
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
    const { err } = await lookup('localhost')
    expect(err?.code).toBe(SSRF_ERROR_CODE)
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
