import net from 'node:net'

/** A TCP relay on loopback in front of a server, so a test can count the connections a client opens and cut them. */
export interface TcpProxy {
  port: number
  /** Connections accepted so far. */
  connections(): number
  /** Connections open now. */
  open(): number
  /** Destroy every open connection (both sides). */
  cutAll(): void
  /** Stop relaying on the open connections, keeping them open: the client waits on a hung peer. */
  freezeAll(): void
  close(): Promise<void>
}

/**
 * Start a relay to `host:port`.
 *
 * @example
 * const proxy = await startTcpProxy('127.0.0.1', 6379)
 * // point the client at 127.0.0.1:${proxy.port}, then: proxy.connections() === 1
 */
export async function startTcpProxy(host: string, port: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>()
  const upstreams = new Map<net.Socket, net.Socket>()
  let count = 0
  const server = net.createServer((client) => {
    count++
    sockets.add(client)
    const upstream = net.connect({ host, port })
    upstreams.set(client, upstream)
    client.pipe(upstream).pipe(client)
    const drop = () => (client.destroy(), upstream.destroy(), sockets.delete(client))
    client.on('error', drop).on('close', drop)
    upstream.on('error', drop).on('close', drop)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    connections: () => count,
    open: () => sockets.size,
    cutAll: () => sockets.forEach((s) => s.destroy()),
    freezeAll: () => sockets.forEach((s) => (s.unpipe(), upstreams.get(s)?.unpipe())),
    close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))),
  }
}

/** A loopback server that accepts connections and never answers: a client waiting on it runs into its deadline. */
export async function startSilentServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<net.Socket>()
  const server = net.createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => {}).on('close', () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((resolve) => (sockets.forEach((s) => s.destroy()), server.close(() => resolve()))),
  }
}
