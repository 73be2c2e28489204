import { describe, expect, it } from 'vitest'
import { checkedHost, lazyConnection } from '../../src/destinations/lazy-connection.js'

/** A connection that records whether it was closed. */
interface Conn {
  n: number
  closed: boolean
}

/** A lazy connection over numbered fake connections; `opens` holds the signal each opening got. */
function fakeConnections({ failFirst = false, hang = false } = {}) {
  const opens: AbortSignal[] = []
  const conns: Conn[] = []
  const connection = lazyConnection<Conn>({
    async open(signal) {
      opens.push(signal)
      if (failFirst && opens.length === 1) throw new Error('ECONNREFUSED')
      // Like a connect that never completes and ignores its signal.
      if (hang && opens.length === 1) await new Promise(() => {})
      const conn = { n: opens.length, closed: false }
      conns.push(conn)
      return conn
    },
    close: (conn) => void (conn.closed = true),
  })
  return { connection, opens, conns }
}

const live = () => new AbortController().signal

describe('lazyConnection', () => {
  it('opens on first use and shares one connection, even between publishes that ask at once', async () => {
    const { connection, opens } = fakeConnections()
    const [a, b] = await Promise.all([connection.get(live()), connection.get(live())])
    expect(a).toBe(b)
    expect(await connection.get(live())).toBe(a)
    expect(opens).toHaveLength(1)
  })

  it('lets fifty publishes wait on one opening without a listener leak warning', async () => {
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      const { connection, opens } = fakeConnections()
      const all = await Promise.all([...Array(50)].map(() => connection.get(live())))
      expect(new Set(all).size).toBe(1)
      expect(opens).toHaveLength(1)
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings).not.toContain('MaxListenersExceededWarning')
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('forgets a connection that failed to open, so the next publish opens another', async () => {
    const { connection } = fakeConnections({ failFirst: true })
    await expect(connection.get(live())).rejects.toThrow('ECONNREFUSED')
    expect(await connection.get(live())).toMatchObject({ n: 2 })
  })

  it('drops a connection: closes it, and the next publish opens a new one; dropping an old one changes nothing', async () => {
    const { connection } = fakeConnections()
    const first = await connection.get(live())
    connection.drop(first)
    const second = await connection.get(live())
    expect(second).toMatchObject({ n: 2 })
    await connection.close()
    expect(first.closed).toBe(true)
  })

  it('gives up an opening at the deadline of the publish that started it; a publish with time left opens its own', async () => {
    const { connection, opens } = fakeConnections({ hang: true })
    const deadline = new AbortController()
    const first = connection.get(deadline.signal)
    const second = connection.get(live())
    deadline.abort(new Error('deadline'))
    await expect(first).rejects.toThrow('deadline')
    expect(opens[0]!.aborted).toBe(true)
    expect(await second).toMatchObject({ n: 2 })
    expect(opens[1]!.aborted).toBe(false)
  })

  it('stops waiting once the signal aborts, and rejects at once when it already has', async () => {
    const { connection } = fakeConnections({ hang: true })
    const deadline = new AbortController()
    deadline.abort(new Error('too late'))
    await expect(connection.get(deadline.signal)).rejects.toThrow('too late')
  })

  it('closes the open connection on close() and opens none after it', async () => {
    const { connection, opens } = fakeConnections()
    const conn = await connection.get(live())
    await connection.close()
    expect(conn.closed).toBe(true)
    expect(connection.closed).toBe(true)
    await expect(connection.get(live())).rejects.toThrow(/closed/)
    expect(opens).toHaveLength(1)
  })

  it('checks the host only while the publisher is open, and again after the check', async () => {
    const state = { closed: false }
    const found = { addresses: undefined }
    expect(await checkedHost(state, async () => found)).toBe(found)
    const refused = { failure: { ok: false as const, error_kind: 'ssrf' as const, error: 'private address' } }
    expect(await checkedHost(state, async () => refused)).toBe(refused)
    // Closed while the host was being resolved: nothing is sent.
    const closing = await checkedHost(state, async () => ((state.closed = true), found))
    expect(closing).toEqual({ failure: { ok: false, error_kind: 'unknown', error: 'the publisher is closed' } })
    let checked = 0
    expect(await checkedHost(state, async () => (checked++, found))).toEqual(closing)
    expect(checked).toBe(0)
  })
})
