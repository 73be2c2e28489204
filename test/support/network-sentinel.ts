import net from 'node:net'
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest'

/**
 * Network sentinel for a test file: while the file runs, `net.Socket.prototype.connect` is wrapped so that a socket
 * connect to anything but loopback (or a unix socket) never reaches the network — no DNS, no packet.
 *
 * - `'throw'`: every connect is recorded in `connectAttempts` (cleared before each test); one to a non-loopback host is
 *   recorded in `violations` and throws, and every later test fails while `violations` is not empty.
 * - `'refuse'`: a connect to a non-loopback host is recorded in `stopped` and fails as ECONNREFUSED on the next tick.
 *   A test that expects that takes the hosts out (`stopped.splice(0)`); any left behind fail the test.
 *
 * Call it once, at the top level of the test file, so the hooks belong to the file's root suite.
 */
export function installNetworkSentinel(mode: 'throw'): { connectAttempts: string[]; violations: string[] }
export function installNetworkSentinel(mode: 'refuse'): { stopped: string[] }
export function installNetworkSentinel(mode: 'throw' | 'refuse'): { connectAttempts: string[]; violations: string[] } | { stopped: string[] } {
  const realConnect = net.Socket.prototype.connect
  const callReal = realConnect as (this: net.Socket, ...a: unknown[]) => net.Socket
  const restore = () => {
    net.Socket.prototype.connect = realConnect
  }

  if (mode === 'throw') {
    const connectAttempts: string[] = []
    const violations: string[] = []
    beforeAll(() => {
      net.Socket.prototype.connect = function sentinelConnect(this: net.Socket, ...args: unknown[]) {
        const host = connectHost(args)
        connectAttempts.push(host)
        if (!isLoopbackHost(host)) {
          violations.push(host)
          throw new Error(`test sentinel: refused a connection to non-loopback host ${host}`)
        }
        return callReal.apply(this, args)
      } as typeof realConnect
    })
    afterAll(restore)
    beforeEach(() => {
      connectAttempts.length = 0
    })
    afterEach(() => {
      expect(violations).toEqual([])
    })
    return { connectAttempts, violations }
  }

  const stopped: string[] = []
  beforeAll(() => {
    net.Socket.prototype.connect = function sentinelConnect(this: net.Socket, ...args: unknown[]) {
      const host = connectHost(args)
      if (isLoopbackHost(host)) return callReal.apply(this, args)
      stopped.push(host)
      process.nextTick(() => this.destroy(Object.assign(new Error(`connect ECONNREFUSED ${host} (stopped by the test sentinel)`), { code: 'ECONNREFUSED' })))
      return this
    } as typeof realConnect
  })
  afterAll(restore)
  afterEach(() => {
    expect(stopped.splice(0), 'connections to non-loopback hosts').toEqual([])
  })
  return { stopped }
}

/** The host a `socket.connect(...)` call targets: `unix:<path>` for a unix socket, `localhost` when none is given. */
export function connectHost(args: unknown[]): string {
  const first = Array.isArray(args[0]) ? (args[0] as unknown[])[0] : args[0]
  if (typeof first === 'object' && first !== null) {
    const options = first as { host?: string; path?: string }
    return options.path ? `unix:${options.path}` : (options.host ?? 'localhost')
  }
  if (typeof first === 'number' || /^\d+$/.test(String(first))) return typeof args[1] === 'string' ? args[1] : 'localhost'
  return `unix:${String(first)}`
}

/** `localhost`, a unix socket, or a loopback IP literal (127/8, ::1, ::ffff:127/104); any other name is not loopback. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost' || host.startsWith('unix:')) return true
  const bare = host.replace(/^\[|\]$/g, '')
  return net.isIP(bare) !== 0 && (bare === '::1' || /^127\./.test(bare) || /^::ffff:127\./i.test(bare))
}
