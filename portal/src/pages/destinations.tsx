import { useState } from 'preact/hooks'
import { api, tenantPath } from '../api.js'
import { announce, ErrorBox } from '../components/notice.js'
import { TypeIcon } from '../components/type-icon.js'
import { destinationName, destinationTypes, listDestinations, successRates, typeOf, type SuccessRate } from '../data.js'
import { formatPercent } from '../format.js'
import { href } from '../router.js'
import type { Destination } from '../types.js'
import { useLoad } from '../use-load.js'
import { PageTitle } from './page-title.js'

export function StatusBadge({ destination }: { destination: Destination }) {
  return destination.disabled_at ? <span class="badge badge-off">Disabled</span> : <span class="badge badge-on">Enabled</span>
}

function Rate({ rate }: { rate: SuccessRate | undefined }) {
  if (!rate || rate.attempts === 0) return <span class="muted">No deliveries</span>
  const ratio = rate.successful / rate.attempts
  return (
    <span class={ratio < 0.9 ? 'rate rate-bad' : 'rate'}>
      {formatPercent(ratio)} <span class="muted">of {rate.attempts}</span>
    </span>
  )
}

/** Enable or disable a destination (PUT …/enable, …/disable); resolves to the updated destination. */
export async function toggleDestination(destination: Destination): Promise<Destination> {
  const action = destination.disabled_at ? 'enable' : 'disable'
  const updated = await api<Destination>('PUT', tenantPath(`/destinations/${encodeURIComponent(destination.id)}/${action}`))
  announce(`${destinationName(updated)} ${updated.disabled_at ? 'disabled' : 'enabled'}`)
  return updated
}

export function DestinationsPage() {
  const destinations = useLoad(listDestinations, [])
  const types = useLoad(destinationTypes, [])
  const rates = useLoad(() => successRates(24).catch(() => new Map<string, SuccessRate>()), [])
  const [busy, setBusy] = useState<string>()

  const toggle = async (destination: Destination) => {
    setBusy(destination.id)
    try {
      await toggleDestination(destination)
      destinations.reload()
    } catch (error) {
      announce((error as Error).message, 'error')
    } finally {
      setBusy(undefined)
    }
  }

  return (
    <section aria-labelledby="page-title">
      <div class="page-head">
        <PageTitle>Destinations</PageTitle>
        <a class="button primary" href={href(['destinations', 'new'])}>
          New destination
        </a>
      </div>
      <p class="lead">Where your events are delivered. Success rates cover the last 24 hours.</p>
      {destinations.error && <ErrorBox error={destinations.error} retry={destinations.reload} />}
      {destinations.data && destinations.data.length === 0 && (
        <div class="empty">
          <p>No destinations yet. Create one to start receiving events.</p>
        </div>
      )}
      {destinations.data && destinations.data.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Destinations</caption>
          <thead>
            <tr>
              <th scope="col">Destination</th>
              <th scope="col">Topics</th>
              <th scope="col">Status</th>
              <th scope="col">Success rate</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {destinations.data.map((d) => {
              const type = typeOf(types.data, d.type)
              return (
                <tr key={d.id}>
                  <td data-label="Destination">
                    <div class="with-icon">
                      <TypeIcon type={type} />
                      <div>
                        <a href={href(['destinations', d.id])} class="strong">
                          {destinationName(d)}
                        </a>
                        <div class="muted small">
                          {type?.label ?? d.type} · <code>{d.id}</code>
                        </div>
                      </div>
                    </div>
                  </td>
                  <td data-label="Topics">{d.topics.join(', ')}</td>
                  <td data-label="Status">
                    <StatusBadge destination={d} />
                  </td>
                  <td data-label="Success rate">
                    <Rate rate={rates.data?.get(d.id)} />
                  </td>
                  <td class="row-actions">
                    <button type="button" class="button small" disabled={busy === d.id} onClick={() => toggle(d)} aria-label={`${d.disabled_at ? 'Enable' : 'Disable'} ${destinationName(d)}`}>
                      {d.disabled_at ? 'Enable' : 'Disable'}
                    </button>
                  </td>
                </tr>
              )
            })}
          </tbody>
        </table>
      )}
      {destinations.loading && !destinations.data && <p class="muted">Loading…</p>}
    </section>
  )
}
