import { useState } from 'preact/hooks'
import { api, ApiError, tenantPath } from '../api.js'
import { Confirm } from '../components/confirm.js'
import { JsonView } from '../components/json-view.js'
import { announce, ErrorBox } from '../components/notice.js'
import { destinationName, listDestinations } from '../data.js'
import { formatDuration, formatTime } from '../format.js'
import { href } from '../router.js'
import type { Attempt, OutflowEvent } from '../types.js'
import { useLoad } from '../use-load.js'
import { EventStatus } from './events.js'
import { PageTitle } from './page-title.js'

const excerptLength = 300

function ResponseBody({ attempt }: { attempt: Attempt }) {
  const body = attempt.response_body ?? attempt.error ?? ''
  if (!body) return <span class="muted">—</span>
  if (body.length <= excerptLength) return <code class="excerpt">{body}</code>
  return (
    <details>
      <summary>
        <code class="excerpt">{body.slice(0, excerptLength)}…</code>
      </summary>
      <pre tabIndex={0}>{body}</pre>
    </details>
  )
}

function Attempts({ attempts, names }: { attempts: Attempt[]; names: Map<string, string> }) {
  return (
    <table class="list attempts">
      <caption class="visually-hidden">Delivery attempts, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Time</th>
          <th scope="col">Destination</th>
          <th scope="col">Attempt</th>
          <th scope="col">Result</th>
          <th scope="col">Status code</th>
          <th scope="col">Duration</th>
          <th scope="col">Response</th>
        </tr>
      </thead>
      <tbody>
        {attempts.map((a) => (
          <tr key={a.id}>
            <td data-label="Time">{formatTime(a.delivered_at)}</td>
            <td data-label="Destination">{names.get(a.destination_id) ?? a.destination_id}</td>
            <td data-label="Attempt">
              {a.attempt_number ?? '—'}
              {a.manual && <span class="muted"> (manual)</span>}
            </td>
            <td data-label="Result">
              <EventStatus status={a.status} />
            </td>
            <td data-label="Status code">{a.response_status_code ?? (a.error_kind ? <code>{a.error_kind}</code> : '—')}</td>
            <td data-label="Duration">{formatDuration(a.duration_ms)}</td>
            <td data-label="Response" class="break">
              <ResponseBody attempt={a} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  )
}

export function EventPage({ id, destinationId }: { id: string; destinationId: string | null }) {
  const eventPath = tenantPath(`/events/${encodeURIComponent(id)}`)
  const loaded = useLoad(async () => {
    const [event, attempts] = await Promise.all([
      api<OutflowEvent>('GET', `${eventPath}${destinationId ? `?destination_id=${encodeURIComponent(destinationId)}` : ''}`),
      api<Attempt[]>('GET', `${eventPath}/deliveries`),
    ])
    return { event, attempts }
  }, [id, destinationId])
  const destinations = useLoad(listDestinations, [])
  const [retrying, setRetrying] = useState(false)
  const [erasing, setErasing] = useState<'asking' | 'busy' | null>(null)

  if (loaded.error)
    return (
      <section aria-labelledby="page-title">
        <PageTitle>Event</PageTitle>
        <ErrorBox error={loaded.error instanceof ApiError && loaded.error.status === 404 ? new Error(`No event ${id} here.`) : loaded.error} />
        <p>
          <a href={href(['events'])}>Back to events</a>
        </p>
      </section>
    )
  if (!loaded.data) return <p class="muted">Loading…</p>
  const { event, attempts } = loaded.data
  const names = new Map(destinations.data?.map((d) => [d.id, destinationName(d)]))
  const others = [...new Set(attempts.map((a) => a.destination_id))].filter((d) => d !== event.destination_id)

  const retry = async () => {
    setRetrying(true)
    try {
      await api('POST', tenantPath(`/destinations/${encodeURIComponent(event.destination_id)}/events/${encodeURIComponent(event.id)}/retry`))
      announce('Retry queued: the new attempt shows below in a moment')
      // The attempt runs within moments; look again a few times.
      for (const wait of [500, 1000, 2000]) setTimeout(loaded.reload, wait)
    } catch (error) {
      announce((error as Error).message, 'error')
    } finally {
      setRetrying(false)
    }
  }

  const erase = async () => {
    setErasing('busy')
    try {
      await api('POST', tenantPath('/events/expunge'), { ids: [event.id] })
      announce('Event erased: its payload and response bodies are gone')
      loaded.reload()
    } catch (error) {
      announce((error as Error).message, 'error')
    } finally {
      setErasing(null)
    }
  }

  return (
    <section aria-labelledby="page-title">
      <p class="breadcrumb">
        <a href={href(['events'])}>Events</a>
      </p>
      <div class="page-head">
        <div>
          <PageTitle>
            Event <code>{event.id}</code>
          </PageTitle>
          <p class="muted">
            {event.topic} · <EventStatus status={event.status} />
          </p>
        </div>
        <div class="actions">
          {!event.expunged_at && (
            <>
              <button type="button" class={event.status === 'failed' ? 'button primary' : 'button'} disabled={retrying} onClick={retry}>
                {event.status === 'failed' ? 'Retry delivery' : 'Send again'}
              </button>
              <button type="button" class="button danger" disabled={erasing !== null} onClick={() => setErasing('asking')}>
                Erase payload
              </button>
            </>
          )}
          <button type="button" class="button" onClick={loaded.reload}>
            Refresh
          </button>
        </div>
      </div>
      {erasing === 'asking' && (
        <Confirm title="Erase this event's payload?" action="Erase" danger onConfirm={erase} onCancel={() => setErasing(null)}>
          <p>
            The payload and the receivers' response bodies are removed for good, and deliveries still pending are cancelled. The log keeps the id,
            topic, times and status codes.
          </p>
        </Confirm>
      )}
      {event.expunged_at && (
        <p class="erased">
          Erased {formatTime(event.expunged_at)}: the payload and the response bodies were removed, and deliveries still pending were cancelled. It is never
          sent again.
        </p>
      )}
      <dl class="settings">
        <dt>Destination</dt>
        <dd>
          <a href={href(['destinations', event.destination_id])}>{names.get(event.destination_id) ?? event.destination_id}</a>
        </dd>
        <dt>Time</dt>
        <dd>{formatTime(event.time)}</dd>
        <dt>Delivered</dt>
        <dd>{formatTime(event.successful_at)}</dd>
        {Object.entries(event.metadata).map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd class="break">{v}</dd>
          </>
        ))}
        {others.length > 0 && (
          <>
            <dt>Also sent to</dt>
            <dd>
              {others.map((d, i) => (
                <>
                  {i > 0 && ', '}
                  <a href={href(['events', event.id], { destination_id: d })}>{names.get(d) ?? d}</a>
                </>
              ))}
            </dd>
          </>
        )}
      </dl>
      <h2>Payload</h2>
      {event.expunged_at ? <p class="muted">Erased.</p> : <JsonView value={event.data} label="Event payload" />}
      <h2>Attempts</h2>
      <Attempts attempts={attempts} names={names} />
    </section>
  )
}
