import { afterAll, describe, expect, it } from 'vitest'
import { engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// A retry that falls due at once is claimed as soon as its failed attempt's result is written, sometimes before
// the worker has let go of the delivery (it does after reporting the batch's outcomes). That claim leases the row
// to this worker again: the worker must attempt it then, not leave it leased until the lease expires.
for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`reclaimed retries: ${kind.name}`, () => {
    afterAll(() => kind.cleanup())

    it('attempts a retry that was claimed while its failed attempt was being let go, without waiting for its lease', async () => {
      const seen = new Set<string>()
      const receiver = await startReceiver((r) => {
        const id = String(r.headers['webhook-id'])
        if (seen.has(id)) return {}
        seen.add(id)
        return { status: 500 }
      })
      try {
        // A lease far longer than the wait: a stranded retry would only be attempted after it.
        const outflow = await kind.create({
          delivery: { pollIntervalMs: 20, leaseMs: 120_000, retry: { schedule: [1], jitter: 0 } },
          alerts: { autoDisable: false },
        })
        await outflow.upsertTenant('acme', {})
        await outflow.createDestination('acme', { type: 'webhook', topics: '*', config: { url: receiver.url } })
        const events = 300
        for (let i = 0; i < events; i += 50)
          await outflow.publishMany(Array.from({ length: 50 }, (_, k) => ({ tenant_id: 'acme', topic: 'order.created', data: { n: i + k } })))
        await waitFor(() => receiver.received.length >= 2 * events, 30_000, 'every event failed once and then delivered').catch(() => undefined)
        expect({ events: seen.size, requests: receiver.received.length }).toEqual({ events, requests: 2 * events })
      } finally {
        await receiver.close()
      }
    }, 60_000)
  })
}
