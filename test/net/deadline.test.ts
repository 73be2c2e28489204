import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getEventListeners } from 'node:events'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { deadlineShareMs, startDeadline, untilAborted } from '../../src/net/deadline.js'
import { closeHttpClients, DeliveryError, sendHttp } from '../../src/net/http-client.js'

const aborted = (signal: AbortSignal) => new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason), { once: true }))

describe('startDeadline', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('aborts with a timeout DeliveryError naming the limit', async () => {
    const deadline = startDeadline(20)
    const reason = await aborted(deadline.signal)
    expect(reason).toBeInstanceOf(DeliveryError)
    expect(reason).toMatchObject({ kind: 'timeout', message: 'no complete response within 20 ms' })
    deadline.clear()
  })

  it('gives deadlines of one limit started within the same few ms one signal, aborted once the last of them is due', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    // At the start of a window.
    vi.advanceTimersByTime(deadlineShareMs - (performance.now() % deadlineShareMs))
    const first = startDeadline(1_000)
    vi.advanceTimersByTime(deadlineShareMs - 1)
    const second = startDeadline(1_000)
    const otherLimit = startDeadline(2_000)
    expect(second.signal).toBe(first.signal)
    expect(otherLimit.signal).not.toBe(first.signal)
    // The second started deadlineShareMs - 1 after the first: it has its whole limit too.
    vi.advanceTimersByTime(1_000 - 1)
    expect(first.signal.aborted).toBe(false)
    vi.advanceTimersByTime(2)
    expect(first.signal.aborted).toBe(true)
    // One started in the next window has a signal of its own, not the aborted one.
    const third = startDeadline(1_000)
    expect(third.signal.aborted).toBe(false)
    for (const d of [first, second, otherLimit, third]) d.clear()
  })

  it('stops the shared timer once every deadline on it is cleared', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const first = startDeadline(500)
    const second = startDeadline(500)
    first.clear()
    first.clear() // twice is once
    expect(vi.getTimerCount()).toBe(1)
    second.clear()
    expect(vi.getTimerCount()).toBe(0)
    vi.advanceTimersByTime(1_000)
    expect(second.signal.aborted).toBe(false)
  })

  it('shares one signal among a bounded number of deadlines', () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance'] })
    const deadlines = Array.from({ length: 200 }, () => startDeadline(700))
    const signals = new Set(deadlines.map((d) => d.signal))
    expect(signals.size).toBeGreaterThan(1)
    expect(signals.size).toBeLessThan(deadlines.length)
    for (const d of deadlines) d.clear()
    expect(vi.getTimerCount()).toBe(0)
  })

  it('is removed from a shared signal by untilAborted once the work settles', async () => {
    const deadline = startDeadline(60_000)
    await Promise.all(Array.from({ length: 50 }, (_, i) => untilAborted(Promise.resolve(i), deadline.signal)))
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
    deadline.clear()
  })
})

describe('startDeadline with HTTP requests', () => {
  let server: Server
  let url: string
  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url === '/slow') {
        setTimeout(() => res.end('late'), 2_000).unref()
        return
      }
      res.end('ok')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  // Time stands still for the deadlines (only): the ones a test starts share one signal however loaded the machine.
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['performance'] })
  })
  afterEach(() => {
    vi.useRealTimers()
  })
  afterAll(async () => {
    await closeHttpClients()
    server.closeAllConnections()
    await new Promise((resolve) => server.close(resolve))
  })

  it('leaves no abort listener behind once many requests on one signal have ended, and warns of none', async () => {
    const warnings: Error[] = []
    const onWarning = (w: Error) => warnings.push(w)
    process.on('warning', onWarning)
    try {
      const deadlines = Array.from({ length: 40 }, () => startDeadline(30_000))
      const signal = deadlines[0]!.signal
      expect(deadlines.every((d) => d.signal === signal)).toBe(true)
      const responses = await Promise.all(
        deadlines.map((d) => sendHttp(`${url}/fast`, { method: 'POST', headers: {}, body: '{}' }, { allowPrivateNetworks: true, signal: d.signal })),
      )
      expect(responses.map((r) => r.body)).toEqual(deadlines.map(() => 'ok'))
      for (const d of deadlines) d.clear()
      // undici lets go of the signal when the response stream closes, just after its body was read.
      await new Promise((resolve) => setImmediate(resolve))
      expect(getEventListeners(signal, 'abort')).toHaveLength(0)
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings.filter((w) => w.name === 'MaxListenersExceededWarning')).toEqual([])
    } finally {
      process.off('warning', onWarning)
    }
  })

  it('lets go of the signal after a failed exchange too', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise((resolve) => closed.close(resolve))
    const deadline = startDeadline(30_000)
    const failed = await sendHttp(`http://127.0.0.1:${port}/`, { method: 'POST', headers: {}, body: '{}' }, { allowPrivateNetworks: true, signal: deadline.signal }).catch((err: unknown) => err)
    deadline.clear()
    expect(failed).toMatchObject({ kind: 'connection_refused' })
    expect(getEventListeners(deadline.signal, 'abort')).toHaveLength(0)
  })

  it('sends nothing once the deadline has passed', async () => {
    let requests = 0
    const counting = createServer((_req, res) => (requests++, res.end('ok')))
    await new Promise<void>((resolve) => counting.listen(0, '127.0.0.1', resolve))
    try {
      const controller = new AbortController()
      controller.abort(new DeliveryError('timeout', 'no complete response within 5 ms'))
      const failed = await sendHttp(`http://127.0.0.1:${(counting.address() as AddressInfo).port}/`, { method: 'POST', headers: {}, body: '{}' }, { allowPrivateNetworks: true, signal: controller.signal }).catch(
        (err: unknown) => err,
      )
      expect(failed).toMatchObject({ kind: 'timeout', message: 'no complete response within 5 ms' })
      expect(requests).toBe(0)
    } finally {
      await new Promise((resolve) => counting.close(resolve))
    }
  })

  it('ends a request that outlives its limit as a timeout naming the limit, while one sharing its signal completed', async () => {
    const fast = startDeadline(150)
    const late = startDeadline(150)
    expect(late.signal).toBe(fast.signal)
    const ok = await sendHttp(`${url}/fast`, { method: 'POST', headers: {}, body: '{}' }, { allowPrivateNetworks: true, signal: fast.signal })
    fast.clear()
    expect(ok.status).toBe(200)
    const failed = await sendHttp(`${url}/slow`, { method: 'POST', headers: {}, body: '{}' }, { allowPrivateNetworks: true, signal: late.signal }).catch((err: unknown) => err)
    late.clear()
    expect(failed).toBeInstanceOf(DeliveryError)
    expect(failed).toMatchObject({ kind: 'timeout', message: 'no complete response within 150 ms' })
  })
})
