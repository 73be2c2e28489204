import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

/**
 * A modal confirmation (`<dialog>`: focus moves in and returns, Escape cancels).
 *
 * @example
 * {asking && <Confirm title="Delete destination?" action="Delete" onConfirm={remove} onCancel={() => setAsking(false)}>…</Confirm>}
 */
export function Confirm(props: { title: string; action: string; danger?: boolean; onConfirm: () => void; onCancel: () => void; children?: ComponentChildren }) {
  const dialog = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const element = dialog.current
    if (element && !element.open) element.showModal()
    return () => element?.close()
  }, [])
  return (
    <dialog ref={dialog} class="dialog" aria-labelledby="confirm-title" onCancel={(e) => (e.preventDefault(), props.onCancel())}>
      <h2 id="confirm-title">{props.title}</h2>
      {props.children}
      <div class="actions">
        <button type="button" class="button" onClick={props.onCancel}>
          Cancel
        </button>
        <button type="button" class={props.danger ? 'button danger' : 'button primary'} onClick={props.onConfirm}>
          {props.action}
        </button>
      </div>
    </dialog>
  )
}
