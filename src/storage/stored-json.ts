import type { EventRecord } from './storage.js'

// An attempt sends an event's data as the JSON text the storage holds, instead of serialising it again, and a
// claimed SQLite row's data is parsed only if something reads it: parsing and serialising a 50 KB order took
// about 760 µs of an attempt. The text rides on the event as `data_json` (a plain field: a WeakMap beside the
// events, or a property defined per object, cost the 1 KB drain about a tenth of its CPU).

/** An event read from storage whose `data` is parsed from its stored text on first read. */
class StoredEvent implements EventRecord {
  #data: unknown
  #parsed = false
  constructor(
    readonly tenant_id: string,
    readonly id: string,
    readonly topic: string,
    readonly time: Date,
    readonly data_json: string,
    readonly metadata: Record<string, string>,
    readonly eligible_for_retry: boolean,
    readonly created_at: Date,
  ) {}

  get data(): unknown {
    if (!this.#parsed) {
      this.#data = JSON.parse(this.data_json) as unknown
      this.#parsed = true
    }
    return this.#data
  }

  /** A plain event, as JSON.stringify and anything that copies the event should see it (data included). */
  toJSON(): EventRecord {
    const { tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at } = this
    return { tenant_id, id, topic, time, data, metadata, eligible_for_retry, created_at }
  }
}

/**
 * An event whose `data` is parsed from `text` the first time it is read, with `text` as its `data_json`.
 *
 * @example
 * const event = eventWithStoredData({ tenant_id, id, topic, time, metadata, eligible_for_retry, created_at }, '{"n":1}')
 */
export function eventWithStoredData(f: Omit<EventRecord, 'data' | 'data_json'>, text: string): EventRecord {
  return new StoredEvent(f.tenant_id, f.id, f.topic, f.time, text, f.metadata, f.eligible_for_retry, f.created_at)
}
