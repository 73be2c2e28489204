import { useState } from 'preact/hooks'
import { api, tenantPath } from '../api.js'
import { useModal } from '../components/modal.js'
import { announce } from '../components/notice.js'
import { fromLocalInput, toLocalInput } from '../format.js'
import type { Destination } from '../types.js'

// Replay by range (the recovery feature): shown only when the engine's OpenAPI document has the route.

interface ReplayJob {
  id: string
  status: string
  matched?: number
  done?: number
  failed?: number
}

export function ReplayForm({ destination, onDone }: { destination: Destination; onDone: () => void }) {
  const dialog = useModal()
  const [since, setSince] = useState(toLocalInput(new Date(Date.now() - 86_400_000).toISOString()))
  const [until, setUntil] = useState('')
  const [status, setStatus] = useState('failed')
  const [job, setJob] = useState<ReplayJob>()
  const [problem, setProblem] = useState<string>()

  const submit = async (event: Event) => {
    event.preventDefault()
    setProblem(undefined)
    try {
      const body: Record<string, string> = { since: fromLocalInput(since) ?? '', status }
      const end = fromLocalInput(until)
      if (end) body.until = end
      const started = await api<ReplayJob>('POST', tenantPath(`/destinations/${encodeURIComponent(destination.id)}/replay`), body)
      setJob(started)
      announce(`Replay started: ${started.matched ?? 0} events`)
    } catch (error) {
      setProblem((error as Error).message)
    }
  }

  return (
    <dialog ref={dialog} class="dialog" aria-labelledby="replay-title" onCancel={(e) => (e.preventDefault(), onDone())}>
      <h2 id="replay-title">Replay events</h2>
      {job ? (
        <p role="status">
          Replay {job.id}: {job.status}, {job.done ?? 0} of {job.matched ?? 0} done{job.failed ? `, ${job.failed} failed` : ''}.
        </p>
      ) : (
        <form onSubmit={submit} noValidate>
          <p>Send the events of a time range to this destination again, with their original ids.</p>
          <div class="field">
            <label for="replay-since">From</label>
            <input id="replay-since" type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} required />
          </div>
          <div class="field">
            <label for="replay-until">Until (empty: now)</label>
            <input id="replay-until" type="datetime-local" value={until} onInput={(e) => setUntil(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="replay-status">Events</label>
            <select id="replay-status" value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="failed">Failed deliveries</option>
              <option value="skipped">Skipped while disabled</option>
              <option value="success">Successful deliveries</option>
              <option value="all">All</option>
            </select>
          </div>
          {problem && (
            <p class="field-error" role="alert">
              {problem}
            </p>
          )}
          <div class="actions">
            <button type="button" class="button" onClick={onDone}>
              Cancel
            </button>
            <button type="submit" class="button primary">
              Replay
            </button>
          </div>
        </form>
      )}
      {job && (
        <div class="actions">
          <button type="button" class="button" onClick={onDone}>
            Close
          </button>
        </div>
      )}
    </dialog>
  )
}
