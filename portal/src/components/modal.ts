import { useLayoutEffect, useRef } from 'preact/hooks'

/**
 * A `<dialog>` shown modal while mounted. On unmount it closes and gives the focus back to where it
 * was (the dialog element is gone by then, so the browser's own restoring cannot be relied on). It opens
 * as it is put in the document (a layout effect), so the element it gives the focus back to is the one
 * that had it when the dialog was asked for, whatever runs after the next paint.
 *
 * @example
 * const dialog = useModal()
 * return <dialog ref={dialog}>…</dialog>
 */
export function useModal() {
  const dialog = useRef<HTMLDialogElement>(null)
  useLayoutEffect(() => {
    const opener = document.activeElement instanceof HTMLElement ? document.activeElement : null
    const element = dialog.current
    if (element && !element.open) element.showModal()
    return () => {
      if (element?.open) element.close()
      if (opener?.isConnected) opener.focus()
    }
  }, [])
  return dialog
}
