import dns from 'node:dns'
import net, { type LookupFunction } from 'node:net'

/** `code` of the error raised when a connection to a private address is refused. */
export const SSRF_ERROR_CODE = 'ERR_OUTFLOW_SSRF'

type Cidr = { bytes: number[]; bits: number }

function parseIPv4(ip: string): number[] | null {
  if (!net.isIPv4(ip)) return null
  return ip.split('.').map(Number)
}

/** 16 bytes of an IPv6 address (zone id dropped, trailing dotted quad expanded), or null when invalid. */
function parseIPv6(ip: string): number[] | null {
  const address = ip.replace(/%.*$/, '')
  if (!net.isIPv6(address)) return null
  let text = address
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text)
  if (dotted?.[1]) {
    const v4 = parseIPv4(dotted[1])
    if (!v4) return null
    const [a = 0, b = 0, c = 0, d = 0] = v4
    text = text.slice(0, -dotted[1].length) + `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head = '', tail] = text.split('::')
  const headParts = head === '' ? [] : head.split(':')
  const tailParts = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = tail === undefined ? [] : Array<string>(8 - headParts.length - tailParts.length).fill('0')
  const groups = [...headParts, ...zeros, ...tailParts].map((g) => Number.parseInt(g, 16))
  if (groups.length !== 8 || groups.some((g) => Number.isNaN(g))) return null
  return groups.flatMap((g) => [g >> 8, g & 0xff])
}

function cidr(text: string): Cidr {
  const [address = '', bits = ''] = text.split('/')
  const bytes = parseIPv4(address) ?? parseIPv6(address)
  if (!bytes) throw new Error(`bad CIDR ${text}`)
  return { bytes, bits: Number(bits) }
}

function inCidr(bytes: number[], range: Cidr): boolean {
  if (bytes.length !== range.bytes.length) return false
  for (let bit = 0; bit < range.bits; bit += 8) {
    const take = Math.min(8, range.bits - bit)
    const mask = (0xff << (8 - take)) & 0xff
    if (((bytes[bit / 8] ?? 0) & mask) !== ((range.bytes[bit / 8] ?? 0) & mask)) return false
  }
  return true
}

/** IPv4 ranges that are not the public internet: loopback, RFC 1918, CGNAT, link-local (cloud metadata), documentation, multicast, reserved, broadcast. */
const privateV4Ranges = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4',
]

/** IPv6 ranges refused outright: unspecified, loopback, unique-local (incl. fd00:ec2::254 metadata), link-local, site-local, multicast, discard, documentation, local-use NAT64. */
const privateV6Ranges = ['::/128', '::1/128', 'fc00::/7', 'fe80::/10', 'fec0::/10', 'ff00::/8', '100::/64', '2001:db8::/32', '64:ff9b:1::/48']

/** IPv6 ranges that carry an IPv4 address; the embedded address decides. `xor` undoes Teredo's obfuscation. */
const embeddingV6Ranges: { range: string; offset: number; xor: number }[] = [
  { range: '::ffff:0:0/96', offset: 12, xor: 0 }, // IPv4-mapped
  { range: '::/96', offset: 12, xor: 0 }, // IPv4-compatible (deprecated)
  { range: '::ffff:0:0:0/96', offset: 12, xor: 0 }, // IPv4-translated (SIIT)
  { range: '64:ff9b::/96', offset: 12, xor: 0 }, // NAT64 well-known prefix
  { range: '2002::/16', offset: 2, xor: 0 }, // 6to4
  { range: '2001::/32', offset: 12, xor: 0xff }, // Teredo client address
]

interface Ranges {
  privateV4: Cidr[]
  privateV6: Cidr[]
  embeddingV6: { range: Cidr; offset: number; xor: number }[]
}

function parseRanges(): Ranges {
  return {
    privateV4: privateV4Ranges.map(cidr),
    privateV6: privateV6Ranges.map(cidr),
    embeddingV6: embeddingV6Ranges.map(({ range, offset, xor }) => ({ range: cidr(range), offset, xor })),
  }
}

/**
 * The tables above, parsed once at import. One that does not parse (a bug in this file) fails every check, so
 * every test of one, rather than the import of everything that reaches this module: mutation testing sees
 * failing tests, where a module that cannot load left vitest no test to run and counted as a survivor.
 */
const parsed: Ranges | Error = (() => {
  try {
    return parseRanges()
  } catch (err) {
    return err as Error
  }
})()

function ranges(): Ranges {
  if (parsed instanceof Error) throw parsed
  return parsed
}

function isPrivateV4(bytes: number[]): boolean {
  return ranges().privateV4.some((range) => inCidr(bytes, range))
}

/**
 * Whether a connection to `ip` must be refused by default: anything not on the public internet.
 * A string that is not an IP address counts as private (fail closed).
 *
 * @example
 * isPrivateAddress('169.254.169.254') // true
 * isPrivateAddress('::ffff:a00:1') // true (10.0.0.1)
 * isPrivateAddress('93.184.216.34') // false
 */
export function isPrivateAddress(ip: string): boolean {
  const v4 = parseIPv4(ip)
  if (v4) return isPrivateV4(v4)
  const v6 = parseIPv6(ip)
  if (!v6) return true
  const { privateV6, embeddingV6 } = ranges()
  if (privateV6.some((range) => inCidr(v6, range))) return true
  for (const { range, offset, xor } of embeddingV6) {
    if (inCidr(v6, range)) return isPrivateV4(v6.slice(offset, offset + 4).map((b) => b ^ xor))
  }
  return false
}

/** The IP address a URL hostname spells literally (`[::1]` → `::1`), or null for a DNS name. */
export function ipLiteral(hostname: string): string | null {
  const bare = hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname
  return net.isIP(bare) ? bare : null
}

/** The error of a refused connection; `code` is `ERR_OUTFLOW_SSRF`. */
export function ssrfError(host: string, address: string): Error & { code: string } {
  const detail = host === address ? address : `${host} resolves to ${address}`
  return Object.assign(new Error(`refusing to connect to a private network address (${detail}); set allowPrivateNetworks to allow it`), {
    code: SSRF_ERROR_CODE,
  })
}

/**
 * A `dns.lookup` replacement for socket `connect` options: resolves, then refuses when any result is private.
 * Checking at connect time, on the addresses actually used, is what defeats DNS rebinding.
 *
 * @example
 * new Agent({ connect: { lookup: guardedLookup } })
 */
export const guardedLookup: LookupFunction = (hostname, options, callback) => {
  const wantsAll = typeof options === 'object' && options !== null && options.all === true
  dns.lookup(hostname, { ...(typeof options === 'object' ? options : {}), all: true }, (err, addresses) => {
    if (err) return callback(err, '')
    const refused = addresses.find((entry) => isPrivateAddress(entry.address))
    if (refused) return callback(ssrfError(hostname, refused.address), '')
    const first = addresses[0]
    if (!first) return callback(Object.assign(new Error(`no address for ${hostname}`), { code: 'ENOTFOUND' }), '')
    if (wantsAll) return callback(null, addresses)
    callback(null, first.address, first.family)
  })
}
