import type { ComponentChildren } from 'preact'
import { useModal } from './modal.js'

/**
 * A modal confirmation (`<dialog>`: focus moves in and returns, Escape cancels).
 *
 * @example
 * {asking && <Confirm title="Delete destination?" action="Delete" onConfirm={remove} onCancel={() => setAsking(false)}>…</Confirm>}
 */
export function Confirm(props: { title: string; action: string; danger?: boolean; onConfirm: () => void; onCancel: () => void; children?: ComponentChildren }) {
  const dialog = useModal()
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
