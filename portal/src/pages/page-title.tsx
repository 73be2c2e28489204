import type { ComponentChildren } from 'preact'
import { useLayoutEffect, useRef } from 'preact/hooks'

/**
 * A page's h1; it takes the focus when the page opens, so screen readers start there after navigation.
 * It does so as the page is put in the document (a layout effect), not after the next paint: a click or
 * key that lands in between would otherwise have its focus taken away (a dialog opened from it gave the
 * focus back to this heading instead of to its button).
 */
export function PageTitle({ children }: { children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null)
  useLayoutEffect(() => {
    heading.current?.focus({ preventScroll: true })
  }, [])
  return (
    <h1 id="page-title" tabIndex={-1} ref={heading}>
      {children}
    </h1>
  )
}
