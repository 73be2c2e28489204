import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

/** A page's h1; it takes the focus when the page opens, so screen readers start there after navigation. */
export function PageTitle({ children }: { children: ComponentChildren }) {
  const heading = useRef<HTMLHeadingElement>(null)
  useEffect(() => {
    heading.current?.focus({ preventScroll: true })
  }, [])
  return (
    <h1 id="page-title" tabIndex={-1} ref={heading}>
      {children}
    </h1>
  )
}
