import { createServer, type Server } from 'node:http'
import type { AddressInfo, Socket } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Outflow } from '../../src/engine.js'
import { engineKinds } from '../support/engines.js'
import { waitFor } from '../support/receiver.js'

// Receivers that misbehave at the network level while they are "faulty", then recover: each
// delivery must end recorded as a success once its receiver answers properly, with the failed
// attempts logged under the right kind, and nothing stuck behind them.
const timeoutMs = 2_000
const EVENTS = 5
/** Bodies large enough to arrive in several chunks, so a receiver can cut one off in the middle. */
const payload = 'x'.repeat(200_000)

type Behaviour = 'hang' | 'reset-request' | 'reset-response' | 'late'

/** A receiver server whose paths misbehave until healed (`heal(path)`); `ok` counts proper 200 answers per path and webhook-id. */
async function startFaultyReceiver() {
  const healed = new Set<string>()
  const requests = new Map<string, number>()
  const ok = new Map<string, Set<string>>()
  const sockets = new Set<Socket>()
  const server: Server = createServer((req, res) => {
    const path = (req.url ?? '/').slice(1) as Behaviour
    requests.set(path, (requests.get(path) ?? 0) + 1)
    const answer = () => {
      if (res.destroyed) return
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok')
    }
    const faulty = !healed.has(path)
    if (faulty && path === 'reset-request') {
      // Reset in the middle of the request body.
      req.once('data', () => req.socket.destroy())
      return
    }
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (!faulty) {
        const set = ok.get(path) ?? new Set<string>()
        set.add(String(req.headers['webhook-id']))
        ok.set(path, set)
        return answer()
      }
      if (path === 'hang') return // accepts, reads, never answers
      if (path === 'reset-response') {
        // A 200 whose body never completes: the connection is reset after a few bytes.
        res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '1000' })
        res.write('partial')
        setTimeout(() => res.socket?.destroy(), 20).unref()
        return
      }
      // 200, after the engine gave up: once it closed the connection (its timeout), or at five timeouts if it
      // did not. A fixed 2.5 s answer raced the engine's 2 s timer on a loaded machine, and sometimes won.
      if (path === 'late') {
        const late = setTimeout(answer, timeoutMs * 5).unref()
        req.socket.once('close', () => (clearTimeout(late), answer()))
      }
    })
  })
  server.on('connection', (s) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests: (path: Behaviour) => requests.get(path) ?? 0,
    answered: (path: Behaviour) => ok.get(path) ?? new Set<string>(),
    heal: (path: Behaviour) => void healed.add(path),
    async close() {
      for (const s of sockets) s.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

const behaviours: { path: Behaviour; kind: 'timeout' | 'network' }[] = [
  { path: 'hang', kind: 'timeout' },
  { path: 'reset-request', kind: 'network' },
  { path: 'reset-response', kind: 'network' },
  { path: 'late', kind: 'timeout' },
]

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`receiver faults: ${kind.name}`, () => {
    let outflow: Outflow
    let receiver: Awaited<ReturnType<typeof startFaultyReceiver>>
    const errors: string[] = []
    beforeAll(async () => {
      receiver = await startFaultyReceiver()
      const logger = { debug() {}, info() {}, warn() {}, error: (_: unknown, message: string) => void errors.push(message) }
      outflow = await kind.create({ logger, delivery: { timeoutMs, pollIntervalMs: 50, retry: { schedule: Array.from({ length: 30 }, () => 200), jitter: 0 } } })
    })
    afterAll(async () => {
      await kind.cleanup()
      await receiver.close()
    })

    it('a receiver that hangs, resets mid-body or answers after the timeout gets every event once it behaves', async () => {
      await outflow.upsertTenant('acme', {})
      const destinations = new Map<Behaviour, string>()
      for (const { path } of behaviours) {
        const d = await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: `${receiver.url}/${path}` } })
        destinations.set(path, d.id)
      }
      const published = await outflow.publishMany(Array.from({ length: EVENTS }, (_, i) => ({ tenant_id: 'acme', topic: 'order.created', data: { i, payload } })))
      // Every receiver misbehaves at least twice (a retry too), then heals at once: one that failed fast while a
      // slow one (hang, late) was still collecting its failures used to run out of retries first on a busy machine.
      await Promise.all(
        behaviours.map(async ({ path }) => {
          // /hang and /late cost a 2 s timeout per attempt, which a loaded machine stretches: the bound only
          // catches a receiver that is never retried.
          await waitFor(() => receiver.requests(path) >= EVENTS + 1, 60_000, `failed attempts at /${path}`)
          receiver.heal(path)
        }),
      )
      for (const { path } of behaviours)
        await waitFor(() => published.every((p) => receiver.answered(path).has(p.id)), 60_000, `every event answered at /${path}`)

      for (const { path, kind: errorKind } of behaviours) {
        const destinationId = destinations.get(path)!
        const page = await waitFor(async () => {
          const events = await outflow.listEvents('acme', { destination_id: destinationId, limit: 100 })
          return events.models.length === EVENTS && events.models.every((e) => e.status === 'success') && events
        }, 15_000, `every delivery to /${path} recorded as a success`)
        expect(page.models).toHaveLength(EVENTS)
        const attempts = (await Promise.all(published.map((p) => outflow.listDeliveries('acme', p.id)))).flat().filter((a) => a.destination_id === destinationId)
        expect(attempts.filter((a) => a.status === 'failed').map((a) => `${path} ${a.error_kind}`)).toContain(`${path} ${errorKind}`)
        expect(attempts.filter((a) => a.status === 'success')).toHaveLength(EVENTS)
      }
      expect(errors).toEqual([])
    }, 180_000)
  })
}
