import { useEffect, useState } from 'preact/hooks'

// Messages after an action ("Destination disabled"), read out by screen readers (a live region).

interface Notice {
  id: number
  text: string
  kind: 'info' | 'error'
}

let next = 0
const listeners = new Set<(notice: Notice) => void>()

/** Show (and announce) a short message. */
export function announce(text: string, kind: Notice['kind'] = 'info'): void {
  const notice = { id: ++next, text, kind }
  for (const listener of listeners) listener(notice)
}

export function Notices() {
  const [notices, setNotices] = useState<Notice[]>([])
  useEffect(() => {
    const add = (notice: Notice) => {
      setNotices((list) => [...list.slice(-2), notice])
      setTimeout(() => setNotices((list) => list.filter((n) => n.id !== notice.id)), 6000)
    }
    listeners.add(add)
    return () => void listeners.delete(add)
  }, [])
  return (
    <div class="notices" role="status" aria-live="polite">
      {notices.map((n) => (
        <p key={n.id} class={`notice notice-${n.kind}`}>
          {n.text}
        </p>
      ))}
    </div>
  )
}

/** An error shown in place of a page's content. */
export function ErrorBox({ error, retry }: { error: Error; retry?: () => void }) {
  return (
    <div class="error-box" role="alert">
      <p>{error.message}</p>
      {retry && (
        <button type="button" class="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  )
}
