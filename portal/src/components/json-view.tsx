import type { Json } from '../types.js'

// A payload as a tree: objects and arrays fold (<details>, keyboard-operable), values are typed by colour.

function Value({ value }: { value: Json }) {
  if (value === null) return <span class="json-null">null</span>
  if (typeof value === 'string') return <span class="json-string">{JSON.stringify(value)}</span>
  if (typeof value === 'number') return <span class="json-number">{String(value)}</span>
  if (typeof value === 'boolean') return <span class="json-boolean">{String(value)}</span>
  return null
}

function Node({ name, value, depth }: { name?: string; value: Json; depth: number }) {
  const label = name !== undefined && <span class="json-key">{JSON.stringify(name)}: </span>
  if (value === null || typeof value !== 'object')
    return (
      <li>
        {label}
        <Value value={value} />
      </li>
    )
  const entries: [string | undefined, Json][] = Array.isArray(value) ? value.map((v) => [undefined, v]) : Object.entries(value)
  const [open, close] = Array.isArray(value) ? ['[', ']'] : ['{', '}']
  if (entries.length === 0)
    return (
      <li>
        {label}
        <span class="json-punct">{`${open}${close}`}</span>
      </li>
    )
  return (
    <li>
      <details open={depth < 3}>
        <summary>
          {label}
          <span class="json-punct">{open}</span>
          <span class="json-count"> {Array.isArray(value) ? `${entries.length} items` : `${entries.length} keys`} </span>
        </summary>
        <ul class="json-tree">
          {entries.map(([key, child], i) => (
            <Node key={key ?? i} name={key} value={child} depth={depth + 1} />
          ))}
        </ul>
        <span class="json-punct">{close}</span>
      </details>
    </li>
  )
}

export function JsonView({ value, label }: { value: Json; label: string }) {
  return (
    <div class="json-view" role="group" aria-label={label}>
      <ul class="json-tree json-root">
        <Node value={value} depth={0} />
      </ul>
    </div>
  )
}
