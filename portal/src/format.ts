// How times, numbers and ids read on the page.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' })

export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '—'
  const time = new Date(iso)
  return Number.isNaN(time.getTime()) ? iso : dateTime.format(time)
}

export function formatPercent(ratio: number): string {
  return `${(ratio * 100).toFixed(ratio === 0 || ratio === 1 ? 0 : 1)}%`
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms === null || ms === undefined) return '—'
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`
}

/** An ISO time as the value of `<input type="datetime-local">` (local time, minutes). */
export function toLocalInput(iso: string | null | undefined): string {
  if (!iso) return ''
  const time = new Date(iso)
  if (Number.isNaN(time.getTime())) return ''
  const local = new Date(time.getTime() - time.getTimezoneOffset() * 60_000)
  return local.toISOString().slice(0, 16)
}

/** The value of `<input type="datetime-local">` as an ISO time, or undefined when empty. */
export function fromLocalInput(value: string): string | undefined {
  if (!value) return undefined
  const time = new Date(value)
  return Number.isNaN(time.getTime()) ? undefined : time.toISOString()
}

/** A byte count as people read it: `512 bytes`, `256 KiB`, `1.5 MiB`. */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`
  const [value, unit] = bytes < 1024 ** 2 ? [bytes / 1024, 'KiB'] : bytes < 1024 ** 3 ? [bytes / 1024 ** 2, 'MiB'] : [bytes / 1024 ** 3, 'GiB']
  return `${Number(value.toFixed(1))} ${unit}`
}
