import { setTimeout as sleep } from 'node:timers/promises'
import { afterAll, describe, expect, it } from 'vitest'
import type { Storage } from '../../src/storage/storage.js'
import { engineKinds } from '../support/engines.js'
import { startReceiver, waitFor } from '../support/receiver.js'

// An idle engine's looks for rare work (delivery/idle-polls.ts): where a read that names no tenant reaches every
// shard (Citus), job claims and the FIFO safety net run seldom; claims keep the poll interval everywhere.
const quick = { pollIntervalMs: 50 }

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`idle polls: ${kind.name}`, () => {
    afterAll(() => kind.cleanup())

    /** An engine over a fresh storage that says whether reads reach every shard, counting its idle looks. */
    async function countingEngine(readsEveryShard: boolean) {
      const storage = await kind.openStorage()
      const looks = { claims: 0, replayJobs: 0, expungeJobs: 0, promotions: 0 }
      const counted: Storage = {
        ...storage,
        readsEveryShard,
        claimDueDeliveries: (q) => (looks.claims++, storage.claimDueDeliveries(q)),
        claimReplayJob: (...a) => (looks.replayJobs++, storage.claimReplayJob(...a)),
        claimExpungeJob: (...a) => (looks.expungeJobs++, storage.claimExpungeJob(...a)),
        promoteWaitingDeliveries: (now) => (looks.promotions++, storage.promoteWaitingDeliveries(now)),
      }
      const outflow = await kind.create({ storage: counted, delivery: quick })
      return { outflow, looks }
    }

    it('where reads reach every shard, claims every poll interval but looks for jobs and promotes waiting deliveries once in a while', async () => {
      const { looks } = await countingEngine(true)
      await sleep(1_500)
      // 30 poll intervals: one look for each kind of job and one promotion, at start (the next come after 10 s and 30 s).
      expect(looks.claims).toBeGreaterThanOrEqual(5)
      expect(looks).toMatchObject({ replayJobs: 1, expungeJobs: 1, promotions: 1 })
    })

    it('elsewhere, looks for jobs every poll interval and promotes at most once a second', async () => {
      const { looks } = await countingEngine(false)
      await sleep(1_500)
      expect(looks.claims).toBeGreaterThanOrEqual(5)
      expect(looks.replayJobs).toBeGreaterThanOrEqual(5)
      expect(looks.expungeJobs).toBeGreaterThanOrEqual(5)
      expect(looks.promotions).toBeGreaterThanOrEqual(1)
      expect(looks.promotions).toBeLessThanOrEqual(2)
    })

    it('where reads reach every shard, promotes waiting deliveries once a second again after it wrote an ordered delivery\'s result', async () => {
      const receiver = await startReceiver(() => ({}))
      try {
        const { outflow, looks } = await countingEngine(true)
        await outflow.upsertTenant('fifo', {})
        await outflow.createDestination('fifo', { type: 'webhook', topics: ['*'], config: { url: `${receiver.url}/fifo` }, delivery: { ordering: 'fifo' } })
        await outflow.publish({ tenant_id: 'fifo', topic: 'x', data: {} })
        await waitFor(async () => (await outflow.listEvents('fifo', {})).models.length === 1, 5_000, 'the ordered result written')
        const before = looks.promotions
        await sleep(2_500)
        // Once a second for a minute after an ordered result, where it would otherwise wait 30 s.
        expect(looks.promotions - before).toBeGreaterThanOrEqual(2)
      } finally {
        await receiver.close()
      }
    })

    it('a job created on an engine that looks seldom starts at once: the engine wakes its own runners', async () => {
      const { outflow, looks } = await countingEngine(true)
      await waitFor(() => looks.expungeJobs === 1, 5_000, 'the look at start')
      await outflow.upsertTenant('idle', {})
      const from = new Date(Date.now() - 60_000)
      const job = await outflow.expungeEvents('idle', { from, topic: 'none' })
      if (!('id' in job)) throw new Error('expected an erasure job')
      // Well inside the 10 s between two idle looks.
      await waitFor(async () => (await outflow.getExpungeJob('idle', job.id)).status === 'done', 5_000, 'the job done')
      // The look at start and the one the job's creation woke (and, once the job ended, perhaps one more): none of
      // them waited out the 10 s pause.
      expect(looks.expungeJobs).toBeGreaterThanOrEqual(2)
      expect(looks.expungeJobs).toBeLessThanOrEqual(3)
    })
  })
}
