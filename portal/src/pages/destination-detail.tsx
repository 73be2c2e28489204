import { useEffect, useState } from 'preact/hooks'
import { api, ApiError, replaySupported, tenantPath } from '../api.js'
import { DeliveryChart } from '../components/chart.js'
import { Confirm } from '../components/confirm.js'
import { copyText } from '../components/copy.js'
import { announce, ErrorBox } from '../components/notice.js'
import { TypeIcon } from '../components/type-icon.js'
import { deliverySeries, destinationName, destinationTypes, ranges, typeOf } from '../data.js'
import { formatBytes, formatTime } from '../format.js'
import { href, navigate } from '../router.js'
import type { Destination, DestinationType, FieldSpec, Json } from '../types.js'
import { useLoad } from '../use-load.js'
import { StatusBadge, toggleDestination } from './destinations.js'
import { PageTitle } from './page-title.js'
import { ReplayForm } from './replay.js'
import { ReceiverTrust } from './receiver-trust.js'

function show(value: Json | undefined): string {
  if (value === undefined || value === null || value === '') return '—'
  return typeof value === 'string' ? value : JSON.stringify(value)
}

/** The webhook signing secret: hidden until asked for, with a copy button. */
function Secret({ label, value }: { label: string; value: string }) {
  const [shown, setShown] = useState(false)
  return (
    <div class="secret">
      <code class="secret-value" aria-label={label}>
        {shown ? value : `${value.slice(0, 6)}${'•'.repeat(16)}`}
      </code>
      <button type="button" class="button small" aria-pressed={shown} onClick={() => setShown(!shown)}>
        {shown ? 'Hide' : 'Reveal'}
      </button>
      <button type="button" class="button small" onClick={() => copyText(value, label)}>
        Copy
      </button>
    </div>
  )
}

/** How the destination receives an event's data (see docs/delivery.md › Thin payloads). */
function payloadText(payload: Destination['payload']): string {
  if (payload === 'thin') return 'Thin: an envelope with a signed link to the data'
  if (payload === 'full') return 'Full: the data itself'
  if (payload) return `Thin above ${formatBytes(payload.thin_above_bytes)}, the data itself below`
  return "Default: the data itself (queues go thin above their broker's limit)"
}

/** How the destination's deliveries are grouped: one event per request, or batches (src/model/batch-policy.ts). */
function batchText(destination: Destination): string {
  const batch = destination.batch
  if (!batch) return 'Off: one event per request'
  const bytes = batch.max_bytes === undefined ? '1 MiB' : formatBytes(batch.max_bytes)
  const format = destination.type !== 'webhook' ? '' : batch.format === 'json' ? '; as a JSON array' : '; as a CloudEvents batch'
  return `Up to ${batch.max_events} ${batch.max_events === 1 ? 'event' : 'events'} and ${bytes} per request, waiting at most ${batch.max_wait_ms ?? 1000} ms${format}`
}

function Settings({ destination, type }: { destination: Destination; type: DestinationType | undefined }) {
  const fields = (specs: FieldSpec[] | undefined, values: Record<string, Json> | undefined) => {
    const known = specs ?? []
    const extra = Object.keys(values ?? {}).filter((k) => !known.some((f) => f.key === k))
    return [...known.filter((f) => values?.[f.key] !== undefined).map((f) => [f.label, f.key, f.sensitive] as const), ...extra.map((k) => [k, k, false] as const)]
  }
  const credentials = destination.credentials as Record<string, Json>
  return (
    <dl class="settings">
      <dt>ID</dt>
      <dd>
        <code>{destination.id}</code>
      </dd>
      <dt>Topics</dt>
      <dd>{destination.topics.join(', ')}</dd>
      {fields(type?.config_fields, destination.config).map(([label, key]) => (
        <>
          <dt>{label}</dt>
          <dd class="break">{show(destination.config?.[key])}</dd>
        </>
      ))}
      {fields(type?.credential_fields, credentials).map(([label, key]) => (
        <>
          <dt>{label}</dt>
          <dd class="break">
            {destination.type === 'webhook' && (key === 'secret' || key === 'previous_secret') && typeof credentials[key] === 'string' ? (
              <Secret label={label} value={credentials[key] as string} />
            ) : key === 'previous_secret_invalid_at' ? (
              formatTime(show(credentials[key]))
            ) : (
              <code>{show(credentials[key])}</code>
            )}
          </dd>
        </>
      ))}
      <dt>Payload</dt>
      <dd>{payloadText(destination.payload)}</dd>
      <dt>Batching</dt>
      <dd>{batchText(destination)}</dd>
      <dt>Created</dt>
      <dd>{formatTime(destination.created_at)}</dd>
      <dt>Updated</dt>
      <dd>{formatTime(destination.updated_at)}</dd>
      {destination.disabled_at && (
        <>
          <dt>Disabled</dt>
          <dd>{formatTime(destination.disabled_at)}</dd>
        </>
      )}
    </dl>
  )
}

