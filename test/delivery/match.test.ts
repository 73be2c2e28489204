import { describe, expect, it } from 'vitest'
import { matchDestinations } from '../../src/delivery/match.js'
import type { EventRecord, PublishTarget } from '../../src/storage/storage.js'

const time = new Date('2026-03-01T12:00:00.000Z')
const event: EventRecord = {
  tenant_id: 't',
  id: 'evt_1',
  topic: 'order.created',
  time,
  data: { amount: 250 },
  metadata: { region: 'eu' },
  eligible_for_retry: true,
  created_at: time,
}
const target = (id: string, topics: string[], filter: Record<string, unknown> | null = null): PublishTarget => ({ id, topics, filter, disabled_at: null, delivery: null })
const ids = (targets: PublishTarget[]) => targets.map((t) => t.id)

describe('matchDestinations', () => {
  it('keeps the destinations whose topics match the event, in their order', () => {
    const targets = [target('des_all', ['*']), target('des_paid', ['order.paid']), target('des_order', ['user.deleted', 'order.*']), target('des_exact', ['order.created'])]
    expect(ids(matchDestinations(event, targets))).toEqual(['des_all', 'des_order', 'des_exact'])
  })

  it('keeps only the destination named by destination_id, when it matches', () => {
    const targets = [target('des_a', ['*']), target('des_b', ['*']), target('des_c', ['order.paid'])]
    expect(ids(matchDestinations(event, targets, 'des_b'))).toEqual(['des_b'])
    expect(ids(matchDestinations(event, targets, 'des_c'))).toEqual([])
    expect(ids(matchDestinations(event, targets, 'des_unknown'))).toEqual([])
  })

  it('applies each filter to the id, topic, ISO time, metadata and data of the event', () => {
    const targets = [
      target('des_id', ['*'], { id: 'evt_1' }),
      target('des_other_id', ['*'], { id: 'evt_2' }),
      target('des_topic', ['*'], { topic: { $startsWith: 'order.' } }),
      target('des_time', ['*'], { time: '2026-03-01T12:00:00.000Z' }),
      target('des_late', ['*'], { time: { $gt: '2026-03-02' } }),
      target('des_metadata', ['*'], { metadata: { region: 'eu' } }),
      target('des_other_region', ['*'], { metadata: { region: 'us' } }),
      target('des_data', ['*'], { data: { amount: { $gte: 100 } } }),
      target('des_small', ['*'], { data: { amount: { $lt: 100 } } }),
    ]
    expect(ids(matchDestinations(event, targets))).toEqual(['des_id', 'des_topic', 'des_time', 'des_metadata', 'des_data'])
  })

  it('needs both the topic and the filter to match', () => {
    const targets = [target('des_topic_only', ['order.paid'], { data: { amount: 250 } }), target('des_both', ['order.*'], { data: { amount: 250 } })]
    expect(ids(matchDestinations(event, targets))).toEqual(['des_both'])
  })

  it('treats an empty filter as matching everything', () => {
    expect(ids(matchDestinations(event, [target('des_empty', ['*'], {})]))).toEqual(['des_empty'])
  })
})
