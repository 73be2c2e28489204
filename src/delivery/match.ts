import type { EventRecord, PublishTarget } from '../storage/storage.js'
import { matchesFilter } from './filter.js'
import { matchesTopic } from './topics.js'

/** The destinations of `event` among a tenant's enabled destinations: topics, filter and `destination_id`. */
export function matchDestinations<D extends PublishTarget>(event: EventRecord, candidates: D[], only?: string): D[] {
  const subject = { id: event.id, topic: event.topic, time: event.time.toISOString(), metadata: event.metadata, data: event.data }
  return candidates.filter(
    (d) => (only === undefined || d.id === only) && matchesTopic(d.topics, event.topic) && (!d.filter || matchesFilter(d.filter, subject)),
  )
}
