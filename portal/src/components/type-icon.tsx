import type { DestinationType } from '../types.js'

/**
 * A destination type's icon. The SVG comes from the engine; as an <img> data URL nothing in it can run,
 * and the page's CSP allows data: images only. Dark mode inverts its strokes (they use currentColor).
 */
export function TypeIcon({ type, size = 24 }: { type: DestinationType | undefined; size?: number }) {
  if (!type?.icon) return <span class={`type-icon type-icon-${size}`} aria-hidden="true" />
  return <img class="type-icon" src={`data:image/svg+xml;charset=utf-8,${encodeURIComponent(type.icon)}`} width={size} height={size} alt="" />
}
