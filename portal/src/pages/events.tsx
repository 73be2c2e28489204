import { useState } from 'preact/hooks'
import { api, query, tenantPath } from '../api.js'
import { ErrorBox } from '../components/notice.js'
import { destinationName, listDestinations } from '../data.js'
import { formatTime, fromLocalInput, toLocalInput } from '../format.js'
import { href, navigate, type Route } from '../router.js'
import type { OutflowEvent, Page } from '../types.js'
import { useLoad } from '../use-load.js'
import { PageTitle } from './page-title.js'

// The event log: filters and keyset paging live in the route (#/events?status=failed&next=…), so the
// browser's back button and a reload of the view keep them.

const pageSize = 25
const filterNames = ['topic', 'status', 'destination_id', 'from', 'to'] as const

export function EventStatus({ status }: { status: 'success' | 'failed' }) {
  return status === 'success' ? <span class="badge badge-on">Delivered</span> : <span class="badge badge-bad">Failed</span>
}

export function EventsPage({ route }: { route: Route }) {
  const q = route.query
  const filters = Object.fromEntries(filterNames.map((n) => [n, q.get(n) ?? ''])) as Record<(typeof filterNames)[number], string>
  const cursor = { next: q.get('next'), prev: q.get('prev') }
  const destinations = useLoad(listDestinations, [])
  const events = useLoad(
    () =>
      api<Page<OutflowEvent>>(
        'GET',
        tenantPath(
          `/events${query({
            limit: pageSize,
            topic: filters.topic || undefined,
            status: filters.status || undefined,
            destination_id: filters.destination_id || undefined,
            'time[gte]': filters.from || undefined,
            'time[lte]': filters.to || undefined,
            next: cursor.next,
            prev: cursor.prev,
          })}`,
        ),
      ),
    [q.toString()],
  )
  const [draft, setDraft] = useState(filters)
  const names = new Map(destinations.data?.map((d) => [d.id, destinationName(d)]))

  const apply = (event: Event) => {
    event.preventDefault()
    navigate(['events'], draft)
  }
  const page = (direction: 'next' | 'prev', value: string | null) => navigate(['events'], { ...filters, [direction]: value })

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <PageTitle>Events</PageTitle>
        <button type="button" class="button" onClick={events.reload}>
          Refresh
        </button>
      </div>
      <form class="filters" onSubmit={apply} aria-label="Filter events">
        <div class="field">
          <label for="filter-topic">Topic</label>
          <input id="filter-topic" type="text" value={draft.topic} onInput={(e) => setDraft({ ...draft, topic: e.currentTarget.value })} spellcheck={false} />
        </div>
        <div class="field">
          <label for="filter-status">Status</label>
          <select id="filter-status" value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value })}>
            <option value="">Any</option>
            <option value="success">Delivered</option>
            <option value="failed">Failed</option>
          </select>
        </div>
        <div class="field">
          <label for="filter-destination">Destination</label>
          <select id="filter-destination" value={draft.destination_id} onChange={(e) => setDraft({ ...draft, destination_id: e.currentTarget.value })}>
            <option value="">Any</option>
            {destinations.data?.map((d) => (
              <option key={d.id} value={d.id}>
                {destinationName(d)}
              </option>
            ))}
          </select>
        </div>
        <div class="field">
          <label for="filter-from">From</label>
          <input id="filter-from" type="datetime-local" value={toLocalInput(draft.from)} onInput={(e) => setDraft({ ...draft, from: fromLocalInput(e.currentTarget.value) ?? '' })} />
        </div>
        <div class="field">
          <label for="filter-to">To</label>
          <input id="filter-to" type="datetime-local" value={toLocalInput(draft.to)} onInput={(e) => setDraft({ ...draft, to: fromLocalInput(e.currentTarget.value) ?? '' })} />
        </div>
        <div class="filter-actions">
          <button type="submit" class="button primary">
            Apply filters
          </button>
          <a class="button" href={href(['events'])}>
            Clear
          </a>
        </div>
      </form>
      {events.error && <ErrorBox error={events.error} retry={events.reload} />}
      {events.data && events.data.models.length === 0 && (
        <div class="empty">
          <p>No events match. Events show here once a delivery has been attempted.</p>
        </div>
      )}
      {events.data && events.data.models.length > 0 && (
        <table class="list" aria-busy={events.loading ? 'true' : undefined}>
          <caption class="visually-hidden">Events, newest first</caption>
          <thead>
            <tr>
              <th scope="col">Time</th>
              <th scope="col">Topic</th>
              <th scope="col">Event</th>
              <th scope="col">Destination</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {events.data.models.map((e) => (
              <tr key={`${e.id}\0${e.destination_id}`}>
                <td data-label="Time">{formatTime(e.time)}</td>
                <td data-label="Topic">{e.topic}</td>
                <td data-label="Event">
                  <a href={href(['events', e.id], { destination_id: e.destination_id })}>
                    <code>{e.id}</code>
                  </a>
                </td>
                <td data-label="Destination">{names.get(e.destination_id) ?? e.destination_id}</td>
                <td data-label="Status">
                  <EventStatus status={e.status} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {events.data && (events.data.pagination.prev || events.data.pagination.next) && (
        <nav class="pager" aria-label="Event pages">
          <button type="button" class="button" disabled={!events.data.pagination.prev} onClick={() => page('prev', events.data!.pagination.prev)}>
            Newer
          </button>
          <button type="button" class="button" disabled={!events.data.pagination.next} onClick={() => page('next', events.data!.pagination.next)}>
            Older
          </button>
        </nav>
      )}
      {events.loading && !events.data && <p class="muted">Loading…</p>}
    </section>
  )
}
