import type { Json, JsonSchema } from '../types.js'

// A topic's JSON Schema as a readable tree of fields: name, type, required, description, allowed values;
// objects and arrays of objects nest. References into the schema's own `$defs` are followed (a few levels).

const maxDepth = 8

function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  const match = schema.$ref && /^#\/\$defs\/(.+)$/.exec(schema.$ref)
  return (match && root.$defs?.[decodeURIComponent(match[1]!)]) || (schema.$ref === '#' ? root : schema)
}

/** `string (date-time)`, `array of object`, `"EUR" | "USD"`, `integer ≥ 1`. */
function typeLabel(schema: JsonSchema, root: JsonSchema): string {
  const s = resolve(schema, root)
  if (s.const !== undefined) return JSON.stringify(s.const)
  if (s.enum) return s.enum.map((v: Json) => JSON.stringify(v)).join(' | ')
  const variants = s.anyOf ?? s.oneOf
  if (variants) return variants.map((v) => typeLabel(v, root)).join(' or ')
  const type = Array.isArray(s.type) ? s.type.join(' or ') : (s.type ?? (s.properties ? 'object' : 'any'))
  if (type === 'array') return `array of ${s.items ? typeLabel(s.items, root) : 'any'}`
  const bounds = [s.minimum !== undefined && `≥ ${s.minimum}`, s.maximum !== undefined && `≤ ${s.maximum}`].filter(Boolean).join(', ')
  return `${type}${s.format ? ` (${s.format})` : ''}${bounds ? ` ${bounds}` : ''}`
}

/** The object schema whose fields nest under a field: its own, or its array items'. */
function nested(schema: JsonSchema, root: JsonSchema): JsonSchema | undefined {
  const s = resolve(schema, root)
  if (s.properties) return s
  const items = s.items && resolve(s.items, root)
  return items?.properties ? items : undefined
}

function Fields({ schema, root, depth }: { schema: JsonSchema; root: JsonSchema; depth: number }) {
  const required = new Set(schema.required ?? [])
  return (
    <ul class="schema-fields">
      {Object.entries(schema.properties ?? {}).map(([name, field]) => {
        const inner = depth < maxDepth ? nested(field, root) : undefined
        const description = resolve(field, root).description
        return (
          <li key={name}>
            <code class="schema-name">{name}</code> <span class="schema-type">{typeLabel(field, root)}</span>{' '}
            {required.has(name) ? <span class="badge badge-on">required</span> : <span class="schema-optional">optional</span>}
            {description && <p class="schema-desc">{description}</p>}
            {inner && <Fields schema={inner} root={root} depth={depth + 1} />}
          </li>
        )
      })}
    </ul>
  )
}

export function SchemaTree({ schema, label }: { schema: JsonSchema; label: string }) {
  const root = resolve(schema, schema)
  return (
    <div class="schema-tree" role="group" aria-label={label}>
      {root.properties ? <Fields schema={root} root={schema} depth={0} /> : <p class="schema-type">{typeLabel(root, schema)}</p>}
    </div>
  )
}
