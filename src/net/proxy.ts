import dns from 'node:dns'
import net, { type Socket } from 'node:net'
import { buildConnector } from 'undici'
import type { ClientTls } from './client-tls.js'
import { ipLiteral, isPrivateAddress, ssrfError } from './ssrf.js'
import { hostPort, unbracketed } from './host-port.js'

/** An HTTP CONNECT proxy every webhook and relay request goes through (`delivery.proxy`, or a destination's own). */
export interface EgressProxy {
  host: string
  port: number
  /** `Proxy-Authorization` value, from the proxy URL's user name and password. */
  authorization?: string
  /** The URL without its credentials: pools are keyed by it. */
  id: string
}

/** Longest CONNECT answer head read before giving up on the proxy. */
const maxAnswerHead = 16 * 1024

/**
 * Parse `http://[user:password@]host:port` (the proxy itself is spoken to in plain HTTP, as CONNECT proxies are).
 *
 * @example
 * parseProxyUrl('http://egress.internal:3128') // { host: 'egress.internal', port: 3128, id: 'http://egress.internal:3128' }
 */
export function parseProxyUrl(text: string): EgressProxy {
  const url = new URL(text)
  if (url.protocol !== 'http:') throw new Error('a proxy URL must start with http://')
  if (url.pathname !== '/' || url.search || url.hash) throw new Error('a proxy URL has no path, query or fragment')
  const port = Number(url.port || 80)
  const user = decodeURIComponent(url.username)
  const authorization = url.username || url.password ? `Basic ${Buffer.from(`${user}:${decodeURIComponent(url.password)}`).toString('base64')}` : undefined
  return { host: unbracketed(url.hostname), port, ...(authorization ? { authorization } : {}), id: `http://${url.host}` }
}

/** The address to CONNECT to: the target's first address, refused when the guard is on and any address is private. */
async function checkedAddress(hostname: string, guarded: boolean): Promise<string> {
  const bare = unbracketed(hostname)
  const literal = ipLiteral(bare)
  if (literal !== null) {
    if (guarded && isPrivateAddress(literal)) throw ssrfError(bare, literal)
    return literal
  }
  const addresses = await dns.promises.lookup(bare, { all: true })
  const refused = guarded ? addresses.find((a) => isPrivateAddress(a.address)) : undefined
  if (refused) throw ssrfError(bare, refused.address)
  const first = addresses[0]
  if (!first) throw Object.assign(new Error(`no address for ${bare}`), { code: 'ENOTFOUND' })
  return first.address
}

/** Open a CONNECT tunnel through the proxy to `address:port`; resolves with the raw socket once the proxy answered 2xx. */
function tunnel(proxy: EgressProxy, address: string, port: string): Promise<Socket> {
  const authority = hostPort(address, port)
  return new Promise((resolve, reject) => {
    const socket = net.connect(proxy.port, proxy.host)
    let head = Buffer.alloc(0)
    const fail = (err: Error) => {
      socket.destroy()
      reject(err)
    }
    socket.once('error', fail)
    socket.once('connect', () => {
      const auth = proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : ''
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${auth}\r\n`)
    })
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk])
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) {
        if (head.length > maxAnswerHead) fail(Object.assign(new Error('the proxy sent no CONNECT answer'), { code: 'ECONNRESET' }))
        return
      }
      socket.off('data', onData)
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(head.subarray(0, end).toString('latin1'))?.[1]
      if (!status || !status.startsWith('2')) return fail(Object.assign(new Error(`the proxy refused CONNECT ${authority}: ${status ?? 'no status'}`), { code: 'ECONNREFUSED' }))
      socket.off('error', fail)
      // Bytes after the answer's head already belong to the tunnel.
      const rest = head.subarray(end + 4)
      if (rest.length) socket.unshift(rest)
      resolve(socket)
    }
    socket.on('data', onData)
  })
}

/**
 * An undici connector that reaches every target through the proxy: it resolves the target and checks the
 * address (the SSRF guard, unless `guarded` is false), has the proxy CONNECT to that address, and speaks TLS
 * over the tunnel with the target's host name as SNI, so certificates are checked for the name; the HTTP
 * request keeps its Host header. A proxy that resolved the name itself could be sent elsewhere by DNS.
 */
export function proxyConnector(proxy: EgressProxy, { guarded, tls }: { guarded: boolean; tls?: ClientTls }): buildConnector.connector {
  const overTls = buildConnector({ ...(tls?.cert ? { cert: tls.cert, key: tls.key } : {}), ...(tls?.ca ? { ca: tls.ca } : {}) })
  return (options, callback) => {
    const port = options.port || (options.protocol === 'https:' ? '443' : '80')
    checkedAddress(options.hostname, guarded)
      .then((address) => tunnel(proxy, address, port))
      .then(
        (socket) => {
          if (options.protocol !== 'https:') return callback(null, socket)
          const servername = ipLiteral(unbracketed(options.hostname)) === null ? options.hostname : undefined
          overTls({ ...options, ...(servername ? { servername } : {}), httpSocket: socket }, callback)
        },
        (err: Error) => callback(err, null),
      )
  }
}