function Activity({ id }: { id: string }) {
  const range = ranges[1]!
  const series = useLoad(() => deliverySeries(range, id), [id])
  if (series.error) return <ErrorBox error={series.error} retry={series.reload} />
  if (!series.data) return <p class="muted">Loading…</p>
  const points = series.data.get(id)
  if (!points) return <p class="muted">No deliveries in the last 24 hours.</p>
  return <DeliveryChart title={`Deliveries, ${range.label.toLowerCase()}`} points={points} />
}

/** Edit, enable/disable, rotate, replay and delete, with their confirmations. */
function Actions({ destination, reload }: { destination: Destination; reload: () => void }) {
  const [asking, setAsking] = useState<'delete' | 'rotate' | 'replay'>()
  const [busy, setBusy] = useState(false)
  const [canReplay, setCanReplay] = useState(false)
  useEffect(() => void replaySupported().then(setCanReplay), [])
  const path = tenantPath(`/destinations/${encodeURIComponent(destination.id)}`)
  const act = async (work: () => Promise<unknown>) => {
    setBusy(true)
    try {
      await work()
    } catch (error) {
      announce((error as Error).message, 'error')
    } finally {
      setBusy(false)
      setAsking(undefined)
    }
  }
  const remove = () =>
    act(async () => {
      await api('DELETE', path)
      announce(`${destinationName(destination)} deleted`)
      navigate([])
    })
  const rotate = () =>
    act(async () => {
      await api<Destination>('PATCH', path, { credentials: { rotate_secret: true } })
      announce('Signing secret rotated: the previous secret keeps signing for 24 hours')
      reload()
    })
  const button = (label: string, onClick: () => void, danger = false) => (
    <button type="button" class={danger ? 'button danger' : 'button'} disabled={busy} onClick={onClick}>
      {label}
    </button>
  )
  return (
    <div class="actions">
      <a class="button" href={href(['destinations', destination.id, 'edit'])}>
        Edit
      </a>
      {button(destination.disabled_at ? 'Enable' : 'Disable', () => act(async () => (await toggleDestination(destination), reload())))}
      {destination.type === 'webhook' && button('Rotate secret', () => setAsking('rotate'))}
      {canReplay && button('Replay events', () => setAsking('replay'))}
      {button('Delete', () => setAsking('delete'), true)}
      {asking === 'delete' && (
        <Confirm title="Delete this destination?" action="Delete destination" danger onConfirm={remove} onCancel={() => setAsking(undefined)}>
          <p>
            <strong>{destinationName(destination)}</strong> stops receiving events and its pending deliveries are cancelled. This cannot be undone.
          </p>
        </Confirm>
      )}
      {asking === 'rotate' && (
        <Confirm title="Rotate the signing secret?" action="Rotate secret" onConfirm={rotate} onCancel={() => setAsking(undefined)}>
          <p>A new secret is generated. The current one keeps signing deliveries (as a second signature) for 24 hours while you deploy the new one.</p>
        </Confirm>
      )}
      {asking === 'replay' && <ReplayForm destination={destination} onDone={() => setAsking(undefined)} />}
    </div>
  )
}

export function DestinationPage({ id }: { id: string }) {
  const loaded = useLoad(async () => {
    const [destination, types] = await Promise.all([api<Destination>('GET', tenantPath(`/destinations/${encodeURIComponent(id)}`)), destinationTypes()])
    return { destination, type: typeOf(types, destination.type) }
  }, [id])
  if (loaded.error)
    return (
      <section aria-labelledby="page-title">
        <PageTitle>Destination</PageTitle>
        <ErrorBox error={loaded.error instanceof ApiError && loaded.error.status === 404 ? new Error(`No destination ${id} here.`) : loaded.error} />
        <p>
          <a href={href([])}>Back to destinations</a>
        </p>
      </section>
    )
  if (!loaded.data) return <p class="muted">Loading…</p>
  const { destination, type } = loaded.data
  return (
    <section aria-labelledby="page-title">
      <p class="breadcrumb">
        <a href={href([])}>Destinations</a>
      </p>
      <div class="page-head">
        <div class="with-icon">
          <TypeIcon type={type} size={32} />
          <div>
            <PageTitle>{destinationName(destination)}</PageTitle>
            <p class="muted">
              {type?.label ?? destination.type} · <StatusBadge destination={destination} />
            </p>
          </div>
        </div>
        <Actions destination={destination} reload={loaded.reload} />
      </div>
      <div class="columns">
        <div>
          <h2>Settings</h2>
          <Settings destination={destination} type={type} />
        </div>
        <div>
          <h2>Activity</h2>
          <Activity id={destination.id} />
          <p>
            <a href={href(['events'], { destination_id: destination.id })}>Events of this destination</a>
          </p>
          {destination.type === 'webhook' && <ReceiverTrust destination={destination} />}
        </div>
      </div>
    </section>
  )
}
