import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { OperatorEvent } from '../../src/model/operator-event.js'
import { startFakeEventBridge, type FakeEventBridge } from '../fakes/eventbridge-server.js'
import { startFakeKafka, type FakeKafka } from '../fakes/kafka-server.js'
import { engineKinds } from '../support/engines.js'
import { closedPort } from '../support/publishers.js'
import { waitFor } from '../support/receiver.js'

const quick = { pollIntervalMs: 50, retry: { schedule: [50], jitter: 0 }, timeoutMs: 2_000 }
const key = 'AKIAOPERATORSINK0001'
const secret = 'operator-sink-eventbridge-secret-0123456'

for (const kind of engineKinds()) {
  describe.runIf(kind.available)(`operator events to a kafka or aws_eventbridge sink: ${kind.name}`, () => {
    let broker: FakeKafka
    let bus: FakeEventBridge
    beforeAll(async () => {
      ;[broker, bus] = await Promise.all([startFakeKafka({ topics: ['outflow-operator'] }), startFakeEventBridge({ accessKeyId: key, secretAccessKey: secret, buses: ['ops'] })])
    })
    afterAll(async () => {
      await kind.cleanup()
      await Promise.all([broker.close(), bus.close()])
    })

    /** An engine whose sink is `destination`, and a destination that fails once: an attempt.failed operator event. */
    async function failedAttemptEvent(destination: { type: 'kafka' | 'aws_eventbridge'; config: Record<string, unknown>; credentials?: Record<string, unknown> }, tenantId: string) {
      const outflow = await kind.create({ delivery: quick, operatorEvents: { destination, topics: ['attempt.failed'], tenantId: `${tenantId}-operator` } })
      await outflow.upsertTenant(tenantId, {})
      const bad = await outflow.createDestination(tenantId, { type: 'webhook', topics: ['order.created'], config: { url: `http://127.0.0.1:${await closedPort()}/hook` } })
      await outflow.publish({ tenant_id: tenantId, topic: 'order.created', data: { n: 1 }, eligible_for_retry: false })
      return { outflow, bad }
    }

    it('produces each operator event to the kafka sink: value = the event, keyed by its id, topic in the headers', async () => {
      const { outflow, bad } = await failedAttemptEvent({ type: 'kafka', config: { brokers: broker.broker, topic: 'outflow-operator' } }, `kafka-sink-${kind.name.replace(/\W/g, '')}`)
      const record = await waitFor(() => broker.log.find((r) => (JSON.parse(r.value!) as OperatorEvent).data?.destination?.id === bad.id), 15_000, 'the attempt.failed event in the sink topic')
      const event = JSON.parse(record.value!) as OperatorEvent
      expect(event).toMatchObject({ topic: 'attempt.failed', id: expect.stringMatching(/^opv_/), data: { attempt: { error_kind: 'connection_refused' } } })
      expect(record).toMatchObject({ key: event.id, acks: -1 })
      expect(record.headers).toMatchObject({ 'event-id': event.id, topic: 'attempt.failed' })
      await outflow.close()
    })

    it('puts each operator event on the aws_eventbridge sink: detail-type = its topic, detail = { metadata, data }', async () => {
      const sink = { type: 'aws_eventbridge' as const, config: { event_bus: 'ops', endpoint: bus.endpoint, source: 'outflow.operator' }, credentials: { key, secret } }
      const { outflow, bad } = await failedAttemptEvent(sink, `eventbridge-sink-${kind.name.replace(/\W/g, '')}`)
      const entry = await waitFor(() => bus.events.find((e) => (JSON.parse(e.detail) as { data: OperatorEvent }).data.data?.destination?.id === bad.id), 15_000, 'the attempt.failed event on the bus')
      expect(entry).toMatchObject({ bus: 'ops', source: 'outflow.operator', detailType: 'attempt.failed' })
      const detail = JSON.parse(entry.detail) as { metadata: Record<string, string>; data: OperatorEvent }
      expect(detail.data).toMatchObject({ topic: 'attempt.failed', data: { attempt: { error_kind: 'connection_refused' } } })
      expect(detail.metadata).toMatchObject({ 'event-id': detail.data.id, topic: 'attempt.failed' })
      await outflow.close()
    })
  })
}
